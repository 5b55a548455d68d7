// The integrator console (README, Integrator console). Every action is a call to the public API with the signed-in
// user's token, which lives in this tab's sessionStorage: never in a URL, never in localStorage. A module: it imports
// the chart's hourly buckets (chart.js), which a unit test reads without a browser.
import { countByHour, hourBuckets } from "./chart.js";

const TOKEN = "payments-console-token";
const $ = (id) => document.getElementById(id);
const text = (tag, value, className) => {
  const el = document.createElement(tag);
  el.textContent = value ?? "";
  if (className) el.className = className;
  return el;
};
const button = (label, onClick, className) => {
  const b = text("button", label, className);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
};
/** A status as a badge: its word, which is what a screen reader and the tests read, coloured and marked by the CSS. */
const badge = (status, label = status) => text("span", label, `badge ${status}`);
const el = (tag, ...children) => {
  const e = document.createElement(tag);
  e.append(...children);
  return e;
};
const cell = (...children) => el("td", ...children);
const utc = (iso) => new Date(iso).toISOString().replace("T", " ").slice(0, 19);
/** "14:05 UTC (in 9 min)": a next attempt is read against now, the instant in UTC as everywhere else on the page. */
function nextAt(iso) {
  const minutes = Math.round((Date.parse(iso) - Date.now()) / 60_000);
  const when = `${new Date(iso).toISOString().slice(11, 16)} UTC`;
  if (minutes <= 0) return `${when} (due now)`;
  if (minutes < 90) return `${when} (in ${minutes} min)`;
  const hours = Math.round(minutes / 60);
  return hours < 36 ? `${when} (in ${hours} h)` : `${utc(iso).slice(0, 16)} UTC (in ${Math.round(hours / 24)} days)`;
}
/**
 * The narrow layout shows each row as a card, each cell under its column's name: the names are copied from the
 * table's head onto the cells, where the CSS reads them.
 */
function fillTable(tbody, rows, append = false) {
  const names = [...tbody.closest("table").tHead.rows[0].cells].map((th) => th.textContent);
  for (const tr of rows) [...tr.cells].forEach((td, i) => td.dataset.label = names[i] ?? "");
  if (append) tbody.append(...rows);
  else tbody.replaceChildren(...rows);
  const empty = !tbody.rows.length;
  tbody.closest("table").hidden = empty;
  $(`${tbody.id}-empty`).hidden = !empty;
}

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

/** Field errors as one line; nested ones (a custom header's, under its name) as `headers.X-Name message`. */
function describeErrors(errors, prefix = "") {
  if (!errors) return "";
  if (errors.detail && !prefix) return errors.detail;
  return Object.entries(errors).map(([field, messages]) =>
    Array.isArray(messages) || typeof messages !== "object"
      ? `${prefix}${field} ${[].concat(messages).join(", ")}`
      : describeErrors(messages, `${prefix}${field}.`)
  ).join("; ");
}

function notice(message, isError = false) {
  const el = $("notice");
  el.textContent = message;
  el.className = isError ? "error" : "done";
}

const run = (action) => async (event) => {
  event?.preventDefault?.();
  try {
    await action(event);
  } catch (err) {
    notice(err.message, true);
  }
};

// --- views: the overview (what needs attention, the endpoints), the delivery log, one endpoint, the catalogue; the
// address's fragment names the view (`#log`, `#endpoint/<id>`), so Back and a bookmark work and the page stays short
const VIEWS = ["overview", "log", "endpoint", "catalogue"];
let view = { name: "overview", id: null };

/** Shows the view the fragment names (the overview for any other), at once: a caller may focus a field in it next. */
function route() {
  const [name, id = null] = location.hash.slice(1).split("/");
  const next = VIEWS.includes(name) && (name !== "endpoint" || id) ? { name, id } : { name: "overview", id: null };
  const moved = next.name !== view.name || next.id !== view.id;
  view = next;
  for (const v of VIEWS) $(`view-${v}`).hidden = v !== view.name;
  for (const a of document.querySelectorAll("#app-nav a")) {
    if (a.getAttribute("href") === `#${view.name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (moved) {
    globalThis.scrollTo(0, 0);
    // a search is the log's: another view neither keeps its id in the box nor finds the log still narrowed to it
    if (view.name !== "log") leaveSearch();
    if (view.name === "endpoint" && !$("app").hidden) run(() => showEndpoint(view.id, false, true))();
  }
}

/** Goes to a view now (the `hashchange` that follows finds it shown already). */
function go(hash) {
  if (location.hash !== hash) history.pushState(null, "", hash);
  route();
}
globalThis.addEventListener("hashchange", route);

// --- sign-in
function showApp(signedIn) {
  $("sign-in").hidden = signedIn;
  $("app").hidden = !signedIn;
  $("app-nav").hidden = !signedIn;
  $("search").hidden = !signedIn;
  if (signedIn) {
    route();
    refreshAll();
  }
}

/** Forgets the token and what it showed, on this tab (also when the API answers 401: the session is over already). */
function signOut() {
  sessionStorage.removeItem(TOKEN);
  // the next person to sign in on this tab sees nothing of this one's deliveries
  shown = null;
  $("delivery").hidden = true;
  // nor the page or the search this one had open
  clearSearch();
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  route();
  showApp(false);
}

// a portal's page has no sign-in form: its session comes from its link (portal.js)
$("sign-in-form")?.addEventListener("submit", async (event) => {
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
/**
 * Sign out: the session is ended on the server first (`POST /api/v1/sign_out`), so the token answers 401 everywhere
 * from now on, not only on this tab, then forgotten here, whatever the server said.
 */
async function endSession() {
  const token = sessionStorage.getItem(TOKEN);
  let ended = !token;
  if (token) {
    const res = await fetch("/api/v1/sign_out", { method: "POST", headers: { authorization: `Bearer ${token}` } })
      .catch(() => null);
    await res?.text().catch(() => ""); // read to its end: the request is over, not left to the next page to cut off
    // 401: the session had ended already
    ended = res !== null && (res.ok || res.status === 401);
  }
  signOut();
  if (!ended) $("sign-in-error").textContent = "Signed out on this tab; the server could not end the session now.";
}
$("sign-out").addEventListener("click", endSession);
$("refresh").addEventListener("click", () => refreshAll());

// --- endpoints
const ENDPOINTS = "/api/v2/notifications/endpoints";
const EVENTS = "/api/v2/notifications/events";
let endpoints = [];

const DISABLED_BECAUSE = {
  manual: "disabled by your company",
  gone: "the receiver answered 410 Gone",
  failing: "every attempt failed for days",
};

/**
 * The records of one status, per endpoint, from the events list (there is no count in the API). One page of the
 * whole company answers when it holds them all; past a page, each endpoint is asked on its own so that a busy one does
 * not hide the others, and a count of a full page reads "100+".
 */
async function byEndpoint(status) {
  const page = (q) => api("GET", `${EVENTS}?${new URLSearchParams({ per_page: "100", status, ...q })}`);
  const found = new Map(endpoints.map((e) => [e.id, { records: [], more: false }]));
  const { data } = await page({});
  if (data.length < 100) {
    for (const d of data) found.get(d.endpoint_id)?.records.push(d);
    return found;
  }
  await Promise.all(endpoints.map(async (e) => {
    const { data } = await page({ endpoint_id: e.id });
    found.set(e.id, { records: data, more: data.length === 100 });
  }));
  return found;
}

/**
 * What the delivery records say of one endpoint: failed and pending counts, and, once the API lists them
 * (`attempts_count`, `next_attempt_at`), how many pending ones are being retried and when the next attempt is.
 */
function health(failed, pending) {
  const retrying = pending.records.filter((d) => (d.attempts_count ?? 0) > 0);
  const next = pending.records.map((d) => d.next_attempt_at).filter(Boolean).sort()[0] ?? null;
  return {
    // the newest record's: the list is newest first
    lastError: retrying.find((d) => d.last_error)?.last_error ?? null,
    failed: failed.records.length,
    failedMore: failed.more,
    pending: pending.records.length,
    pendingMore: pending.more,
    retrying: pending.records.some((d) => "attempts_count" in d) ? retrying.length : null,
    next,
  };
}
const count = (n, more) => `${n}${more ? "+" : ""}`;

async function loadEndpoints() {
  endpoints = (await api("GET", ENDPOINTS)).data;
  const [failed, pending, stats] = await Promise.all([
    byEndpoint("failed"),
    byEndpoint("pending"),
    statsOf(endpoints),
  ]);
  const states = new Map(endpoints.map((e) => [e.id, health(failed.get(e.id), pending.get(e.id))]));
  fillTable(
    $("endpoint-rows"),
    endpoints.map((e) => {
      const tr = document.createElement("tr");
      tr.dataset.id = e.id;
      const actions = cell(...endpointActions(e));
      actions.className = "row-actions";
      tr.append(
        urlCell(e, stats.get(e.id)),
        settingsCell(e),
        cell(badge(e.status)),
        cell(...deliveriesOf(e, states.get(e.id))),
        healthCell(stats.get(e.id)),
        actions,
      );
      return tr;
    }),
  );
  showAttention(states);
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
  if (view.name === "endpoint") await showEndpoint(view.id);
}

/** What can be done to an endpoint, on its row and on its page: each answer is read back into both. */
function endpointActions(e) {
  return [
    button("Edit", () => editEndpoint(e)),
    button(
      "Send test event",
      run(async () => {
        // identified where the endpoint takes it (the quickstart's), else the first type it takes
        const takes = e.enabled_events.includes("*") || e.enabled_events.includes("identified");
        await api("POST", `${ENDPOINTS}/${e.id}/test`, takes ? { type: "identified" } : {});
        notice("Test event queued");
        await refreshDeliveries();
      }),
    ),
    button(
      "Rotate secret",
      run(async () => {
        const { data } = await api("POST", `${ENDPOINTS}/${e.id}/rotate_secret`);
        showSecret(data);
        // an ed25519 endpoint rotates its key pair: the previous key is in previous_public_keys
        const until = data.previous_secret_expires_at ?? data.previous_public_keys?.[0]?.expires_at;
        notice(`Secret rotated${until ? `: the previous one still signs until ${utc(until)} UTC` : ""}`);
      }),
    ),
    e.status === "active"
      ? button(
        "Disable",
        run(async () => {
          await api("DELETE", `${ENDPOINTS}/${e.id}`);
          notice("Endpoint disabled: nothing more is sent to it, and what was pending for it failed");
          await loadEndpoints();
        }),
        "danger",
      )
      : button(
        "Enable",
        run(async () => {
          await api("POST", `${ENDPOINTS}/${e.id}/enable`);
          notice("Endpoint enabled: what failed meanwhile stays failed until you recover it");
          await loadEndpoints();
        }),
      ),
  ];
}

/**
 * The URL of an endpoint, the filter its events pass when it has one, and how often that filter could not decide, with
 * its last error, from the endpoint's stats (docs/webhooks.md, Filters).
 */
function urlCell(e, s) {
  const td = cell(link(e.url, `#endpoint/${e.id}`));
  td.className = "url";
  if (e.filter) td.append(el("span", "filter ", text("code", e.filter)));
  // its throttle (docs/webhooks.md, Throttle)
  if (e.rate_limit) td.append(el("span", "throttle ", text("code", `${e.rate_limit}/s`)));
  const errors = s?.filter_errors;
  if (errors?.total) {
    const last = errors.last ? `; last ${utc(errors.last.at)} UTC: ${errors.last.message}` : "";
    td.append(text("span", `filter failed on ${errors.total} event${errors.total === 1 ? "" : "s"}${last}`, "note"));
  }
  if (errors?.deferred) td.append(text("span", deferredNote(errors), "note"));
  return td;
}

/**
 * What the company's filter time deferred for an endpoint: records written before their filter said yes, those it
 * then refused, and those still waiting (docs/webhooks.md, "What a company's filters may spend").
 */
function deferredNote(fe) {
  const waiting = fe.deferred_waiting ? `, ${fe.deferred_waiting} waiting for their filter` : "";
  return `Filter deferred on ${fe.deferred} event${fe.deferred === 1 ? "" : "s"} (filter time spent): ` +
    `${fe.refused_after_deferral} refused then${waiting}`;
}

/** A link to a view of the console (`#endpoint/<id>`): the address says where it goes, Back comes back. */
function link(label, hash) {
  const a = text("a", label);
  a.href = hash;
  return a;
}

/** An endpoint's subscribed event types as a reader says them: in words for `*`, else each type's name as code. */
const eventTypesOf = (e) =>
  e.enabled_events.includes("*")
    ? [text("span", "every event type")]
    : e.enabled_events.flatMap((t, i) => [i ? " " : "", text("code", t)]);
/** The signature scheme and what the receiver verifies it with. */
const SCHEMES = { "hmac-sha256": "hmac-sha256, shared secret", ed25519: "ed25519, public key" };
/** The endpoint's mTLS client certificate as its subject and expiry (never the key, which the API never shows). */
const clientCertificateOf = (e) => {
  const c = e.client_certificate;
  if (!c) return ["none"];
  return [text("code", c.subject), ` issued by ${c.issuer}, expires ${utc(c.expires_at)} UTC`];
};
const schemeOf = (e) => SCHEMES[e.signature_scheme] ?? e.signature_scheme ?? "hmac-sha256, shared secret";

// --- transports (docs/webhooks.md, "Destinations"): the broker a URL's scheme names, as the API reads it. The API
// decides what it accepts; the page only picks the fields to show and the words to say.
const BROKER_SCHEMES = {
  amqp: "amqp",
  amqps: "amqp",
  nats: "nats",
  tls: "nats",
  redis: "redis",
  rediss: "redis",
  mqtt: "mqtt",
  mqtts: "mqtt",
};
const TRANSPORT_NAMES = { amqp: "RabbitMQ", nats: "NATS JetStream", redis: "Redis Streams", mqtt: "MQTT" };
/** What the API shows for a stored secret, and takes back as "keep the stored one". */
const MASK = "****";
/** The transport a URL names: a broker's name, or `http` for https:// and anything else. */
function transportOfUrl(url) {
  const scheme = /^\s*([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  return BROKER_SCHEMES[scheme] ?? "http";
}
const isBroker = (e) => (e.transport ?? "http") !== "http";
/** The transport as a badge: the broker's name, or HTTPS (HTTP for a plaintext URL, allowed in development). */
const transportBadge = (e) =>
  text(
    "span",
    isBroker(e) ? TRANSPORT_NAMES[e.transport] ?? e.transport : /^https:/i.test(e.url) ? "HTTPS" : "HTTP",
    "badge transport",
  );
/** Where on its broker an endpoint publishes, in words with the names as code: "exchange payments, routing key …". */
function whereOf(e) {
  const d = e.destination ?? {};
  const name = (value) => text("code", String(value));
  switch (e.transport) {
    case "amqp":
      return [
        ...(d.exchange ? ["exchange ", name(d.exchange)] : ["the default exchange"]),
        ", routing key ",
        name(d.routing_key ?? "{type}"),
      ];
    case "nats":
      return ["subject ", name(d.subject)];
    case "redis":
      return ["stream ", name(d.stream), d.maxlen ? `, trimmed to about ${d.maxlen} entries` : ""];
    case "mqtt":
      return ["topic ", name(d.topic)];
    default:
      return [JSON.stringify(d)];
  }
}
/** A broker endpoint's credentials, set or not: the user name and a mask (the page never has the secret). */
function credentialsOf(e) {
  const c = e.broker_credentials;
  if (!c) return "none";
  return "token" in c ? `token ${MASK}` : `username ${c.username}, password ${MASK}`;
}

/** An endpoint's custom headers as one line, secret values masked as the API shows them; null when it has none. */
function headersOf(e) {
  const all = [...Object.entries(e.headers ?? {}), ...Object.entries(e.secret_headers ?? {})];
  return all.length
    ? text("span", `headers: ${all.map(([name, value]) => `${name}: ${value}`).join(", ")}`, "note")
    : null;
}

/**
 * The "Settings" cell of an endpoint: its transport (and, for a broker, where it publishes and with which credentials),
 * its delivery mode, its signature scheme, the event types it receives, its custom headers, and whether it sends an
 * OAuth2 bearer token.
 */
function settingsCell(e) {
  const where = el("span", ...(isBroker(e) ? whereOf(e) : []));
  where.className = "where";
  const td = cell(
    el("span", transportBadge(e)),
    // a broker endpoint's destination and credentials (docs/webhooks.md, Destinations), under its transport
    ...(isBroker(e) ? [where, text("span", `credentials: ${credentialsOf(e)}`, "note")] : []),
    text("span", e.delivery_mode),
    text("span", schemeOf(e), "note"),
    el("span", ...eventTypesOf(e)),
    ...[headersOf(e)].filter(Boolean),
    // only when set: an endpoint without OAuth2 reads as before (docs/webhooks.md, "OAuth2 client credentials")
    ...(e.oauth2 ? [text("span", "OAuth2 bearer token", "note")] : []),
  );
  td.className = "settings";
  return td;
}

/** The "Deliveries" cell of an endpoint: what failed, what waits and when it is tried next, or that all went. */
function deliveriesOf(e, h) {
  const parts = [];
  if (h.failed) parts.push(badge("failed", `${count(h.failed, h.failedMore)} failed`));
  if (h.pending) {
    const retrying = h.retrying ? `, ${h.retrying} retrying` : "";
    parts.push(badge("pending", `${count(h.pending, h.pendingMore)} pending${retrying}`));
  }
  if (h.next) parts.push(text("span", `next attempt ${nextAt(h.next)}`, "note"));
  if (e.status === "disabled") parts.push(text("span", DISABLED_BECAUSE[e.disabled_reason] ?? "disabled", "note"));
  if (!h.failed && !h.pending) parts.unshift(text("span", "all delivered", "note ok"));
  return parts;
}

/** Each endpoint's attempts of the last 24 hours, from its stats (docs/webhooks.md, Endpoint health). */
async function statsOf(list) {
  const answers = await Promise.all(list.map((e) => readStats(e.id)));
  return new Map(list.map((e, i) => [e.id, answers[i]]));
}

/**
 * The server runs at most 2 stats reads of a company at once and answers 429 past them (docs/limits.md, "Endpoint
 * stats reads"): this tab runs 2 at a time and queues the rest, and one refused anyway (another tab's were running)
 * is asked again once, a second later, as its Retry-After says.
 */
const STATS_AT_ONCE = 2;
let statsRunning = 0;
const statsWaiting = [];
async function readStats(id) {
  if (statsRunning < STATS_AT_ONCE) statsRunning++;
  else await new Promise((resolve) => statsWaiting.push(resolve));
  try {
    const read = () => api("GET", `${ENDPOINTS}/${id}/stats`);
    return (await read().catch(async (err) => {
      if (err.message !== "Too Many Requests") throw err;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return await read();
    })).data;
  } finally {
    // the place goes straight to the next waiting read, if any
    const next = statsWaiting.shift();
    if (next) next();
    else statsRunning--;
  }
}

/** The "Last 24 h" cell: how many attempts succeeded, how long they took, and the last failure, whenever it was. */
function healthCell(s) {
  const td = cell();
  td.className = "health";
  const a = s.attempts;
  if (!a.total) td.append(text("span", "no attempts", "note"));
  else {
    td.append(
      text("span", `${Math.round(s.success_rate * 1000) / 10}% of ${a.total} attempts succeeded`),
      text("span", `p50 ${s.duration_ms.p50} ms, p95 ${s.duration_ms.p95} ms`, "note"),
    );
  }
  if (s.last_failure) {
    td.append(text("span", `last failure ${utc(s.last_failure.at)} UTC: ${s.last_failure.reason}`, "note"));
  }
  return td;
}

/** The counts up front, and one line per endpoint needing something, with the step that fixes it. */
function showAttention(states) {
  const total = (key) => [...states.values()].reduce((sum, h) => sum + h[key], 0);
  const more = (key) => [...states.values()].some((h) => h[key]);
  $("stat-failed").textContent = count(total("failed"), more("failedMore"));
  $("stat-pending").textContent = count(total("pending"), more("pendingMore"));
  $("stat-disabled").textContent = String(endpoints.filter((e) => e.status === "disabled").length);
  const items = endpoints.flatMap((e) => {
    const h = states.get(e.id);
    if (!h.failed && !h.retrying && e.status === "active") return [];
    const li = document.createElement("li");
    // a receiver being retried is waited on, not lost yet: told apart from a failure by its tone
    li.dataset.tone = h.failed || e.status === "disabled" ? "failed" : "pending";
    li.append(el("span", link(e.url, `#endpoint/${e.id}`)));
    li.firstChild.className = "url";
    const what = document.createElement("span");
    what.className = "what";
    if (e.status === "disabled") {
      what.append(badge("disabled"), ` ${DISABLED_BECAUSE[e.disabled_reason] ?? ""}: enable it`);
      if (h.failed) what.append(", then ");
    }
    // what to fix: the receiver, or for a broker endpoint the broker (or its destination)
    const fixed = isBroker(e) ? "the broker takes messages again" : "the receiver answers 2xx";
    if (h.failed) {
      const n = count(h.failed, h.failedMore);
      const one = h.failed === 1 && !h.failedMore;
      what.append(
        badge("failed", `${n} failed`),
        ` ${one ? "delivery" : "deliveries"}: once ${fixed}, recover ${one ? "it" : "them"}`,
      );
      if (h.retrying) what.append("; ");
    }
    if (h.retrying) {
      const one = h.retrying === 1;
      what.append(
        badge("pending", `${h.retrying} retrying`),
        ` after a failed attempt${h.lastError ? ` (${h.lastError})` : ""}` +
          `${h.next ? `, next attempt ${nextAt(h.next)}` : ""}: ` +
          `fix the ${isBroker(e) ? "broker" : "receiver"}, or ${
            one ? "it fails" : "they fail"
          } once the retries run out`,
      );
    }
    li.append(what);
    const actions = document.createElement("span");
    actions.className = "row-actions";
    if (h.retrying && !h.failed) actions.append(button("Show in log", run(() => showInLog(e.id, "pending"))));
    if (h.failed) {
      actions.append(
        button("Show in log", run(() => showInLog(e.id, "failed"))),
        button("Recover…", () => {
          go("#overview");
          $("recover-panel").open = true;
          $("recover-endpoint").value = e.id;
          $("recover-since").focus();
        }),
      );
    }
    li.append(actions);
    return [li];
  });
  $("attention-list").replaceChildren(...items);
  $("attention-list").hidden = !items.length;
  $("attention-empty").hidden = Boolean(items.length);
  $("attention-empty").textContent = endpoints.length
    ? "Nothing needs attention: every endpoint is active, no delivery has failed and none is being retried."
    : "Nothing to watch yet: add an endpoint below, and its failures will show here.";
  // nothing to recover without an endpoint: an empty list of them would only be a dead end
  $("recover-panel").hidden = !endpoints.length;
  // the first thing to do without an endpoint is to add one
  if (!endpoints.length) $("endpoint-form-panel").open = true;
}

/** The log, filtered to one endpoint's records of one status. */
async function showInLog(endpointId, status) {
  clearSearch();
  $("filter-status").value = status;
  $("filter-endpoint").value = endpointId;
  go("#log");
  await loadDeliveries();
}

/** The new credential of an endpoint's answer: its secret, or for an ed25519 endpoint (no secret) its public key. */
function showSecret(data) {
  const el = $("endpoint-secret");
  // shown where the button was: on the endpoint's page, or under the list
  (view.name === "endpoint" ? $("endpoint-secret-slot") : $("endpoint-secret-home")).append(el);
  el.hidden = false;
  if (data.secret === null) {
    el.replaceChildren("Public key (verifies the v1a signatures; copy it now): ", text("code", data.public_key));
  } else el.replaceChildren("Signing secret (shown once, copy it now): ", text("code", data.secret));
}

/** The scheme of the endpoint being edited: a save that changes it shows the new credential. */
let editedScheme = null;
/** The OAuth2 settings of the endpoint being edited: those the form has no field for are saved as they were. */
let editedOAuth2 = null;
/** The broker credentials of the endpoint being edited, as shown (masked): what a save keeps. */
let editedCredentials = null;

// --- the form follows its URL: a broker's scheme shows that transport's destination and the credentials, and hides
// (and disables, so they are neither checked nor sent) what only an HTTP receiver has
const urlHint = $("endpoint-url-hint").textContent;
let formTransport = "http";
function showTransportFields() {
  const transport = transportOfUrl($("endpoint-url").value);
  const broker = transport !== "http";
  $("endpoint-broker").hidden = !broker;
  $("endpoint-http-only").hidden = broker;
  for (const field of $("endpoint-http-only").querySelectorAll("input, textarea")) field.disabled = broker;
  for (const group of document.querySelectorAll("#endpoint-broker fieldset[data-transport]")) {
    group.hidden = group.dataset.transport !== transport;
    group.disabled = group.hidden;
  }
  $("endpoint-credentials").disabled = !broker;
  $("endpoint-token-field").hidden = transport !== "nats";
  // said once per change of transport, not per key typed: the hint is read out by screen readers
  if (transport !== formTransport) {
    $("endpoint-url-hint").textContent = broker
      ? `${TRANSPORT_NAMES[transport]}: where it publishes and its credentials are below; a client certificate ` +
        "and OAuth2 are for HTTPS receivers only"
      : urlHint;
  }
  formTransport = transport;
}
$("endpoint-url").addEventListener("input", showTransportFields);
// a URL the browser restored into the form (Back, a reload) shows its fields too
showTransportFields();

/** The destination the form describes, for the transport its URL names (docs/webhooks.md, Destinations). */
function destinationOfForm(transport) {
  const value = (id) => $(id).value.trim();
  switch (transport) {
    case "amqp":
      // no routing key: the API's default, the event type
      return {
        exchange: value("endpoint-exchange"),
        ...(value("endpoint-routing-key") ? { routing_key: value("endpoint-routing-key") } : {}),
      };
    case "nats":
      return { subject: value("endpoint-subject") };
    case "redis":
      return {
        stream: value("endpoint-stream"),
        ...(value("endpoint-maxlen") ? { maxlen: Number(value("endpoint-maxlen")) } : {}),
      };
    default:
      return { topic: value("endpoint-topic") };
  }
}

/**
 * The credentials a save sends: null with the box ticked (removed); a token, or a username and password, typed; a
 * username changed with no password typed, sent with the mask, which keeps the stored password; nothing typed sends
 * nothing, which keeps what is stored. The API names what is missing (a URL moved to another broker needs them again).
 */
function credentialsOfForm(transport) {
  if ($("endpoint-broker-remove").checked) return null;
  const token = transport === "nats" ? $("endpoint-broker-token").value : "";
  if (token) return { token };
  const username = $("endpoint-broker-username").value.trim();
  const password = $("endpoint-broker-password").value;
  if (password) return { username, password };
  const stored = editedCredentials && "username" in editedCredentials ? editedCredentials.username : null;
  if (username && username === stored) return undefined;
  if (username) return { username, password: stored === null ? "" : MASK };
  return undefined;
}

/** The destination fields and the key of `destination` each shows. */
const DESTINATION_FIELDS = [
  ["endpoint-exchange", "exchange"],
  ["endpoint-routing-key", "routing_key"],
  ["endpoint-subject", "subject"],
  ["endpoint-stream", "stream"],
  ["endpoint-maxlen", "maxlen"],
  ["endpoint-topic", "topic"],
];

function editEndpoint(e) {
  go("#overview");
  $("endpoint-id").value = e.id;
  $("endpoint-scheme").value = e.signature_scheme ?? "hmac-sha256";
  editedScheme = $("endpoint-scheme").value;
  $("endpoint-url").value = e.url;
  const d = e.destination ?? {};
  for (const [id, key] of DESTINATION_FIELDS) $(id).value = d[key] ?? "";
  editedCredentials = e.broker_credentials ?? null;
  $("endpoint-broker-username").value = editedCredentials?.username ?? "";
  $("endpoint-broker-password").value = "";
  $("endpoint-broker-token").value = "";
  $("endpoint-broker-remove").checked = false;
  showTransportFields();
  $("endpoint-mode").value = e.delivery_mode;
  setEventTypes(e.enabled_events);
  $("endpoint-filter").value = e.filter ?? "";
  $("endpoint-rate").value = e.rate_limit ?? "";
  $("endpoint-batch-size").value = e.batch?.max_events ?? "";
  $("endpoint-batch-wait").value = e.batch?.max_wait_ms ?? "";
  $("endpoint-headers").value = headerLines(e.headers);
  // masked as the API shows them: sent back unchanged, they keep the stored values (docs/webhooks.md)
  $("endpoint-secret-headers").value = headerLines(e.secret_headers);
  editedOAuth2 = e.oauth2 ?? null;
  $("endpoint-oauth2-url").value = e.oauth2?.token_url ?? "";
  $("endpoint-oauth2-client").value = e.oauth2?.client_id ?? "";
  $("endpoint-oauth2-secret").value = "";
  $("endpoint-oauth2-scope").value = e.oauth2?.scope ?? "";
  $("endpoint-version").value = e.payload_version;
  $("endpoint-save").textContent = "Save endpoint";
  $("endpoint-form-title").textContent = "Edit an endpoint";
  $("endpoint-form-panel").open = true;
  $("endpoint-url").focus();
}

// --- the endpoint's event types, ticked in the catalogue's list: `*` alone, or the types ticked (none: `*`)
const typeBoxes = () => [...document.querySelectorAll("input.event-type")];
function chosenEventTypes() {
  const ticked = typeBoxes().filter((b) => b.checked).map((b) => b.value);
  return $("endpoint-events").checked || ticked.length === 0 ? ["*"] : ticked;
}
function setEventTypes(types) {
  $("endpoint-events").checked = types.includes("*");
  for (const box of typeBoxes()) box.checked = !types.includes("*") && types.includes(box.value);
}
$("endpoint-events").addEventListener("change", () => {
  if ($("endpoint-events").checked) { for (const box of typeBoxes()) box.checked = false; }
});
for (const box of typeBoxes()) {
  box.addEventListener("change", () => {
    if (box.checked) $("endpoint-events").checked = false;
    else if (!typeBoxes().some((b) => b.checked)) $("endpoint-events").checked = true;
  });
}

/** A map of headers as the form's text: one "Name: value" a line. */
const headerLines = (map) => Object.entries(map ?? {}).map(([name, value]) => `${name}: ${value}`).join("\n");

/** The form's text as a map of headers: a line's name ends at its first colon; blank lines are skipped. */
function headerMap(lines) {
  const map = {};
  for (const line of lines.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const colon = line.indexOf(":");
    // a line without a colon is a name without a value: the API's 422 names it
    if (colon < 0) map[line] = "";
    else map[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return map;
}

$("endpoint-form").addEventListener("reset", () => {
  $("endpoint-id").value = "";
  editedScheme = null;
  editedOAuth2 = null;
  editedCredentials = null;
  // "reset" comes before the fields are cleared: the URL is read once they are
  setTimeout(showTransportFields);
  $("endpoint-save").textContent = "Create endpoint";
  $("endpoint-form-title").textContent = "Add an endpoint";
});
$("endpoint-form").addEventListener(
  "submit",
  run(async () => {
    const id = $("endpoint-id").value;
    const body = {
      url: $("endpoint-url").value,
      delivery_mode: $("endpoint-mode").value,
      enabled_events: chosenEventTypes(),
      // empty: no filter (null removes one on a save)
      filter: $("endpoint-filter").value.trim() || null,
      signature_scheme: $("endpoint-scheme").value,
      // empty: no throttle (null removes one on a save; docs/webhooks.md, Throttle)
      rate_limit: $("endpoint-rate").value.trim() === "" ? null : Number($("endpoint-rate").value),
      headers: headerMap($("endpoint-headers").value),
      secret_headers: headerMap($("endpoint-secret-headers").value),
      // no token URL: no OAuth2 (null removes it); no secret: the stored one is kept while it goes where it went
      // (docs/webhooks.md, "Secrets stay with their URL": the API names what a move to another origin needs again)
      oauth2: $("endpoint-oauth2-url").value.trim()
        ? {
          token_url: $("endpoint-oauth2-url").value.trim(),
          client_id: $("endpoint-oauth2-client").value.trim(),
          client_secret: $("endpoint-oauth2-secret").value || null,
          scope: $("endpoint-oauth2-scope").value.trim() || null,
          audience: editedOAuth2?.audience ?? null,
          client_auth: editedOAuth2?.client_auth ?? null,
        }
        : null,
      payload_version: $("endpoint-version").value,
    };
    const transport = transportOfUrl(body.url);
    if (transport !== "http") {
      // a broker endpoint has neither OAuth2 nor a client certificate (the API refuses them): its own settings instead
      delete body.oauth2;
      body.destination = destinationOfForm(transport);
      const credentials = credentialsOfForm(transport);
      if (credentials !== undefined) body.broker_credentials = credentials;
    } else {
      // mTLS: both PEMs set (or replace) it, the box removes it, nothing typed leaves it (docs/webhooks.md)
      const certificate = $("endpoint-client-cert").value.trim();
      const privateKey = $("endpoint-client-key").value.trim();
      if (certificate || privateKey) body.client_certificate = { certificate, private_key: privateKey };
      else if ($("endpoint-client-remove").checked) body.client_certificate = null;
      // no size: one event a request (null removes batches on a save; docs/webhooks.md, Batches)
      const size = $("endpoint-batch-size").value.trim();
      body.batch = size
        ? { max_events: Number(size), max_wait_ms: Number($("endpoint-batch-wait").value.trim() || "0") }
        : null;
    }
    const { data } = id ? await api("PUT", `${ENDPOINTS}/${id}`, body) : await api("POST", ENDPOINTS, body);
    if (!id || body.signature_scheme !== editedScheme) showSecret(data);
    notice(id ? "Endpoint saved" : "Endpoint created");
    $("endpoint-form").reset();
    await loadEndpoints();
  }),
);
// where the last recover's replay stopped, for "recover again" with the same endpoint and since (docs/webhooks.md)
let recoverCursor = { key: "", after: null };
$("recover-form").addEventListener(
  "submit",
  run(async () => {
    const since = new Date(`${$("recover-since").value}Z`).toISOString();
    const skipped = $("recover-skipped").value === "true";
    const key = `${$("recover-endpoint").value} ${since}`;
    const after = skipped && recoverCursor.key === key ? recoverCursor.after : null;
    const { data } = await api("POST", `${ENDPOINTS}/${$("recover-endpoint").value}/recover`, {
      since,
      include_skipped: skipped,
      ...(after ? { skipped_after: after } : {}),
    });
    recoverCursor = { key, after: data.skipped_after ?? null };
    const url = endpoints.find((e) => e.id === data.endpoint_id)?.url ?? data.endpoint_id;
    // docs/webhooks.md, "Replay what a disabled endpoint missed": a call queues at most 10,000 of them
    const missed = skipped
      ? ` and ${data.skipped} ${data.skipped === 1 ? "event" : "events"} it missed while disabled` +
        (data.skipped_remaining ? " (more remain: recover again)" : "")
      : "";
    notice(`Sent to ${url}: ${data.failed} failed ${data.failed === 1 ? "delivery" : "deliveries"} again${missed}`);
    await refreshDeliveries();
  }),
);

// --- deliveries
let lastId = null;

/** The id searched for, while the log shows what it found: `event_id` or `transaction_id` and the id. */
let search = null;

function filterQuery() {
  const q = new URLSearchParams({ per_page: "20" });
  if (search) q.set(search.param, search.id);
  for (const [name, id] of [["status", "filter-status"], ["type", "filter-type"], ["endpoint_id", "filter-endpoint"]]) {
    if ($(id).value) q.set(name, $(id).value);
  }
  if ($("filter-from").value) q.set("from", `${$("filter-from").value}Z`);
  return q;
}

/**
 * The attempts of a record as the list will carry them (`attempts_count`, `next_attempt_at`, `last_error`): shown
 * when present; until the API lists them, their column stays hidden and the detail derives what it can.
 */
function attemptsOf(d) {
  const parts = [];
  if (d.attempts_count !== undefined) {
    parts.push(`${d.attempts_count} ${d.attempts_count === 1 ? "attempt" : "attempts"}`);
  }
  if (d.status === "pending" && d.next_attempt_at) parts.push(`next ${nextAt(d.next_attempt_at)}`);
  if (d.filter_deferred) parts.push("waiting for its filter");
  // queued behind its sequential endpoint's head: it goes once that one has
  const head = d.waiting_for;
  if (head) {
    const when = head.filter_deferred ? "" : head.next_attempt_at ? `, next try ${nextAt(head.next_attempt_at)}` : "";
    parts.push(`waits for ${head.delivery_id.slice(0, 8)}…${when}`);
  }
  const td = cell(parts.join(", "));
  if (d.last_error) td.append(text("span", d.last_error, "note error"));
  return td;
}

/**
 * The log read again with the filters: marked busy while the answer is awaited, so that assistive technology (and the
 * browser test) knows the rows shown are the previous filter's until it clears.
 */
async function loadDeliveries(more = false) {
  const table = $("delivery-rows-table");
  table.setAttribute("aria-busy", "true");
  try {
    await readDeliveries(more);
  } finally {
    table.removeAttribute("aria-busy");
  }
}

async function readDeliveries(more) {
  const q = filterQuery();
  if (more && lastId) q.set("last_id", lastId);
  const { data } = await api("GET", `${EVENTS}?${q}`);
  const rows = data.map((d) => {
    const tr = document.createElement("tr");
    tr.dataset.id = d.id;
    tr.dataset.status = d.status;
    const open = button(utc(d.inserted_at), run(() => showDelivery(d.id)), "link");
    const endpoint = endpoints.find((e) => e.id === d.endpoint_id);
    tr.append(
      cell(open),
      text("td", d.type),
      cell(badge(d.status)),
      // its endpoint's page, a click away
      Object.assign(cell(link(endpoint?.url ?? d.endpoint_id, `#endpoint/${d.endpoint_id}`)), { className: "url" }),
      attemptsOf(d),
    );
    return tr;
  });
  fillTable($("delivery-rows"), rows, more);
  const table = $("delivery-rows-table");
  if (data.some((d) => "attempts_count" in d || "next_attempt_at" in d || "last_error" in d)) {
    table.dataset.extra = "present";
  } else if (!more) table.dataset.extra = "absent";
  // the empty log says what to do: with filters, loosen them; without, make something to deliver
  const filtered = [...filterQuery().keys()].length > 1;
  if (search) {
    $("delivery-rows-empty").textContent = "No delivery of this id matches these filters. Clear a filter.";
    return finishPage(data);
  }
  $("delivery-rows-empty").textContent = filtered
    ? "No delivery matches these filters. Clear a filter, or pick an earlier From date."
    : "No delivery yet. Create an endpoint and send it a test event: its delivery shows here.";
  finishPage(data);
}

function finishPage(data) {
  lastId = data.length ? data[data.length - 1].id : lastId;
  $("next-page").hidden = data.length < 20;
}

// --- search: an id an integrator holds, whatever it is the id of
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Looks an id up as a delivery record's, an event's and a transaction's at once (the events list's `event_id` and
 * `transaction_id` filters, docs/webhooks.md "Search by event or transaction id"), then shows in the log what it is
 * and its records: a record opens, with the other records of its event listed.
 */
async function searchFor(raw) {
  const id = raw.trim().toLowerCase();
  if (!UUID.test(id)) {
    showSearch("An id is 36 characters, 8-4-4-4-12 hexadecimal digits: copy it whole from the webhook or your logs.");
    return;
  }
  const list = (param) => api("GET", `${EVENTS}?${new URLSearchParams({ per_page: "100", [param]: id })}`);
  const [record, byEvent, byTransaction] = await Promise.all([
    api("GET", `${EVENTS}/${id}`).then(
      ({ data }) => data,
      (err) => err.message === "Not Found" ? null : Promise.reject(err),
    ),
    list("event_id"),
    list("transaction_id"),
  ]);
  go("#log");
  // what the id has, whatever the log was filtered by before
  for (const id of ["filter-status", "filter-type", "filter-endpoint", "filter-from"]) $(id).value = "";
  // a delivery opened before is not what the id found: only a record's own id opens one (below)
  closeDelivery();
  if (record) {
    search = { param: "event_id", id: record.event_id };
    showSearch(`Delivery record ${id}, of event ${record.event_id} (${record.type}); the event's records:`);
    await loadDeliveries();
    await loadChart();
    await showDelivery(record.id);
  } else if (byEvent.data.length) {
    search = { param: "event_id", id };
    const n = byEvent.data.length;
    showSearch(`Event ${id} (${byEvent.data[0].type}): ${n} ${n === 1 ? "delivery" : "deliveries"}, one per endpoint`);
    await loadDeliveries();
    await loadChart();
  } else if (byTransaction.data.length) {
    search = { param: "transaction_id", id };
    const events = new Set(byTransaction.data.map((d) => d.event_id)).size;
    showSearch(`Transaction ${id}: ${events} ${events === 1 ? "event" : "events"} about it, and their deliveries`);
    await loadDeliveries();
    await loadChart();
  } else {
    search = null;
    showSearch(`Nothing found for ${id}: no delivery record, event or transaction of yours has this id.`);
    fillTable($("delivery-rows"), []);
    $("delivery-rows-empty").textContent = "Nothing found. Clear the search to see the whole log.";
    $("next-page").hidden = true;
    await loadChart();
  }
}

function showSearch(message) {
  $("search-result").hidden = false;
  $("search-summary").textContent = message;
}

function clearSearch() {
  search = null;
  $("search-result").hidden = true;
  $("search-summary").textContent = "";
}

/** Leaves a search: its id out of the box, and the log and the chart read again whole when one was shown. */
function leaveSearch() {
  $("search-id").value = "";
  if (!search) return;
  clearSearch();
  run(async () => {
    await loadDeliveries();
    await loadChart();
  })();
}

/** Closes the delivery shown, wherever it was opened. */
function closeDelivery() {
  shown = null;
  $("delivery").hidden = true;
}

$("search").addEventListener("submit", run(() => searchFor($("search-id").value)));
$("search-clear").addEventListener(
  "click",
  run(async () => {
    clearSearch();
    $("search-id").value = "";
    await loadDeliveries();
    await loadChart();
  }),
);

let shown = null;
/** What the request panel says an attempt does with it: an HTTP POST, as the page says at first, or a publish. */
const httpRequestNote = $("delivery-request-note").textContent;
const BROKER_REQUEST_NOTE = "Each attempt publishes this body as one message to the broker, with these headers as " +
  "its headers (a Redis entry's fields); secrets are masked, signatures are made per attempt.";

async function showDelivery(id, focus = true) {
  const { data } = await api("GET", `${EVENTS}/${id}`);
  shown = data;
  // opened under the list it was opened from: the log's, or the endpoint page's
  (view.name === "endpoint" ? $("endpoint-delivery-slot") : $("log-delivery-slot")).append($("delivery"));
  $("delivery").hidden = false;
  const attempts = data.attempts ?? [];
  const last = attempts.at(-1);
  const endpoint = endpoints.find((e) => e.id === data.endpoint_id);
  const broker = Boolean(endpoint && isBroker(endpoint));
  // a broker's acknowledgement has no HTTP status (0, as a failure's): the attempt that succeeded is a succeeded
  // record's last, unless the record was acknowledged by hand after a failure, which leaves its last_error
  const ok = (a) =>
    broker
      ? data.status === "succeeded" && !data.last_error && a === last
      : a.http_status >= 200 && a.http_status < 300;
  const lastFailed = last && !ok(last);
  const lastError = data.last_error ??
    (lastFailed
      ? broker
        ? firstLine(last.response_body)
        : `${last.http_status ? `HTTP ${last.http_status}` : "no answer"}: ${firstLine(last.response_body)}`
      : null);
  const facts = [
    ["Id", data.id],
    ["Type", data.type],
    ["Status", badge(data.status)],
    ["Event", data.event_id],
    ["Endpoint", endpoint?.url ?? data.endpoint_id],
    ["Created", `${utc(data.inserted_at)} UTC`],
    ["Attempts", String(data.attempts_count ?? attempts.length)],
  ];
  if (lastError && data.status !== "succeeded") facts.push(["Last error", text("span", lastError, "error")]);
  if (data.status === "pending" && data.next_attempt_at) facts.push(["Next attempt", nextAt(data.next_attempt_at)]);
  if (data.waiting_for) facts.push(["Waiting for", waitingFor(data.waiting_for)]);
  if (data.filter_deferred) facts.push(["Waiting for", "its endpoint's filter (the company's filter time was spent)"]);
  if (data.batch_id) facts.push(["Batch", await batchFact(data)]);
  $("delivery-facts").replaceChildren(...facts.flatMap(([k, v]) => [text("dt", k), el("dd", v)]));
  $("delivery-facts").dataset.status = data.status;
  $("delivery-retry").disabled = data.status === "succeeded";
  // nothing to acknowledge once it succeeded
  $("delivery-acknowledge").hidden = data.status === "succeeded";
  $("delivery-request").hidden = !data.request;
  $("delivery-request-note").textContent = broker ? BROKER_REQUEST_NOTE : httpRequestNote;
  if (data.request) {
    $("delivery-request-headers").textContent = Object.entries(data.request.headers).map(([k, v]) => `${k}: ${v}`)
      .join("\n");
    $("delivery-request-body").textContent = prettyJson(data.request.body);
  }
  // a broker's answer is its acknowledgement (or why none came), not an HTTP status
  $("attempt-rows-table").tHead.rows[0].cells[2].textContent = broker ? "Answer" : "HTTP status";
  fillTable(
    $("attempt-rows"),
    attempts.map((a) => {
      const tr = document.createElement("tr");
      const response = document.createElement("td");
      const headers = Object.entries(a.response_headers ?? {}).map(([k, v]) => `${k}: ${v}`).join("\n");
      response.append(text("pre", a.response_body), text("pre", headers, "headers"));
      const answered = ok(a);
      const status = broker ? (answered ? "broker answered" : "not acknowledged") : String(a.http_status);
      tr.append(
        text("td", String(a.attempt_number)),
        text("td", utc(a.inserted_at)),
        cell(badge(answered ? "succeeded" : "failed", status)),
        text("td", a.duration_ms === null ? "" : `${a.duration_ms} ms`),
        response,
      );
      return tr;
    }),
  );
  // keyboard and screen-reader users land on the delivery they opened, and everyone sees it open: its top in view
  if (focus) {
    $("delivery").scrollIntoView({ block: "start" });
    $("delivery-title").focus({ preventScroll: true });
  }
}

/**
 * A record's batch: its id, and how many events its request carried, counted among its endpoint's last 100 records
 * (the API has no filter by batch; a batch holds at most 100).
 */
async function batchFact(d) {
  const q = new URLSearchParams({ endpoint_id: d.endpoint_id, per_page: "100" });
  const { data } = await api("GET", `${EVENTS}?${q}`);
  const n = Math.max(1, data.filter((x) => x.batch_id === d.batch_id).length);
  return el("span", text("code", d.batch_id), `: the request carried the batch's ${n} event${n === 1 ? "" : "s"}`);
}

/** A JSON body indented for reading; any other text as it is. */
function prettyJson(body) {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * What a record queued behind its sequential endpoint's head waits for (docs/webhooks.md, "Delivery modes and
 * ordering"): that head, which opens on a click, and its next try.
 */
function waitingFor(w) {
  const when = w.filter_deferred
    ? "which waits for its filter"
    : w.next_attempt_at
    ? `next try ${nextAt(w.next_attempt_at)}`
    : "being sent";
  const head = button(w.delivery_id, run(() => showDelivery(w.delivery_id)), "link");
  return el("span", "the delivery ahead in the queue, ", head, `, ${when}`);
}

const firstLine = (body) => {
  const line = (body ?? "").split("\n")[0].trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line || "(empty answer)";
};

/** A button of the delivery shown: one API call on it, then the delivery read again. */
const onShown = (id, method, action, message) =>
  $(id).addEventListener(
    "click",
    run(async () => {
      await api(method, `${EVENTS}/${shown.id}/${action}`);
      notice(message);
      await showDelivery(shown.id);
      await loadEndpoints();
    }),
  );
onShown("delivery-retry", "POST", "retry", "Delivery queued again");
onShown("delivery-acknowledge", "PUT", "acknowledge", "Delivery acknowledged");
$("filters").addEventListener("submit", run(() => loadDeliveries()));
// "reset" comes before the fields are cleared: the list is read once they are
$("filters").addEventListener("reset", () => setTimeout(run(() => loadDeliveries())));
$("next-page").addEventListener("click", run(() => loadDeliveries(true)));

// --- chart: deliveries per hour by status over the last 24 whole UTC hours (up to 10 pages of 100; chart.js)
async function loadChart() {
  const buckets = hourBuckets(Date.now());
  const records = [];
  let last = null;
  for (let page = 0; page < 10; page++) {
    const q = new URLSearchParams({ per_page: "100", from: new Date(buckets[0].start).toISOString() });
    // while a search narrows the log, the chart counts what it found, as the log lists it
    if (search) q.set(search.param, search.id);
    if (last) q.set("last_id", last);
    const { data } = await api("GET", `${EVENTS}?${q}`);
    records.push(...data);
    if (data.length < 100) break;
    last = data[data.length - 1].id;
  }
  const hours = countByHour(buckets, records);
  const total = (status) => hours.reduce((sum, h) => sum + h[status], 0);
  // the overview's count is the whole company's: a search does not change it
  if (!search) $("stat-delivered").textContent = String(total("succeeded"));
  $("chart-scope").textContent = search
    ? `, of the ${search.param === "event_id" ? "event" : "transaction"} searched`
    : "";
  $("chart-empty").hidden = total("succeeded") + total("failed") + total("pending") > 0;
  // the axis names the hours the first and middle bars start at, and the current one ends with now
  $("axis-start").textContent = `${hours[0].label.slice(0, 5)} UTC`;
  $("axis-middle").textContent = `${hours[12].label.slice(0, 5)} UTC`;
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
      // a pointer over a bar reads the hour it covers and its count
      const title = document.createElementNS(ns, "title");
      title.textContent = `${h.label}: ${h[status]} ${status}`;
      rect.append(title);
      svg.append(rect);
    }
  });
}

// --- one endpoint's page: its settings, its last 24 hours, its deliveries and, opened, their attempts
let endpointLastId = null;

/** A term and its description, for the facts lists; the description may be text or elements. */
const fact = (term, ...description) => [text("dt", term), el("dd", ...description)];

async function showEndpoint(id, more = false, focus = false) {
  if (!endpoints.some((e) => e.id === id)) endpoints = (await api("GET", ENDPOINTS)).data;
  const e = endpoints.find((x) => x.id === id);
  $("endpoint-missing").hidden = Boolean(e);
  $("endpoint-found").hidden = !e;
  if (!e) return;
  const query = (extra) => `${EVENTS}?${new URLSearchParams({ endpoint_id: id, ...extra })}`;
  const [{ data: stats }, { data: list }, { data: pending }, { data: failed }] = await Promise.all([
    readStats(id).then((data) => ({ data })),
    api("GET", query({ per_page: "20", ...(more && endpointLastId ? { last_id: endpointLastId } : {}) })),
    api("GET", query({ per_page: "100", status: "pending" })),
    api("GET", query({ per_page: "100", status: "failed" })),
  ]);
  // another view was chosen while this one was read
  if (view.name !== "endpoint" || view.id !== id) return;
  $("endpoint-title").textContent = e.url;
  $("endpoint-status").replaceChildren(
    badge(e.status),
    e.status === "disabled" ? text("span", DISABLED_BECAUSE[e.disabled_reason] ?? "", "note") : "",
  );
  $("endpoint-actions").replaceChildren(
    ...endpointActions(e),
    button("Show in log", run(() => showInLog(e.id, ""))),
  );
  const key = e.signature_scheme === "ed25519" && e.public_key ? [" ", text("code", e.public_key)] : [];
  $("endpoint-settings").replaceChildren(
    ...fact("Id", text("code", e.id)),
    ...fact("Transport", transportBadge(e)),
    ...(isBroker(e) ? [...fact("Publishes to", ...whereOf(e)), ...fact("Broker credentials", credentialsOf(e))] : []),
    ...fact("Event types", ...eventTypesOf(e)),
    ...fact("Signature scheme", schemeOf(e), ...key),
    ...fact("Delivery mode", e.delivery_mode),
    ...fact("Filter", e.filter ? text("code", e.filter) : "none: every event of these types"),
    // a broker endpoint has no OAuth2 token and no client certificate to send: HTTP's alone
    ...(isBroker(e) ? [] : fact(
      "OAuth2",
      ...(e.oauth2
        ? [
          text("code", e.oauth2.client_id),
          " at ",
          text("code", e.oauth2.token_url),
          e.oauth2.scope ? `, scope ${e.oauth2.scope}` : "",
        ]
        : ["none: no bearer token"]),
    )),
    ...fact("Body", `${e.event_payload_type}${e.wrap_in_notification ? ", wrapped in a notification" : ""}`),
    ...fact("Concurrency", `up to ${e.max_concurrency} at once`),
    ...fact("Rate limit", e.rate_limit ? `at most ${e.rate_limit} per second` : "none"),
    ...(isBroker(e) ? [] : fact("Batches", batchOf(e))),
    ...(isBroker(e) ? [] : fact("Client certificate", ...clientCertificateOf(e))),
    ...fact("Payload version", text("code", e.payload_version)),
    ...fact("Created", `${utc(e.inserted_at)} UTC`),
    ...fact("Updated", `${utc(e.updated_at)} UTC`),
  );
  const h = health({ records: failed, more: failed.length === 100 }, {
    records: pending,
    more: pending.length === 100,
  });
  const a = stats.attempts;
  const rate = stats.success_rate === null ? "none yet" : `${Math.round(stats.success_rate * 1000) / 10}%`;
  const p = stats.duration_ms;
  $("endpoint-stats").replaceChildren(
    ...[
      ["Attempts (24 h)", String(a.total), ""],
      ["Succeeded", rate, "succeeded"],
      ["p50 / p95", p.p50 === null ? "none yet" : `${p.p50} / ${p.p95} ms`, ""],
      ["Pending", `${count(h.pending, h.pendingMore)}${h.retrying ? `, ${h.retrying} retrying` : ""}`, "pending"],
      ["Failed", count(h.failed, h.failedMore), "failed"],
    ].map(([term, value, tone]) => {
      const div = el("div", text("dt", term), text("dd", value));
      div.className = "stat";
      if (tone) div.dataset.tone = tone;
      return div;
    }),
  );
  const notes = [];
  if (h.next) notes.push(text("span", `Next attempt ${nextAt(h.next)}${h.lastError ? ` after ${h.lastError}` : ""}`));
  if (stats.last_failure) {
    notes.push(text("span", `Last failure ${utc(stats.last_failure.at)} UTC: ${stats.last_failure.reason}`));
  }
  if (stats.last_success_at) notes.push(text("span", `Last success ${utc(stats.last_success_at)} UTC`));
  const throttle = stats.throttle;
  if (throttle?.throttled_until) {
    notes.push(text("span", `Throttled until ${utc(throttle.throttled_until)} UTC, ${throttle.pending} waiting`));
  }
  // the events the filter could not decide on, which it did not deliver (docs/webhooks.md, Filters, "When it fails")
  const fe = stats.filter_errors;
  if (fe?.total) {
    const last = fe.last ? `; last ${utc(fe.last.at)} UTC: ${fe.last.message}` : "";
    notes.push(text("span", `Filter failed on ${fe.total} event${fe.total === 1 ? "" : "s"}${last}`));
  }
  if (fe?.deferred) notes.push(text("span", deferredNote(fe)));
  $("endpoint-notes").replaceChildren(...notes);
  $("endpoint-notes").hidden = !notes.length;
  const rows = byBatch(list).map((d) => {
    const tr = document.createElement("tr");
    tr.dataset.id = d.id;
    tr.dataset.status = d.status;
    if (d.batch_id) tr.dataset.batch = d.batch_id;
    if (d.batch_id && d.batch_id === markedBatch) tr.classList.add("in-batch");
    tr.append(
      cell(button(utc(d.inserted_at), run(() => showDelivery(d.id)), "link")),
      text("td", d.type),
      cell(badge(d.status)),
      attemptsOf(d),
      batchCell(d, list),
    );
    return tr;
  });
  fillTable($("endpoint-delivery-rows"), rows, more);
  endpointLastId = list.length ? list[list.length - 1].id : endpointLastId;
  $("endpoint-next-page").hidden = list.length < 20;
  // a delivery of another endpoint, opened before, is not this page's
  if (shown?.endpoint_id !== id && $("endpoint-delivery-slot").contains($("delivery"))) $("delivery").hidden = true;
  // keyboard and screen-reader users land on the endpoint they opened
  if (focus) $("endpoint-title").focus({ preventScroll: true });
}
/** An endpoint's batch setting as a reader says it (docs/webhooks.md, Batches). */
const batchOf = (e) =>
  e.batch
    ? `up to ${e.batch.max_events} events a request, after at most ${e.batch.max_wait_ms} ms`
    : "none: one event a request";

/** The records of a page with each batch's together, where its newest record stands (the page stays newest first). */
function byBatch(list) {
  const seen = new Set();
  return list.flatMap((d) => {
    if (!d.batch_id) return [d];
    if (seen.has(d.batch_id)) return [];
    seen.add(d.batch_id);
    return list.filter((x) => x.batch_id === d.batch_id);
  });
}

/** The batch whose records are marked, kept when the page is drawn again (a reload of its deliveries). */
let markedBatch = null;

/**
 * A record's batch as its short id, which marks (and unmarks) the batch's records on the page: a pressed toggle, so
 * that a screen reader says which batch is marked.
 */
function batchCell(d, list) {
  if (!d.batch_id) return text("td", "alone", "muted");
  const n = list.filter((x) => x.batch_id === d.batch_id).length;
  const b = button(`batch ${d.batch_id.slice(0, 8)}`, () => markBatch(d.batch_id), "link batch-label");
  b.setAttribute("aria-pressed", String(d.batch_id === markedBatch));
  b.setAttribute("aria-label", `batch ${d.batch_id.slice(0, 8)}, ${n} on this page: mark its records`);
  return cell(b);
}
function markBatch(id) {
  const on = !document.querySelector(`#endpoint-delivery-rows tr[data-batch="${id}"].in-batch`);
  markedBatch = on ? id : null;
  for (const tr of $("endpoint-delivery-rows").rows) {
    const mine = on && tr.dataset.batch === id;
    tr.classList.toggle("in-batch", mine);
    tr.querySelector(".batch-label")?.setAttribute("aria-pressed", String(mine));
  }
}
$("endpoint-next-page").addEventListener("click", run(() => showEndpoint(view.id, true)));

/** After a change that moves deliveries: the counts per endpoint, the log and the chart, in that order. */
async function refreshDeliveries() {
  await loadEndpoints();
  await loadDeliveries();
  await loadChart();
}

async function refreshAll() {
  try {
    await refreshDeliveries();
    if (shown) await showDelivery(shown.id, false);
  } catch (err) {
    notice(err.message, true);
  }
}

showApp(Boolean(sessionStorage.getItem(TOKEN)));
