/**
 * Secrets never echoed (docs/webhooks.md, "Secrets never echoed"), against servers that echo what they get: a token
 * server that refuses the client and repeats its request (the body for `client_secret_post`, the Authorization header
 * for `client_secret_basic`), and a receiver that repeats its request's headers. Neither `last_error` nor an attempt's
 * answer through the API, nor a line of the service's log, carries the secret in any encoding.
 */
import assert from "node:assert/strict";
import { connect } from "../../domain/infra/db.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { dropDatabase, eventually, freshDatabase, newCompany, setup } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { createEndpoint, createEndpointAt, type DeliveryRecord, ENDPOINTS, EVENTS } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";

/** The secret of the issue: a space and the three characters a form body encodes. */
const SECRET = "S3cr3t value+&=x";
const formEncoded = (v: string) => encodeURIComponent(v).replace(/%20/g, "+");
const base64 = (v: string) => new TextEncoder().encode(v).toBase64();

/** Every form of `secret` that must not be read anywhere, sent with `clientId` in a Basic credential or alone. */
function echoes(secret: string, clientId: string): string[] {
  return [
    secret,
    formEncoded(secret),
    encodeURIComponent(secret),
    encodeURIComponent(secret).toLowerCase(),
    JSON.stringify(secret).slice(1, -1),
    btoa(`${formEncoded(clientId)}:${formEncoded(secret)}`),
    base64(`${clientId}:${secret}`),
    "S3cr3t",
  ];
}

/**
 * A token server that refuses every client and says what it got: for HTTP Basic the header and what it decodes to,
 * for a body the body, in `error_description` as careless servers do.
 */
function startEchoingTokenServer() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.text();
    const authorization = req.headers.get("authorization");
    const said = authorization ? `${authorization} = ${atob(authorization.slice("Basic ".length))}` : body;
    return Response.json({ error: "invalid_client", error_description: `unknown client: ${said}` }, { status: 401 });
  });
  const { port } = server.addr as Deno.NetAddr;
  return { url: `http://127.0.0.1:${port}/oauth/token`, close: () => server.shutdown() };
}

Deno.test("a token server echoing its request: neither last_error nor the log carries the secret", async (t) => {
  const url = await freshDatabase("webhook_secret_echoes");
  const tokens = startEchoingTokenServer();
  const receiver = startReceiver();
  // LOG_LEVEL left unset: the level an operator runs at, which logs every failed attempt
  const service = await startService(url, { LOG_LEVEL: undefined, WEBHOOK_RETRY_SCHEDULE: "0.1" }, { logs: true });
  const sql = connect(url, { max: 1 });
  try {
    const company = await httpCompany();
    const call = (method: string, path: string) => company.call(service.base, method, path);
    for (const clientAuth of ["client_secret_post", "client_secret_basic"] as const) {
      await t.step(clientAuth, async () => {
        const clientId = `echo ${clientAuth}`;
        const endpoint = await createEndpointAt(company, service.base, `${receiver.url}/${clientAuth}`, {
          oauth2: { token_url: tokens.url, client_id: clientId, client_secret: SECRET, client_auth: clientAuth },
          enabled_events: ["identified"],
        });
        await sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() }));
        const record: DeliveryRecord = await eventually("three failed attempts", async () => {
          const [r] = (await call("GET", `${EVENTS}?endpoint_id=${endpoint.id}`)).body.data;
          return r?.attempts_count >= 3 ? r : null;
        });
        const detail = (await call("GET", `${EVENTS}/${record.id}`)).body.data;
        const lines = await eventually("the attempts' log lines", () => {
          const failed = service.logs().filter((l) =>
            l.msg === "webhook attempt failed" && l.endpoint_id === endpoint.id
          );
          return failed.length >= 3 ? failed : null;
        });
        assert.match(
          record.last_error!,
          /^oauth2 token: HTTP 401 invalid_client \(unknown client: .*\[client secret\]/,
        );
        const seen = JSON.stringify({ record, detail, lines, all: service.logs() });
        for (const echo of echoes(SECRET, clientId)) assert.ok(!seen.includes(echo), `${echo} in ${record.last_error}`);
        assert.equal(receiver.at(`/${clientAuth}`).length, 0, "no token: nothing sent to the receiver");
      });
    }
  } finally {
    await service.stop();
    await sql.end();
    await dropDatabase(url);
    await tokens.close();
    await receiver.close();
  }
});

Deno.test("a receiver echoing its request's headers: the answer recorded holds no secret header value", async () => {
  const ctx = await setup("webhook_secret_echoes_receiver", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "60" } });
  const receiver = startReceiver((arrival) => {
    const headers = Object.fromEntries(arrival.headers);
    // as JSON, then as a query string of the raw values: two encodings in one answer
    return new Response(`${JSON.stringify(headers)}\n${new URLSearchParams(headers)}`, { status: 400 });
  });
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${receiver.url}/echo`, {
      secret_headers: { "X-Api-Key": SECRET },
      headers: { "X-Tenant": "acme" },
      enabled_events: ["identified"],
    });
    await ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: crypto.randomUUID() }));
    const record = await eventually("a failed attempt", async () => {
      const [r] = (await company.get(`${EVENTS}?endpoint_id=${endpoint.id}`)).body.data;
      return r?.attempts_count ? r : null;
    });
    const [attempt] = (await company.get(`${EVENTS}/${record.id}`)).body.data.attempts;
    assert.equal(attempt.http_status, 400);
    assert.equal(receiver.at("/echo")[0].headers.get("x-api-key"), SECRET, "the receiver did get the header");
    assert.match(attempt.response_body, /"x-api-key":"\[secret header X-Api-Key\]"/);
    assert.match(attempt.response_body, /"x-tenant":"acme"/, "the rest of the answer is kept");
    assert.match(attempt.response_body, /x-api-key=\[secret header X-Api-Key\]/);
    const seen = JSON.stringify({ record, attempt, endpoint: (await company.get(`${ENDPOINTS}/${endpoint.id}`)).body });
    for (const echo of echoes(SECRET, "")) assert.ok(!seen.includes(echo), `${echo} in ${attempt.response_body}`);
  } finally {
    await ctx.close();
    await receiver.close();
  }
});
