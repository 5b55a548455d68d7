/**
 * What an operator reads: /readyz, /metrics (requests, the queue, deliveries and their latency), the OpenAPI document
 * holding every route, and the /docs page under its CSP.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { seqId, startReceiver } from "../support/webhook_receiver.ts";
import project from "../../deno.json" with { type: "json" };

/** The release an instance says it runs: the version in deno.json, which CHANGELOG.md names. */
const version = project.version;

Deno.test("operations: readiness, metrics, OpenAPI document and docs page", async (t) => {
  const ctx = await setup("operations");

  await t.step("readiness reports the database and the worker", async () => {
    // this instance should run a worker (WORKER=on) but none was started
    const notReady = await ctx.app.request("/readyz");
    assert.deepEqual([notReady.status, await notReady.json()], [503, {
      status: "not_ready",
      database: "ok",
      worker: "stopped",
      version,
    }]);
    const withWorker = await setup("operations_worker", { worker: true });
    const ready = await withWorker.app.request("/readyz");
    assert.deepEqual([ready.status, await ready.json()], [200, {
      status: "ready",
      database: "ok",
      worker: "running",
      version,
    }]);
    await withWorker.close();
    const apiOnly = await setup("operations_api_only", { env: { WORKER: "off" } });
    const off = await apiOnly.app.request("/readyz");
    assert.deepEqual([off.status, await off.json()], [200, {
      status: "ready",
      database: "ok",
      worker: "off",
      version,
    }]);
    await apiOnly.close();
  });

  await t.step("metrics count requests by route and status, and show the queue depth", async () => {
    const company = await newCompany(ctx);
    await company.get(`/api/v1/subject/people/${crypto.randomUUID()}`);
    const res = await ctx.app.request("/metrics");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /http_requests_total\{method="GET",route="\/api\/v1\/subject\/people\/:id",status="404"\} 1/);
    assert.match(
      text,
      /http_request_duration_seconds_bucket\{method="GET",route="\/api\/v1\/subject\/people\/:id",le="\+Inf"\} 1/,
    );
    assert.match(text, /# TYPE job_queue_depth gauge/);
    assert.match(text, /# TYPE webhook_deliveries_total counter/);
  });

  await t.step("every registered route is in the OpenAPI document", async () => {
    const doc = await (await ctx.app.request("/openapi.json")).json();
    assert.equal(doc.openapi, "3.1.0");
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, "bearer");
    // pages for people, not API operations
    const undocumented = ["/openapi.json", "/docs", "/docs/assets/:file", "/console", "/console/assets/:file"]
      .concat("/console/portal/:id", "/console/portal/:id/logo", "/console/portal/:id/brand.css", "/console/portal.js");
    const routes = ctx.app.routes
      .filter((r) => r.method !== "ALL" && !undocumented.includes(r.path))
      .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replace(/:(\w+)/g, "{$1}") }));
    assert.ok(routes.length > 10);
    const missing = routes.filter((r) => !doc.paths[r.path]?.[r.method]);
    assert.deepEqual(missing, []);
    for (const path of ["/healthz", "/readyz", "/metrics"]) assert.deepEqual(doc.paths[path].get.security, [], path);
    const post = doc.paths["/api/v1/subject/people"].post;
    assert.ok(post.requestBody.content["application/json"].schema);
    assert.ok(post.responses["201"] && post.responses["422"]);
  });

  await t.step("the docs page and its assets are served locally, under a CSP with no inline script", async () => {
    const page = await ctx.app.request("/docs");
    assert.equal(page.status, 200);
    const csp = page.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const html = await page.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length > 0);
    for (const [, attrs, inline] of scripts) {
      assert.match(attrs, /src="\/docs\/assets\//);
      assert.equal(inline.trim(), "", "no inline script: the policy would block it");
    }
    const start = await ctx.app.request("/docs/assets/docs.js");
    assert.equal(start.status, 200);
    assert.match(start.headers.get("content-type") ?? "", /javascript/);
    const script = await start.text();
    assert.match(script, /SwaggerUIBundle\(/);
    // a token given to Authorize is not kept in localStorage (tests/console/console_test.ts tries it in a browser)
    assert.match(script, /persistAuthorization: false/);
    assert.match(script, /localStorage\.removeItem\("authorized"\)/);
    for (const asset of ["/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"]) {
      const res = await ctx.app.request(asset);
      assert.equal(res.status, 200, asset);
      assert.ok((await res.arrayBuffer()).byteLength > 1000, asset);
    }
    const unknown = await ctx.app.request("/docs/assets/other.js");
    assert.deepEqual([unknown.status, await unknown.json()], [404, { errors: { detail: "Not Found" } }]);
  });

  await ctx.close();
});

Deno.test("metrics count webhook deliveries by outcome and their latency", async () => {
  const ctx = await setup("operations_deliveries", { worker: true });
  const receiver = startReceiver(() => new Response("ok"));
  try {
    const company = await newCompany(ctx);
    const endpoint = await company.post("/api/v2/notifications/endpoints", { url: `${receiver.url}/m` });
    assert.equal(endpoint.status, 201);
    const before = await (await ctx.app.request("/metrics")).text();
    const succeeded = (text: string) =>
      Number(/webhook_deliveries_total\{outcome="succeeded"\} (\d+)/.exec(text)?.[1] ?? 0);
    for (let i = 0; i < 3; i++) {
      await ctx.sql.begin((tx) => emitEvent(tx, company.id, "payment_approved", { transaction_id: seqId(i) }));
    }
    const after = await eventually("three deliveries counted", async () => {
      const text = await (await ctx.app.request("/metrics")).text();
      return succeeded(text) - succeeded(before) === 3 ? text : null;
    });
    assert.match(after, /webhook_event_to_delivery_seconds_count (\d+)/);
    assert.match(after, /webhook_delivery_duration_seconds_bucket\{le="\+Inf"\} \d+/);
  } finally {
    await receiver.close();
    await ctx.close();
  }
});
