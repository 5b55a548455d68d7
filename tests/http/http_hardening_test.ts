/**
 * What every answer of the HTTP layer does whatever the route: security headers, 405 with Allow, bodies refused before
 * they are read, slow bodies (408), /metrics and its token, MAX_INFLIGHT_REQUESTS and health checks under load.
 */
import assert from "node:assert/strict";
import { newCompany, setup, type TestContext } from "../support/helpers.ts";
import { operationsRoutes } from "../../routes/operations.ts";
import type { Sql } from "../../domain/infra/db.ts";

const json = async (res: Response) => [res.status, await res.json()];

/** The app on a real socket, for what only a real connection shows: when the body is read, and how long it may take. */
function serve(ctx: TestContext) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, ctx.app.fetch);
  return { port: server.addr.port, close: () => server.shutdown() };
}

/**
 * Sends `head` (request line and headers) and `body` over a raw connection and returns what comes back within
 * `timeoutMs`, with the time it took: "" when the server has not answered by then.
 */
async function rawExchange(port: number, head: string, body: string, timeoutMs: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const started = Date.now();
  try {
    await conn.write(new TextEncoder().encode(head + body));
    const buf = new Uint8Array(4096);
    const read = conn.read(buf);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([read, new Promise<null>((r) => timer = setTimeout(() => r(null), timeoutMs))]);
    clearTimeout(timer);
    return { text: n ? new TextDecoder().decode(buf.subarray(0, n)) : "", ms: Date.now() - started };
  } finally {
    conn.close();
  }
}

Deno.test("HTTP hardening: headers, methods, metrics, bodies and load", async (t) => {
  const ctx = await setup("http_hardening", { env: { BODY_TIMEOUT_MS: "400" } });
  const company = await newCompany(ctx);
  try {
    await t.step("every answer carries X-Content-Type-Options: nosniff", async () => {
      const answers = [
        await ctx.app.request("/healthz"),
        await ctx.app.request("/nothing-here"),
        await ctx.app.request("/api/v1/subject/people"),
        await ctx.app.request("/healthz", { method: "DELETE" }),
        await ctx.app.request("/docs"),
      ];
      for (const res of answers) {
        await res.body?.cancel();
        assert.equal(res.headers.get("x-content-type-options"), "nosniff", `${res.status} ${res.url}`);
      }
      assert.equal((await company.get("/api/v1/subject/people")).headers.get("x-content-type-options"), "nosniff");
    });

    await t.step("authenticated answers, and those carrying a signing secret, are never cached", async () => {
      const listed = await company.get("/api/v1/subject/people");
      assert.equal(listed.headers.get("cache-control"), "no-store");
      const endpoint = await company.post("/api/v2/notifications/endpoints", { url: "http://127.0.0.1:9/hooks" });
      assert.equal(endpoint.status, 201);
      assert.match(endpoint.body.data.secret, /^[0-9a-f]{64}$/);
      assert.equal(endpoint.headers.get("cache-control"), "no-store");
      const rotated = await company.post(`/api/v2/notifications/endpoints/${endpoint.body.data.id}/rotate_secret`);
      assert.equal(rotated.headers.get("cache-control"), "no-store");
      const refused = await ctx.app.request("/api/v1/subject/people");
      await refused.body?.cancel();
      assert.equal(refused.headers.get("cache-control"), "no-store");
      // static assets keep their own caching
      const asset = await ctx.app.request("/docs/assets/swagger-ui.css");
      await asset.body?.cancel();
      assert.equal(asset.headers.get("cache-control"), "public, max-age=86400");
    });

    await t.step("a wrong method on a known path answers 405 with Allow; an unknown path stays 404", async () => {
      const health = await ctx.app.request("/healthz", { method: "DELETE" });
      assert.deepEqual(await json(health), [405, { errors: { detail: "Method Not Allowed" } }]);
      assert.equal(health.headers.get("allow"), "GET, HEAD");

      const people = await company.call("PATCH", "/api/v1/subject/people", {});
      assert.deepEqual([people.status, people.body], [405, { errors: { detail: "Method Not Allowed" } }]);
      assert.equal(people.headers.get("allow"), "GET, HEAD, POST");

      const person = await company.call("DELETE", `/api/v1/subject/people/${crypto.randomUUID()}`);
      assert.equal(person.status, 405);
      assert.equal(person.headers.get("allow"), "GET, HEAD, PUT");

      const docs = await ctx.app.request("/docs", { method: "POST" });
      assert.deepEqual([docs.status, docs.headers.get("allow")], [405, "GET, HEAD"]);
      await docs.body?.cancel();

      const unknown = await company.call("PATCH", "/api/v1/nothing-here");
      assert.deepEqual([unknown.status, unknown.body], [404, { errors: { detail: "Not Found" } }]);
      // without a token the route map is not revealed: 401 first
      const anonymous = await ctx.app.request("/api/v1/subject/people", { method: "PATCH" });
      assert.deepEqual(await json(anonymous), [401, { errors: { detail: "Unauthorized" } }]);
    });

    await t.step("an unauthenticated 20 MB POST is refused without its body being read", async () => {
      const upload = (path: string) => {
        const sent = { bytes: 0 };
        const chunk = new Uint8Array(64 * 1024).fill(0x20);
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent.bytes >= 20 * 1024 * 1024) return controller.close();
            sent.bytes += chunk.length;
            controller.enqueue(chunk);
          },
        });
        const init = { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" };
        return { sent, response: ctx.app.request(path, init as RequestInit) };
      };
      const api = upload("/api/v1/subject/people");
      assert.deepEqual(await json(await api.response), [401, { errors: { detail: "Unauthorized" } }]);
      assert.ok(api.sent.bytes <= 128 * 1024, `read ${api.sent.bytes} bytes of the body`);
      // outside /api no route takes a body: it is not read either
      const health = upload("/healthz");
      assert.deepEqual(await json(await health.response), [405, { errors: { detail: "Method Not Allowed" } }]);
      assert.ok(health.sent.bytes <= 128 * 1024, `read ${health.sent.bytes} bytes of the body`);
    });

    const server = serve(ctx);
    try {
      await t.step("over a socket, an anonymous chunked upload is answered 401 before the rest is sent", async () => {
        const head = "POST /api/v1/subject/people HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          "Transfer-Encoding: chunked\r\n\r\n";
        const { text } = await rawExchange(server.port, head, "10000\r\n" + " ".repeat(0x10000) + "\r\n", 5_000);
        assert.match(text, /^HTTP\/1\.1 401 /);
      });

      await t.step("a body that does not arrive within BODY_TIMEOUT_MS answers 408", async () => {
        const head = `POST /api/v1/subject/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${company.token}\r\n` +
          "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
        const { text, ms } = await rawExchange(server.port, head, '{"person": {', 10_000);
        assert.match(text, /^HTTP\/1\.1 408 /);
        assert.match(text, /\{"errors":\{"detail":"Request Timeout"\}\}/);
        assert.ok(ms >= 350, `answered after ${ms} ms, before the timeout`);
      });
    } finally {
      await server.close();
    }

    await t.step("/metrics is open while METRICS_TOKEN is unset", async () => {
      const res = await ctx.app.request("/metrics");
      assert.equal(res.status, 200);
      assert.match(await res.text(), /http_requests_total/);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("with METRICS_TOKEN set, /metrics answers only that bearer token", async () => {
  const metricsToken = "metrics-token-0123456789abcdef0123456789";
  const ctx = await setup("http_hardening_metrics", { env: { METRICS_TOKEN: metricsToken } });
  try {
    const company = await newCompany(ctx);
    const unauthorized = [401, { errors: { detail: "Unauthorized" } }];
    for (
      const authorization of [
        undefined,
        "Bearer wrong",
        `Bearer ${metricsToken}x`,
        `Bearer ${company.token}`,
        metricsToken,
      ]
    ) {
      const res = await ctx.app.request("/metrics", { headers: authorization ? { authorization } : {} });
      assert.deepEqual(await json(res), unauthorized, String(authorization));
    }
    const res = await ctx.app.request("/metrics", { headers: { authorization: `Bearer ${metricsToken}` } });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /http_requests_total/);
  } finally {
    await ctx.close();
  }
});

Deno.test("beyond MAX_INFLIGHT_REQUESTS a request answers 503 with Retry-After, liveness too", async () => {
  const ctx = await setup("http_hardening_inflight", { env: { MAX_INFLIGHT_REQUESTS: "2" } });
  try {
    const company = await newCompany(ctx);
    // two uploads whose bodies stay open hold both slots until they are released
    const releases: (() => void)[] = [];
    const slow = [0, 1].map(() => {
      const body = new ReadableStream<Uint8Array>({ start: (c) => void releases.push(() => c.close()) });
      return ctx.app.request("/api/v1/subject/people", {
        method: "POST",
        headers: { authorization: `Bearer ${company.token}`, "content-type": "application/json" },
        body,
        duplex: "half",
      } as RequestInit);
    });
    await new Promise((r) => setTimeout(r, 50));

    const busy = await company.get("/api/v1/subject/people");
    assert.deepEqual([busy.status, busy.body], [503, { errors: { detail: "Service Unavailable" } }]);
    assert.equal(busy.headers.get("retry-after"), "1");
    // /healthz asks the database: exempt, a flood of it held the connections a pay-in waits for
    const health = await ctx.app.request("/healthz");
    assert.deepEqual(await json(health), [503, { errors: { detail: "Service Unavailable" } }]);
    assert.equal(health.headers.get("retry-after"), "1");

    releases.forEach((release) => release());
    for (const res of await Promise.all(slow)) assert.equal((await json(res))[0], 400); // an empty JSON body
    assert.equal((await company.get("/api/v1/subject/people")).status, 200);
    assert.deepEqual(await json(await ctx.app.request("/healthz")), [200, { status: "ok" }]);
  } finally {
    await ctx.close();
  }
});

Deno.test("a thousand health checks at once ask the database one check at a time", async () => {
  const ctx = await setup("http_hardening_health_flood");
  try {
    // the real database, with each statement counted on its way to it
    let statements = 0;
    const counted = ((...args: Parameters<Sql>) => (statements++, ctx.sql(...args))) as unknown as Sql;
    const routes = operationsRoutes({ ...ctx.deps, sql: counted });
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, async () => await json(await routes.request("/healthz"))),
    );
    assert.deepEqual(answers.filter((a) => a[0] !== 200), []);
    assert.ok(statements <= 5, `${statements} statements for 1,000 checks`);
    // a check that arrives after them asks again: the answer is never an old one
    const before = statements;
    assert.deepEqual(await json(await routes.request("/healthz")), [200, { status: "ok" }]);
    assert.equal(statements, before + 1);
  } finally {
    await ctx.close();
  }
});
