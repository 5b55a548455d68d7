/**
 * OAuth2 client credentials, as an integrator whose receiver sits behind an OAuth2 gateway lives them: a local token
 * server on loopback (counting its requests, checking HTTP Basic client authentication, issuing short-lived tokens) and
 * a real receiver that checks the bearer token and the signature. A file of its own: it owns both servers.
 */
import assert from "node:assert/strict";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { createSecretBox, isSealed, secretBoxFor } from "../../domain/infra/secret_box.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { openClientSecret, resealOAuth2Secrets } from "../../domain/webhooks/endpoints/oauth2.ts";
import { eventually, newCompany, setup, TEST_ENCRYPTION_KEY } from "../support/helpers.ts";
import type { EndpointRow, StoredOAuth2 } from "../../domain/webhooks/endpoints/endpoint_row.ts";
import { sendDelivery } from "../../domain/webhooks/engine/sender.ts";
import { TokenCache } from "../../domain/webhooks/engine/oauth2_tokens.ts";
import { sleep, startReceiver } from "../support/webhook_receiver.ts";
import { createEndpoint, emit, ENDPOINTS, EVENTS, recordsOf } from "../support/endpoints.ts";

const SECRET = "s3cr3t: with spaces & symbols/+=";

/** A token server on loopback: one client per client id, tokens `t<n>` living `expiresIn[client]` seconds. */
function startTokenServer(expiresIn: Record<string, number>, delayMs: Record<string, number> = {}) {
  const requests: { clientId: string; form: URLSearchParams }[] = [];
  const issued = new Map<string, string>(); // token -> client id
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const form = new URLSearchParams(await req.text());
    const basic = /^Basic (.+)$/.exec(req.headers.get("authorization") ?? "");
    // HTTP Basic (id and secret form-encoded first, RFC 6749 §2.3.1) or, for client_secret_post, the body
    const [id, secret] = basic
      ? atob(basic[1]).split(":").map((p) => decodeURIComponent(p.replaceAll("+", " ")))
      : [form.get("client_id") ?? "", form.get("client_secret") ?? ""];
    requests.push({ clientId: id ?? "", form });
    const json = (status: number, body: unknown) => Response.json(body, { status });
    if (req.headers.get("content-type") !== "application/x-www-form-urlencoded") return json(400, { error: "x" });
    if (form.get("grant_type") !== "client_credentials") return json(400, { error: "unsupported_grant_type" });
    if (!(id in expiresIn) || secret !== SECRET) {
      // a careless server echoing what it got: the service must not pass the secret on
      return json(400, { error: "invalid_client", error_description: `unknown client ${id} with secret ${secret}` });
    }
    await new Promise((r) => setTimeout(r, delayMs[id] ?? 0));
    const token = `t${++n}`;
    issued.set(token, id);
    return json(200, { access_token: token, token_type: "Bearer", expires_in: expiresIn[id] });
  });
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${port}/oauth/token`,
    requests,
    issued,
    count: (clientId: string) => requests.filter((r) => r.clientId === clientId).length,
    close: () => server.shutdown(),
  };
}

Deno.test("an endpoint behind OAuth2 gets a bearer token, reused until it expires or the receiver refuses it", async (t) => {
  const ctx = await setup("webhook_oauth2", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.2" } });
  const tokens = startTokenServer({ "reuse-client": 3600, "short-client": 1, "burst-client": 3600 }, {
    "burst-client": 300, // slow enough for the burst's attempts to all ask while the first request is out
  });
  const refused = new Set<string>();
  const secrets = new Map<string, string>(); // path -> endpoint signing secret
  const seen: { path: string; token: string; signed: boolean }[] = [];
  const receiver = startReceiver(async (arrival) => {
    const token = /^Bearer (.+)$/.exec(arrival.headers.get("authorization") ?? "")?.[1] ?? "";
    const signed = await verifySignature(arrival.raw, arrival.signature, secrets.get(arrival.path) ?? "");
    seen.push({ path: arrival.path, token, signed });
    if (!tokens.issued.has(token) || refused.has(token)) return new Response("bad token", { status: 401 });
    return new Response("ok");
  });
  const company = await newCompany(ctx);
  const oauth2 = (clientId: string, extra: Record<string, unknown> = {}) => ({
    token_url: tokens.url,
    client_id: clientId,
    client_secret: SECRET,
    scope: "webhooks:write",
    ...extra,
  });
  const arrivalsAt = (path: string) => seen.filter((s) => s.path === path);
  try {
    const created = await createEndpoint(company, `${receiver.url}/reuse`, {
      oauth2: oauth2("reuse-client"),
      enabled_events: ["identified", "payment_approved"],
    });
    secrets.set("/reuse", created.secret);

    await t.step(
      "the answers show the credentials without the client secret, and the row holds it sealed",
      async () => {
        assert.deepEqual(created.oauth2, {
          token_url: tokens.url,
          client_id: "reuse-client",
          scope: "webhooks:write",
          audience: null,
          client_auth: "client_secret_basic",
        });
        const shown = await company.get(`${ENDPOINTS}/${created.id}`);
        const listed = await company.get(ENDPOINTS);
        for (const answer of [created, shown.body, listed.body]) assert.ok(!JSON.stringify(answer).includes(SECRET));
        const [row] = await ctx.sql<{ oauth2: { sealed_client_secret: string } }[]>`
        select oauth2 from webhook_endpoints where id = ${created.id}`;
        assert.ok(isSealed(row.oauth2.sealed_client_secret));
        assert.ok(!JSON.stringify(row).includes(SECRET) && !JSON.stringify(row).includes("s3cr3t"));
      },
    );

    await t.step("the first delivery fetches a token with HTTP Basic; the next ones reuse it", async () => {
      await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
      await eventually("the first delivery", () => arrivalsAt("/reuse").length === 1);
      assert.equal(tokens.count("reuse-client"), 1);
      const [request] = tokens.requests;
      assert.equal(request.form.get("scope"), "webhooks:write");
      assert.equal(request.form.get("client_secret"), null, "the secret goes in the Basic header only");
      for (let i = 0; i < 3; i++) await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
      await eventually("three more deliveries", () => arrivalsAt("/reuse").length === 4);
      assert.equal(tokens.count("reuse-client"), 1, "one token for every delivery");
      assert.deepEqual(arrivalsAt("/reuse").map((s) => [s.token, s.signed]), Array(4).fill(["t1", true]));
    });

    await t.step(
      "a 401 from the receiver drops the token: the attempt fails, and its retry has a new one",
      async () => {
        refused.add("t1");
        await emit(ctx, company, "payment_approved", { transaction_id: crypto.randomUUID() });
        const record = await eventually("the record succeeds on its retry", async () => {
          const records = await recordsOf(company, created.id);
          const last = records.find((r) => r.type === "payment_approved");
          return last?.status === "succeeded" ? last : null;
        });
        assert.equal(record.attempts_count, 2);
        const detail = await company.get(`${EVENTS}/${record.id}`);
        assert.deepEqual(detail.body.data.attempts.map((a: { http_status: number }) => a.http_status), [401, 200]);
        assert.equal(tokens.count("reuse-client"), 2, "exactly one new token");
        assert.deepEqual(arrivalsAt("/reuse").slice(4).map((s) => s.token), ["t1", "t2"], "sent once per attempt");
      },
    );

    await t.step("a token that expires is fetched again", async () => {
      const short = await createEndpoint(company, `${receiver.url}/short`, {
        oauth2: oauth2("short-client", { client_auth: "client_secret_post" }),
        enabled_events: ["wire_created"],
      });
      secrets.set("/short", short.secret);
      await emit(ctx, company, "wire_created", {
        wire_id: crypto.randomUUID(),
        transaction_ids: [crypto.randomUUID()],
      });
      await eventually("the first delivery", () => arrivalsAt("/short").length === 1);
      const byBody = tokens.requests.filter((r) => r.form.get("client_id") === "short-client");
      assert.equal(byBody.length, 1, "client_secret_post: id and secret in the body");
      assert.equal(byBody[0].form.get("client_secret"), SECRET);
      await sleep(1_100); // the token lived 1 s, less its margin
      await emit(ctx, company, "wire_created", {
        wire_id: crypto.randomUUID(),
        transaction_ids: [crypto.randomUUID()],
      });
      await eventually("the second delivery", () => arrivalsAt("/short").length === 2);
      const [first, second] = arrivalsAt("/short");
      assert.notEqual(first.token, second.token);
      assert.ok(first.signed && second.signed);
      assert.equal(tokens.requests.filter((r) => r.form.get("client_id") === "short-client").length, 2);
    });

    await t.step("attempts in parallel that all need a token share one token request", async () => {
      const burst = await createEndpoint(company, `${receiver.url}/burst`, {
        oauth2: oauth2("burst-client"),
        enabled_events: ["payment_failed"],
        max_concurrency: 8,
      });
      secrets.set("/burst", burst.secret);
      await ctx.sql.begin(async (tx) => {
        for (let i = 0; i < 8; i++) {
          await emitEvent(tx, company.id, "payment_failed", { transaction_id: crypto.randomUUID() });
        }
      });
      await eventually("eight deliveries", () => arrivalsAt("/burst").length === 8);
      assert.equal(tokens.count("burst-client"), 1);
      assert.ok(arrivalsAt("/burst").every((s) => s.token === arrivalsAt("/burst")[0].token && s.signed));
    });

    await t.step("a refusal by the token server is a failed attempt that says why, without the secret", async () => {
      const wrong = await createEndpoint(company, `${receiver.url}/wrong`, {
        oauth2: oauth2("unknown-client"),
        enabled_events: ["document_required"],
      });
      await emit(ctx, company, "document_required", { person_id: crypto.randomUUID() });
      const record = await eventually("a failed attempt", async () => {
        const [r] = await recordsOf(company, wrong.id);
        return r?.attempts_count ? r : null;
      });
      assert.match(record.last_error!, /^oauth2 token: HTTP 400 invalid_client \(unknown client unknown-client/);
      assert.ok(!record.last_error!.includes(SECRET), record.last_error!);
      assert.match(record.last_error!, /\[client secret\]/);
      assert.equal(arrivalsAt("/wrong").length, 0, "nothing is sent without a token");
      await company.delete(`${ENDPOINTS}/${wrong.id}`);
    });

    await t.step(
      "an update keeps the secret for the same token URL, and asks for it when the URL changes",
      async () => {
        const kept = await company.put(`${ENDPOINTS}/${created.id}`, {
          oauth2: { token_url: tokens.url, client_id: "reuse-client", scope: "other" },
        });
        assert.equal(kept.status, 200, JSON.stringify(kept.body));
        assert.equal(kept.body.data.oauth2.scope, "other");
        const moved = await company.put(`${ENDPOINTS}/${created.id}`, {
          oauth2: { token_url: `${receiver.url}/elsewhere`, client_id: "reuse-client" },
        });
        assert.equal(moved.status, 422);
        assert.match(moved.body.errors.oauth2.client_secret[0], /required when token_url changes/);
        const metadata = await company.post(ENDPOINTS, {
          url: `${receiver.url}/meta`,
          oauth2: oauth2("x", { token_url: "http://169.254.169.254/token" }),
        });
        assert.equal(metadata.status, 422);
        assert.match(metadata.body.errors.oauth2.token_url[0], /link-local or cloud metadata/);
        const removed = await company.put(`${ENDPOINTS}/${created.id}`, { oauth2: null });
        assert.equal(removed.body.data.oauth2, null);
      },
    );

    await t.step("after a key rotation, reseal-secrets re-seals the client secrets with the new key", async () => {
      const previous = Uint8Array.fromHex(TEST_ENCRYPTION_KEY);
      const box = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)), [previous]);
      const rewritten = await resealOAuth2Secrets(ctx.sql, box);
      assert.ok(rewritten >= 2, `${rewritten}`);
      assert.equal(await resealOAuth2Secrets(ctx.sql, box), 0, "nothing left to do");
      const rows = await ctx.sql<{ id: string; oauth2: StoredOAuth2 }[]>`
        select id, oauth2 from webhook_endpoints where company_id = ${company.id} and oauth2 is not null`;
      for (const row of rows) {
        assert.ok(row.oauth2.sealed_client_secret.startsWith(box.currentPrefix));
        assert.equal(await openClientSecret(box, row.id, row.oauth2), SECRET);
      }
    });
  } finally {
    await ctx.close();
    await tokens.close();
    await receiver.close();
  }
});

Deno.test("the token URL passes the URL guard at every token request, and nothing reaches the receiver", async () => {
  const ctx = await setup("webhook_oauth2_guard");
  const receiver = startReceiver();
  try {
    const company = await newCompany(ctx);
    const created = await createEndpoint(company, `${receiver.url}/guarded`, {
      oauth2: { token_url: "https://auth.example.com/token", client_id: "c", client_secret: SECRET },
    });
    const [row] = await ctx.sql<EndpointRow[]>`select * from webhook_endpoints where id = ${created.id}`;
    const box = await secretBoxFor(ctx.config);
    const delivery = { id: crypto.randomUUID(), type: "identified", data: { transaction_id: crypto.randomUUID() } };
    const resolved: string[] = [];
    // a name that resolves, at delivery time, to the cloud metadata address or to a private one (DNS rebinding)
    const resolveTo = (address: string) => (name: string) => {
      resolved.push(name);
      return Promise.resolve([address]);
    };
    const metadata = await sendDelivery(box, row, delivery, {
      timeoutMs: 2_000,
      allowPrivateUrls: true,
      resolve: resolveTo("169.254.169.254"),
      tokens: new TokenCache(),
    });
    assert.equal(
      metadata.responseBody,
      "oauth2 token: refused: link-local or cloud metadata address (no setting allows it)",
    );
    const privately = await sendDelivery(box, row, delivery, {
      timeoutMs: 2_000,
      allowPrivateUrls: false,
      resolve: resolveTo("10.0.0.7"),
      tokens: new TokenCache(),
    });
    assert.match(privately.responseBody, /^oauth2 token: refused: private address/);
    assert.deepEqual(resolved, ["auth.example.com", "auth.example.com"], "the token URL's name, resolved once each");
    assert.equal(receiver.at("/guarded").length, 0);
  } finally {
    await ctx.close();
    await receiver.close();
  }
});
