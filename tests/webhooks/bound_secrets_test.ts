/**
 * Credentials stay with the URL they were given for (docs/webhooks.md, "Secrets stay with their URL"), as an editor
 * who cannot read the secrets would try to move them: two receivers on loopback, at two origins (their ports), and a
 * token server. An update moving the URL to the other origin is refused (422, naming each stored secret) unless it
 * gives the secrets again, and nothing reaches the other origin meanwhile; a path within the origin keeps them; an
 * OAuth2 endpoint moved to another origin gets a token of its own, never the one issued for the old origin.
 */
import assert from "node:assert/strict";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import type { EndpointRow } from "../../domain/webhooks/endpoints/endpoint_row.ts";
import { sendDelivery } from "../../domain/webhooks/engine/sender.ts";
import { TokenCache } from "../../domain/webhooks/engine/oauth2_tokens.ts";
import { type Company, eventually, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, startReceiver } from "../support/webhook_receiver.ts";

const API_KEY = "k_live_0123456789abcdef";
const CLIENT_SECRET = "s3cr3t: with spaces & symbols/+=";
const fixture = (name: string) => Deno.readTextFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url).pathname);
/** A client certificate of tests/fixtures/tls/README.md. */
const CLIENT = { certificate: fixture("client.pem"), private_key: fixture("client.key") };

/** A token server on loopback issuing `t1`, `t2`, ... to the client that knows CLIENT_SECRET, at any path. */
function startTokenServer() {
  let issued = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const form = new URLSearchParams(await req.text());
    const basic = /^Basic (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    const secret = basic
      ? decodeURIComponent(atob(basic).split(":")[1].replaceAll("+", " "))
      : form.get("client_secret");
    if (secret !== CLIENT_SECRET) return Response.json({ error: "invalid_client" }, { status: 400 });
    return Response.json({ access_token: `t${++issued}`, token_type: "Bearer", expires_in: 3600 });
  });
  const { port } = server.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${port}/oauth/token`, issued: () => issued, close: () => server.shutdown() };
}

/** Emits an `identified` event and waits for the endpoint's record of it to succeed: the arrival it made. */
async function deliveredTo(ctx: TestContext, company: Company, endpointId: string, at: () => Arrival[]) {
  const before = at().length;
  const transactionId = crypto.randomUUID();
  await emit(ctx, company, "identified", { transaction_id: transactionId });
  await eventually("the record succeeds", async () => {
    const records = await recordsOf(company, endpointId);
    return records.find((r) => r.payload.transaction_id === transactionId)?.status === "succeeded";
  });
  assert.equal(at().length, before + 1);
  return at().at(-1)!;
}

Deno.test("an update moving an endpoint's url to another origin must give its secrets again", async (t) => {
  const ctx = await setup("webhook_bound_secrets", { worker: true });
  const old = startReceiver();
  const other = startReceiver();
  const tokens = startTokenServer();
  const company = await newCompany(ctx);
  const oauth2 = { token_url: tokens.url, client_id: "bound-client" };
  try {
    const endpoint = await createEndpoint(company, `${old.url}/hooks`, {
      secret_headers: { "X-Api-Key": API_KEY },
      enabled_events: ["identified"],
    });
    const path = `${ENDPOINTS}/${endpoint.id}`;

    await t.step("naming only a new url: 422 on secret_headers, and nothing reaches the new origin", async () => {
      const moved = await company.put(path, { url: `${other.url}/hooks` });
      assert.equal(moved.status, 422, JSON.stringify(moved.body));
      assert.deepEqual(Object.keys(moved.body.errors), ["secret_headers"]);
      assert.match(moved.body.errors.secret_headers[0], /^must be given again: url moves to another origin/);
      const masked = await company.put(path, {
        url: `${other.url}/hooks`,
        secret_headers: { "X-Api-Key": "****cdef" },
      });
      assert.equal(masked.status, 422, "the mask shown for the stored value keeps it, so it cannot go along");
      assert.match(masked.body.errors.secret_headers["X-Api-Key"][0], /^must be given again/);
      assert.equal((await company.get(path)).body.data.url, `${old.url}/hooks`);
      const arrival = await deliveredTo(ctx, company, endpoint.id, () => old.at("/hooks"));
      assert.equal(arrival.headers.get("x-api-key"), API_KEY);
      assert.equal(other.arrivals.length, 0);
    });

    await t.step("a path within the same origin keeps the secrets", async () => {
      const res = await company.put(path, { url: `${old.url}/moved?v=2` });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.data.secret_headers, { "X-Api-Key": "****cdef" });
      const arrival = await deliveredTo(ctx, company, endpoint.id, () => old.at("/moved"));
      assert.equal(arrival.headers.get("x-api-key"), API_KEY);
    });

    await t.step("with the header given again: 200, and the new URL receives it", async () => {
      const res = await company.put(path, {
        url: `${other.url}/hooks`,
        secret_headers: { "X-Api-Key": `${API_KEY}-2` },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const arrival = await deliveredTo(ctx, company, endpoint.id, () => other.at("/hooks"));
      assert.equal(arrival.headers.get("x-api-key"), `${API_KEY}-2`);
    });

    await t.step("each stored secret is named by the field that gives it, until every one is given", async () => {
      const full = await createEndpoint(company, `${old.url}/full`, {
        secret_headers: { "X-Api-Key": API_KEY },
        client_certificate: CLIENT,
        oauth2: { ...oauth2, client_secret: CLIENT_SECRET },
        enabled_events: ["payment_failed"],
      });
      const res = await company.put(`${ENDPOINTS}/${full.id}`, { url: "https://hooks.example.com/full" });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      const { secret_headers, client_certificate, oauth2: named, ...rest } = res.body.errors;
      assert.deepEqual(rest, {});
      for (const messages of [secret_headers, client_certificate.private_key, named.client_secret]) {
        assert.match(messages[0], /^must be given again: url moves to another origin \(scheme, host or port\)/);
      }
      const given = await company.put(`${ENDPOINTS}/${full.id}`, {
        url: `${other.url}/full`,
        secret_headers: { "X-Api-Key": API_KEY },
        client_certificate: CLIENT,
        oauth2: { ...oauth2, client_secret: CLIENT_SECRET },
      });
      assert.equal(given.status, 200, JSON.stringify(given.body));
      const removed = await company.put(`${ENDPOINTS}/${full.id}`, {
        url: `${old.url}/full`,
        secret_headers: null,
        client_certificate: null,
        oauth2: null,
      });
      assert.equal(removed.status, 200, "secrets removed go nowhere: nothing to give again");
    });
  } finally {
    await ctx.close();
    await tokens.close();
    await old.close();
    await other.close();
  }
});

Deno.test("an OAuth2 endpoint moved to another origin never gets the token issued for the old one", async (t) => {
  const ctx = await setup("webhook_bound_tokens", { worker: true });
  const old = startReceiver();
  const other = startReceiver();
  const tokens = startTokenServer();
  const company = await newCompany(ctx);
  const bearer = (a: Arrival) => a.headers.get("authorization");
  try {
    const endpoint = await createEndpoint(company, `${old.url}/hooks`, {
      oauth2: { token_url: tokens.url, client_id: "bound-client", client_secret: CLIENT_SECRET },
      enabled_events: ["identified"],
    });
    const path = `${ENDPOINTS}/${endpoint.id}`;
    assert.equal(bearer(await deliveredTo(ctx, company, endpoint.id, () => old.at("/hooks"))), "Bearer t1");

    await t.step("naming only a new url: 422 on oauth2.client_secret, and no token reaches it", async () => {
      const moved = await company.put(path, { url: `${other.url}/hooks` });
      assert.equal(moved.status, 422, JSON.stringify(moved.body));
      assert.deepEqual(Object.keys(moved.body.errors), ["oauth2"]);
      assert.match(moved.body.errors.oauth2.client_secret[0], /^must be given again: url moves to another origin/);
      const same = await company.put(path, {
        url: `${other.url}/hooks`,
        oauth2: { token_url: tokens.url, client_id: "bound-client" },
      });
      assert.equal(same.status, 422, "the same credentials without the secret do not move it either");
      assert.equal(bearer(await deliveredTo(ctx, company, endpoint.id, () => old.at("/hooks"))), "Bearer t1");
      assert.equal(other.arrivals.length, 0);
    });

    await t.step(
      "switching client_auth needs the secret again; a token URL path within its origin does not",
      async () => {
        const switched = await company.put(path, {
          oauth2: { token_url: tokens.url, client_id: "bound-client", client_auth: "client_secret_post" },
        });
        assert.equal(switched.status, 422, JSON.stringify(switched.body));
        assert.match(switched.body.errors.oauth2.client_secret[0], /^is required when client_auth changes/);
        const elsewhere = await company.put(path, {
          oauth2: { token_url: `${other.url}/oauth/token`, client_id: "bound-client" },
        });
        assert.equal(elsewhere.status, 422, JSON.stringify(elsewhere.body));
        assert.match(elsewhere.body.errors.oauth2.client_secret[0], /^is required when token_url changes to another/);
        const path2 = await company.put(path, {
          oauth2: { token_url: `${tokens.url}/v2`, client_id: "bound-client" },
        });
        assert.equal(path2.status, 200, JSON.stringify(path2.body));
      },
    );

    await t.step("with the client secret given again: the new origin gets a token of its own", async () => {
      const res = await company.put(path, {
        url: `${other.url}/hooks`,
        oauth2: { token_url: tokens.url, client_id: "bound-client", client_secret: CLIENT_SECRET },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const arrival = await deliveredTo(ctx, company, endpoint.id, () => other.at("/hooks"));
      assert.notEqual(bearer(arrival), "Bearer t1");
      assert.ok(other.arrivals.every((a) => !old.arrivals.some((o) => bearer(o) === bearer(a))));
    });
  } finally {
    await ctx.close();
    await tokens.close();
    await old.close();
    await other.close();
  }
});

Deno.test("a cached token goes only to the origin it was fetched for, whatever changed the endpoint's URL", async () => {
  const ctx = await setup("webhook_bound_token_cache");
  const old = startReceiver();
  const other = startReceiver();
  const tokens = startTokenServer();
  try {
    const company = await newCompany(ctx);
    const created = await createEndpoint(company, `${old.url}/hooks`, {
      oauth2: { token_url: tokens.url, client_id: "bound-client", client_secret: CLIENT_SECRET },
    });
    const [row] = await ctx.sql<EndpointRow[]>`select * from webhook_endpoints where id = ${created.id}`;
    const box = await secretBoxFor(ctx.config);
    const cache = new TokenCache();
    const send = (url: string, path: string) =>
      sendDelivery(box, { ...row, url: `${url}${path}` }, {
        id: crypto.randomUUID(),
        type: "identified",
        data: { transaction_id: crypto.randomUUID() },
      }, { timeoutMs: 2_000, allowPrivateUrls: true, tokens: cache });
    for (const [url, path] of [[old.url, "/hooks"], [old.url, "/elsewhere"], [other.url, "/hooks"]]) {
      assert.equal((await send(url, path)).httpStatus, 200);
    }
    const bearers = [...old.arrivals, ...other.arrivals].map((a) => a.headers.get("authorization"));
    assert.deepEqual(bearers, ["Bearer t1", "Bearer t1", "Bearer t2"], "one token per origin, a path shares it");
    assert.equal(tokens.issued(), 2);
  } finally {
    await ctx.close();
    await tokens.close();
    await old.close();
    await other.close();
  }
});
