/**
 * Custom headers per endpoint (docs/webhooks.md, "Custom headers"): a receiver on loopback that verifies the
 * signature sees them on every attempt, test events included; names the service owns are refused by name; secret
 * values are stored sealed, shown masked, kept when sent back masked, and still sent after a key rotation.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createSecretBox } from "../../domain/infra/secret_box.ts";
import { maskSecret, refusedHeaderName, resealCustomHeaders } from "../../domain/webhooks/endpoints/custom_headers.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, seqId, startReceiver } from "../support/webhook_receiver.ts";

Deno.test("header names the service owns or that are hop-by-hop are refused, whatever their case", () => {
  for (const name of ["Webhook-Id", "webhook-anything", "Service-Signature", "CONTENT-TYPE", "Content-Length"]) {
    assert.match(refusedHeaderName(name) ?? "", /^cannot be set/, name);
  }
  for (const name of ["Host", "Authorization", "traceparent", "Connection", "Transfer-Encoding", "TE", "Upgrade"]) {
    assert.match(refusedHeaderName(name) ?? "", /^cannot be set/, name);
  }
  for (const name of ["Keep-Alive", "Proxy-Authorization", "proxy-anything"]) {
    assert.match(refusedHeaderName(name) ?? "", /^cannot be set/, name);
  }
  assert.match(refusedHeaderName("X Tenant") ?? "", /^is not a header name/);
  assert.match(refusedHeaderName("X-Ténant") ?? "", /^is not a header name/);
  assert.match(refusedHeaderName("x".repeat(65)) ?? "", /^is too long/);
  for (const name of ["X-Tenant", "X-Api-Key", "x".repeat(64), "User-Agent", "Cookie", "A!#$%&'*+-.^_`|~1"]) {
    assert.equal(refusedHeaderName(name), null, name);
  }
});

Deno.test("a secret is shown as **** and its last 4 characters only when it has 16 or more", () => {
  assert.equal(maskSecret("k_live_0123456789abcdef"), "****cdef");
  assert.equal(maskSecret("0123456789abcdef"), "****cdef");
  assert.equal(maskSecret("0123456789abcde"), "****");
  assert.equal(maskSecret("x"), "****");
});

Deno.test("custom headers: a receiver verifying the signature sees them on every attempt", async (t) => {
  const ctx = await setup("custom_headers", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  // each receiver path knows the endpoint's signing secret, as the integrator would, and answers 204 only to a
  // delivery it verified: a record that succeeded is one whose signature held with the custom headers on
  const secrets = new Map<string, string>();
  const rx = startReceiver((a) => {
    const secret = secrets.get(a.path);
    if (!secret) return new Response(null, { status: 400 });
    try {
      new Webhook(secret, { format: "raw" }).verify(a.raw, Object.fromEntries(a.headers));
      return new Response(null, { status: 204 });
    } catch {
      return new Response(null, { status: 400 });
    }
  });
  const API_KEY = "k_live_0123456789abcdef";
  const company = await newCompany(ctx);
  const answers: string[] = [];
  const arrivalsAt = async (path: string, count: number): Promise<Arrival[]> => {
    await eventually(`${count} arrival(s) at ${path}`, () => rx.at(path).length >= count);
    return rx.at(path);
  };
  const emit = (c: Company, n: number) =>
    ctx.sql.begin((tx) => emitEvent(tx, c.id, "identified", { transaction_id: seqId(n) }));
  const succeeded = (c: Company, id: string, count: number) =>
    eventually(
      `${count} record(s) succeeded`,
      async () => (await recordsOf(c, id)).filter((d) => d.status === "succeeded").length >= count,
    );
  // deno-lint-ignore no-explicit-any
  let endpoint: any;
  try {
    await t.step("created with a plain and a secret header: the secret is shown masked", async () => {
      endpoint = await createEndpoint(company, `${rx.url}/acme`, {
        headers: { "X-Tenant": "acme", "X-Region": "br-south" },
        secret_headers: { "X-Api-Key": API_KEY },
      });
      answers.push(JSON.stringify(endpoint));
      secrets.set("/acme", endpoint.secret);
      assert.deepEqual(endpoint.headers, { "X-Tenant": "acme", "X-Region": "br-south" });
      assert.deepEqual(endpoint.secret_headers, { "X-Api-Key": "****cdef" });
      const shown = await company.get(`${ENDPOINTS}/${endpoint.id}`);
      const listed = await company.get(ENDPOINTS);
      answers.push(JSON.stringify(shown.body), JSON.stringify(listed.body));
      assert.deepEqual(shown.body.data.secret_headers, { "X-Api-Key": "****cdef" });
      assert.deepEqual(listed.body.data[0].headers, endpoint.headers);

      const plain = await createEndpoint(await newCompany(ctx), `${rx.url}/plain`);
      assert.deepEqual([plain.headers, plain.secret_headers], [{}, {}]);
    });

    await t.step("every attempt carries them, and the signature verifies", async () => {
      await emit(company, 1);
      const [arrival] = await arrivalsAt("/acme", 1);
      await succeeded(company, endpoint.id, 1);
      assert.equal(arrival.headers.get("x-tenant"), "acme");
      assert.equal(arrival.headers.get("x-region"), "br-south");
      assert.equal(arrival.headers.get("x-api-key"), API_KEY);
      assert.equal(arrival.headers.get("content-type"), "application/json");
      assert.ok(arrival.signature, "service-signature is still the service's");
    });

    await t.step("a test event carries them too", async () => {
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, { type: "identified" });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const [, test] = await arrivalsAt("/acme", 2);
      await succeeded(company, endpoint.id, 2);
      assert.equal(test.headers.get("x-api-key"), API_KEY);
      assert.equal(test.headers.get("x-tenant"), "acme");
    });

    await t.step("a replay of what it missed while disabled carries them too", async () => {
      const since = new Date(Date.now() - 1000).toISOString();
      assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
      await emit(company, 100);
      assert.equal((await company.post(`${ENDPOINTS}/${endpoint.id}/enable`)).status, 200);
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/recover`, { since, include_skipped: true });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.data.skipped, 1);
      const [, , replayed] = await arrivalsAt("/acme", 3);
      await succeeded(company, endpoint.id, 3);
      assert.equal(replayed.body.data.transaction_id, seqId(100));
      assert.equal(replayed.headers.get("x-api-key"), API_KEY);
      assert.equal(replayed.headers.get("x-tenant"), "acme");
    });

    await t.step("names the service owns are refused with 422, each under its name", async () => {
      const res = await company.post(ENDPOINTS, {
        url: `${rx.url}/refused`,
        headers: {
          "Content-Type": "text/plain",
          "Webhook-Id": "msg_1",
          "X-Ok": "fine",
          "Bad Name": "x",
          "X-Crlf": "a\r\nInjected: yes",
        },
        secret_headers: { Authorization: "Bearer t", "Proxy-Authorization": "p", "x-ok": "again" },
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      const { headers, secret_headers } = res.body.errors;
      assert.deepEqual(Object.keys(headers).sort(), ["Bad Name", "Content-Type", "Webhook-Id", "X-Crlf"]);
      assert.match(headers["Content-Type"][0], /^cannot be set/);
      assert.match(headers["Webhook-Id"][0], /webhook-\*/);
      assert.match(headers["X-Crlf"][0], /no line breaks/);
      assert.deepEqual(Object.keys(secret_headers).sort(), ["Authorization", "Proxy-Authorization", "x-ok"]);
      assert.match(secret_headers["x-ok"][0], /is given twice \(as headers\.X-Ok\)/);

      const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"]));
      const tooMany = await company.post(ENDPOINTS, { url: `${rx.url}/many`, headers: many });
      assert.equal(tooMany.status, 422);
      assert.match(tooMany.body.errors.headers[0], /maximum is 20/);
      const long = await company.post(ENDPOINTS, { url: `${rx.url}/long`, headers: { "X-Long": "v".repeat(1025) } });
      assert.equal(long.status, 422);
      assert.match(long.body.errors.headers["X-Long"][0], /maximum is 1024/);
      const big = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`X-B${i}`, "v".repeat(1000)]));
      const tooBig = await company.post(ENDPOINTS, { url: `${rx.url}/big`, secret_headers: big });
      assert.equal(tooBig.status, 422);
      assert.match(tooBig.body.errors.headers[0], /too long together \(maximum is 8192/);
      const wrongType = await company.post(ENDPOINTS, { url: `${rx.url}/type`, headers: { "X-N": 1 } });
      assert.equal(wrongType.status, 422, JSON.stringify(wrongType.body));
      assert.ok(wrongType.body.errors.headers["X-N"], JSON.stringify(wrongType.body));

      // an update giving one map is checked against the other as stored
      const clash = await company.put(`${ENDPOINTS}/${endpoint.id}`, { headers: { "x-api-key": "plain" } });
      assert.equal(clash.status, 422, JSON.stringify(clash.body));
      assert.match(clash.body.errors.secret_headers["X-Api-Key"][0], /is given twice \(as headers\.x-api-key\)/);
      const refusedUpdate = await company.put(`${ENDPOINTS}/${endpoint.id}`, { headers: { Host: "evil" } });
      assert.equal(refusedUpdate.status, 422);
      assert.match(refusedUpdate.body.errors.headers.Host[0], /^cannot be set/);
    });

    await t.step("the secret is stored sealed and never in an answer", async () => {
      assert.ok(answers.every((a) => !a.includes(API_KEY)), "the secret value in an answer");
      const [row] = await ctx.sql`
        select custom_headers, sealed_custom_headers from webhook_endpoints where id = ${endpoint.id}`;
      assert.deepEqual(row.custom_headers, { "X-Tenant": "acme", "X-Region": "br-south" });
      assert.match(row.sealed_custom_headers["X-Api-Key"], /^enc:v1:[0-9a-f]{8}:/);
      assert.ok(!JSON.stringify(row).includes(API_KEY));
      assert.ok(!JSON.stringify(row).includes(API_KEY.slice(0, 12)));
    });

    await t.step("an update replaces a map; a secret sent back masked keeps its value", async () => {
      // the endpoint as read, sent back as it is, with one plain header changed
      const shown = (await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data;
      const res = await company.put(`${ENDPOINTS}/${endpoint.id}`, {
        headers: { "X-Tenant": "acme-2" },
        secret_headers: shown.secret_headers,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      answers.push(JSON.stringify(res.body));
      assert.deepEqual(res.body.data.headers, { "X-Tenant": "acme-2" }, "X-Region went with the map it was in");
      assert.deepEqual(res.body.data.secret_headers, { "X-Api-Key": "****cdef" });
      await emit(company, 2);
      const [, , , afterUpdate] = await arrivalsAt("/acme", 4);
      assert.equal(afterUpdate.headers.get("x-api-key"), API_KEY, "the masked value kept the stored one");
      assert.equal(afterUpdate.headers.get("x-tenant"), "acme-2");
      assert.equal(afterUpdate.headers.get("x-region"), null);

      // fields left out leave the headers as they are; a new secret value replaces the old one
      const other = await company.put(`${ENDPOINTS}/${endpoint.id}`, { max_concurrency: 5 });
      assert.deepEqual(other.body.data.headers, { "X-Tenant": "acme-2" });
      const replaced = await company.put(`${ENDPOINTS}/${endpoint.id}`, {
        secret_headers: { "X-Api-Key": "k_live_fedcba9876543210" },
      });
      assert.deepEqual(replaced.body.data.secret_headers, { "X-Api-Key": "****3210" });
      await succeeded(company, endpoint.id, 4);
    });

    await t.step("secret headers reseal with a new encryption key and are still sent", async () => {
      const serviceKey = ctx.config.secretEncryptionKey!;
      const newKey = crypto.getRandomValues(new Uint8Array(32));
      const rotatedBox = await createSecretBox(newKey, [serviceKey]);
      assert.ok(await resealCustomHeaders(ctx.sql, rotatedBox) >= 1);
      const [row] = await ctx.sql`select sealed_custom_headers from webhook_endpoints where id = ${endpoint.id}`;
      assert.ok(row.sealed_custom_headers["X-Api-Key"].startsWith(rotatedBox.currentPrefix));
      assert.equal(await resealCustomHeaders(ctx.sql, rotatedBox), 0, "a second pass finds nothing to do");
      // the new key alone opens it: the service would show it from now on
      const alone = await createSecretBox(newKey);
      assert.equal(
        await alone.open(row.sealed_custom_headers["X-Api-Key"], `webhook_endpoints:${endpoint.id}:header:x-api-key`),
        "k_live_fedcba9876543210",
      );
      // back under the service's own key, which the worker delivers with
      assert.ok(await resealCustomHeaders(ctx.sql, await createSecretBox(serviceKey, [newKey])) >= 1);
      await emit(company, 3);
      const [, , , , afterReseal] = await arrivalsAt("/acme", 5);
      assert.equal(afterReseal.headers.get("x-api-key"), "k_live_fedcba9876543210");
      await succeeded(company, endpoint.id, 5);
    });

    await t.step("null removes every header of a map", async () => {
      const res = await company.put(`${ENDPOINTS}/${endpoint.id}`, { headers: null, secret_headers: {} });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual([res.body.data.headers, res.body.data.secret_headers], [{}, {}]);
      await emit(company, 4);
      const [, , , , , afterRemoval] = await arrivalsAt("/acme", 6);
      assert.equal(afterRemoval.headers.get("x-api-key"), null);
      assert.equal(afterRemoval.headers.get("x-tenant"), null);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
