// The integrator console (README, Integrator console). Every action is a call to the public API with the signed-in
// user's token, which lives in this tab's sessionStorage: never in a URL, never in localStorage.
"use strict";

const TOKEN = "payments-console-token";
const $ = (id) => document.getElementById(id);
const text = (tag, value, className) => {
  const el = document.createElement(tag);
  el.textContent = value ?? "";
  if (className) el.className = className;
  return el;
};
const button = (label, onClick) => {
  const b = text("button", label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
};

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${sessionStorage.getItem(TOKEN) ?? ""}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = await res.json().catch(() => null);
  if (res.status === 401 && path !== "/api/v1/sign_in") signOut();
  if (!res.ok) throw new Error(describeErrors(payload?.errors) || `HTTP ${res.status}`);
  return payload;
}

function describeErrors(errors) {
  if (!errors) return "";
  if (errors.detail) return errors.detail;
  return Object.entries(errors).map(([field, messages]) => `${field} ${[].concat(messages).join(", ")}`).join("; ");
}

function notice(message, isError = false) {
  const el = $("notice");
  el.textContent = message;
  el.className = isError ? "error" : "";
}

const run = (action) => async (event) => {
  event?.preventDefault?.();
  try {
    await action(event);
  } catch (err) {
    notice(err.message, true);
  }
};

// --- sign-in
function showApp(signedIn) {
  $("sign-in").hidden = signedIn;
  $("app").hidden = !signedIn;
  if (signedIn) refreshAll();
}

function signOut() {
  sessionStorage.removeItem(TOKEN);
  showApp(false);
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("sign-in-error").textContent = "";
  try {
    const { jwt } = await api("POST", "/api/v1/sign_in", {
      user: { username: $("username").value, password: $("password").value },
    });
    sessionStorage.setItem(TOKEN, jwt);
    $("password").value = "";
    showApp(true);
  } catch (err) {
    $("sign-in-error").textContent = err.message;
  }
});
$("sign-out").addEventListener("click", signOut);

// --- endpoints
const ENDPOINTS = "/api/v2/notifications/endpoints";
let endpoints = [];

async function loadEndpoints() {
  endpoints = (await api("GET", ENDPOINTS)).data;
  const rows = $("endpoint-rows");
  rows.replaceChildren(...endpoints.map((e) => {
    const tr = document.createElement("tr");
    tr.dataset.id = e.id;
    const actions = document.createElement("td");
    actions.append(
      button("Edit", () => editEndpoint(e)),
      button(
        "Send test event",
        run(async () => {
          await api("POST", `${ENDPOINTS}/${e.id}/test`, { type: "identified" });
          notice("Test event queued");
          await loadDeliveries();
        }),
      ),
      button(
        "Rotate secret",
        run(async () => {
          const { data } = await api("POST", `${ENDPOINTS}/${e.id}/rotate_secret`);
          showSecret(data.secret);
        }),
      ),
      e.status === "active"
        ? button(
          "Disable",
          run(async () => {
            await api("DELETE", `${ENDPOINTS}/${e.id}`);
            await loadEndpoints();
          }),
        )
        : button(
          "Enable",
          run(async () => {
            await api("POST", `${ENDPOINTS}/${e.id}/enable`);
            await loadEndpoints();
          }),
        ),
    );
    tr.append(text("td", e.url), text("td", e.delivery_mode), text("td", e.status, e.status), actions);
    return tr;
  }));
  for (const select of [$("recover-endpoint"), $("filter-endpoint")]) {
    const keep = select.id === "filter-endpoint" ? [select.options[0]] : [];
    const chosen = select.value;
    select.replaceChildren(
      ...keep,
      ...endpoints.map((e) => {
        const option = text("option", e.url);
        option.value = e.id;
        return option;
      }),
    );
    if (chosen && endpoints.some((e) => e.id === chosen)) select.value = chosen;
  }
}

function showSecret(secret) {
  const el = $("endpoint-secret");
  el.hidden = false;
  el.textContent = `Signing secret (shown once, copy it now): ${secret}`;
}

function editEndpoint(e) {
  $("endpoint-id").value = e.id;
  $("endpoint-url").value = e.url;
  $("endpoint-mode").value = e.delivery_mode;
  $("endpoint-events").value = e.enabled_events.join(",");
  $("endpoint-save").textContent = "Save endpoint";
  $("endpoint-url").focus();
}

$("endpoint-form").addEventListener("reset", () => {
  $("endpoint-id").value = "";
  $("endpoint-save").textContent = "Create endpoint";
});
$("endpoint-form").addEventListener(
  "submit",
  run(async () => {
    const id = $("endpoint-id").value;
    const body = {
      url: $("endpoint-url").value,
      delivery_mode: $("endpoint-mode").value,
      enabled_events: $("endpoint-events").value.split(",").map((t) => t.trim()).filter(Boolean),
    };
    const { data } = id ? await api("PUT", `${ENDPOINTS}/${id}`, body) : await api("POST", ENDPOINTS, body);
    if (!id) showSecret(data.secret);
    notice(id ? "Endpoint saved" : "Endpoint created");
    $("endpoint-form").reset();
    await loadEndpoints();
  }),
);
$("recover-form").addEventListener(
  "submit",
  run(async () => {
    const since = new Date(`${$("recover-since").value}Z`).toISOString();
    const { data } = await api("POST", `${ENDPOINTS}/${$("recover-endpoint").value}/recover`, { since });
    notice(`Recovered: ${JSON.stringify(data)}`);
    await loadDeliveries();
  }),
);

// --- deliveries
const EVENTS = "/api/v2/notifications/events";
let lastId = null;

function filterQuery() {
  const q = new URLSearchParams({ per_page: "20" });
  for (const [name, id] of [["status", "filter-status"], ["type", "filter-type"], ["endpoint_id", "filter-endpoint"]]) {
    if ($(id).value) q.set(name, $(id).value);
  }
  if ($("filter-from").value) q.set("from", `${$("filter-from").value}Z`);
  return q;
}

async function loadDeliveries(more = false) {
  const q = filterQuery();
  if (more && lastId) q.set("last_id", lastId);
  const { data } = await api("GET", `${EVENTS}?${q}`);
  const rows = data.map((d) => {
    const tr = document.createElement("tr");
    tr.dataset.id = d.id;
    const open = button(
      new Date(d.inserted_at).toISOString().replace("T", " ").slice(0, 19),
      run(() => showDelivery(d.id)),
    );
    const when = document.createElement("td");
    when.append(open);
    const endpoint = endpoints.find((e) => e.id === d.endpoint_id);
    tr.append(when, text("td", d.type), text("td", d.status, d.status), text("td", endpoint?.url ?? d.endpoint_id));
    return tr;
  });
  if (more) $("delivery-rows").append(...rows);
  else $("delivery-rows").replaceChildren(...rows);
  lastId = data.length ? data[data.length - 1].id : lastId;
  $("next-page").hidden = data.length < 20;
}

let shown = null;

async function showDelivery(id) {
  const { data } = await api("GET", `${EVENTS}/${id}`);
  shown = data;
  $("delivery").hidden = false;
  const facts = [["Id", data.id], ["Type", data.type], ["Status", data.status], ["Event", data.event_id]];
  $("delivery-facts").replaceChildren(...facts.flatMap(([k, v]) => [text("dt", k), text("dd", v)]));
  $("delivery-facts").dataset.status = data.status;
  $("attempt-rows").replaceChildren(...data.attempts.map((a) => {
    const tr = document.createElement("tr");
    const response = document.createElement("td");
    const headers = Object.entries(a.response_headers ?? {}).map(([k, v]) => `${k}: ${v}`).join("\n");
    response.append(text("pre", a.response_body), text("pre", headers, "headers"));
    tr.append(
      text("td", String(a.attempt_number)),
      text("td", new Date(a.inserted_at).toISOString().replace("T", " ").slice(0, 19)),
      text("td", String(a.http_status), a.http_status >= 200 && a.http_status < 300 ? "succeeded" : "failed"),
      text("td", a.duration_ms === null ? "" : `${a.duration_ms} ms`),
      response,
    );
    return tr;
  }));
  // keyboard and screen-reader users land on the delivery they opened
  $("delivery-title").focus();
}

/** A button of the delivery shown: one API call on it, then the delivery read again. */
const onShown = (id, method, action, message) =>
  $(id).addEventListener(
    "click",
    run(async () => {
      await api(method, `${EVENTS}/${shown.id}/${action}`);
      notice(message);
      await showDelivery(shown.id);
    }),
  );
onShown("delivery-retry", "POST", "retry", "Delivery queued again");
onShown("delivery-acknowledge", "PUT", "acknowledge", "Delivery acknowledged");
$("filters").addEventListener("submit", run(() => loadDeliveries()));
$("next-page").addEventListener("click", run(() => loadDeliveries(true)));

// --- chart: deliveries per hour by status over the last day (up to 10 pages of 100)
async function loadChart() {
  const since = new Date(Date.now() - 24 * 3600_000);
  const hours = Array.from({ length: 24 }, () => ({ succeeded: 0, failed: 0, pending: 0 }));
  let last = null;
  for (let page = 0; page < 10; page++) {
    const q = new URLSearchParams({ per_page: "100", from: since.toISOString() });
    if (last) q.set("last_id", last);
    const { data } = await api("GET", `${EVENTS}?${q}`);
    for (const d of data) {
      const hour = Math.min(23, Math.floor((Date.parse(d.inserted_at) - since.getTime()) / 3600_000));
      if (hour >= 0) hours[hour][d.status]++;
    }
    if (data.length < 100) break;
    last = data[data.length - 1].id;
  }
  const max = Math.max(1, ...hours.map((h) => h.succeeded + h.failed + h.pending));
  const svg = $("chart");
  const ns = "http://www.w3.org/2000/svg";
  svg.querySelectorAll("rect").forEach((r) => r.remove());
  hours.forEach((h, i) => {
    let y = 120;
    for (const status of ["succeeded", "failed", "pending"]) {
      const height = (h[status] / max) * 110;
      if (!height) continue;
      y -= height;
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", String(i * 20 + 2));
      rect.setAttribute("y", String(y));
      rect.setAttribute("width", "16");
      rect.setAttribute("height", String(height));
      rect.setAttribute("class", status);
      svg.append(rect);
    }
  });
}

async function refreshAll() {
  try {
    await loadEndpoints();
    await loadDeliveries();
    await loadChart();
  } catch (err) {
    notice(err.message, true);
  }
}

showApp(Boolean(sessionStorage.getItem(TOKEN)));
