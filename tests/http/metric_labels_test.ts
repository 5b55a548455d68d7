/**
 * What an anonymous client (or a tenant) sends never becomes a label of `GET /metrics`: a flood of made-up methods
 * and paths leaves the number of series where the closed label sets put it, and the answers stay 404 and 405
 * (docs/limits.md, "What an anonymous request can grow").
 */
import assert from "node:assert/strict";
import { Counter, MAX_SERIES } from "../../domain/infra/metrics.ts";
import { newCompany, setup } from "../support/helpers.ts";

/** The labelled series of the request metrics in a `/metrics` body (one line per series for each). */
function requestSeries(body: string): string[] {
  return body.split("\n").filter((line) =>
    line.startsWith("http_requests_total{") || line.startsWith("http_request_duration_seconds_count{")
  ).map((line) => line.slice(0, line.lastIndexOf(" ")));
}

const CLOSED = {
  method: new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "other"]),
  status: /^(\d{3}|[1-5]xx)$/,
};

Deno.test("a flood of made-up methods and paths adds a bounded number of metric series", async () => {
  const ctx = await setup("metric_labels");
  try {
    const company = await newCompany(ctx);
    const metrics = async () => {
      const res = await ctx.app.request("/metrics");
      assert.equal(res.status, 200);
      return await res.text();
    };
    const before = new Set(requestSeries(await metrics()));
    const madeUp = () => `X${crypto.randomUUID().replaceAll("-", "").slice(0, 12).toUpperCase()}`;
    const answers: Record<string, number> = {};
    const seen = (kind: string, status: number) =>
      answers[`${kind} ${status}`] = (answers[`${kind} ${status}`] ?? 0) + 1;
    const sent: string[] = [];
    const FLOOD = 3_000;
    for (let i = 0; i < FLOOD; i += 100) {
      await Promise.all(Array.from({ length: 100 }, async (_, j) => {
        const method = madeUp();
        const path = `/${madeUp().toLowerCase()}/${i + j}`;
        sent.push(method, path);
        // a made-up method on a known route, anonymous and a tenant's; a made-up path, with a made-up method and GET
        const known = await ctx.app.request("/healthz", { method });
        seen("known route, made-up method", known.status);
        assert.equal(known.headers.get("allow"), "GET, HEAD");
        await known.body?.cancel();
        const tenant = await ctx.app.request("/api/v1/subject/people", {
          method,
          headers: { authorization: `Bearer ${company.token}` },
        });
        seen("a tenant's route, made-up method", tenant.status);
        await tenant.body?.cancel();
        for (const m of [method, "GET"]) {
          const unknown = await ctx.app.request(path, { method: m });
          seen(`unknown route, ${m === "GET" ? "GET" : "made-up method"}`, unknown.status);
          await unknown.body?.cancel();
        }
      }));
    }
    assert.deepEqual(answers, {
      "known route, made-up method 405": FLOOD,
      "a tenant's route, made-up method 405": FLOOD,
      "unknown route, made-up method 404": FLOOD,
      "unknown route, GET 404": FLOOD,
    });

    const body = await metrics();
    const after = requestSeries(body);
    const added = after.filter((s) => !before.has(s));
    // other x {unmatched, /healthz's pattern} x {404, 405}, and GET x unmatched x 404: a handful, whatever the flood
    assert.ok(added.length <= 12, `${added.length} series added:\n${added.join("\n")}`);
    for (const series of after) {
      const labels = Object.fromEntries([...series.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v]));
      assert.ok(CLOSED.method.has(labels.method), series);
      if (labels.status) assert.match(labels.status, CLOSED.status, series);
    }
    const leaked = sent.filter((s) => body.includes(s));
    assert.deepEqual(leaked.slice(0, 5), [], `${leaked.length} made-up methods or paths are in /metrics`);
  } finally {
    await ctx.close();
  }
});

Deno.test("a metric past its series bound counts new label sets under one `other` series", () => {
  const counter = new Counter("test_total", "a test counter");
  for (let i = 0; i < MAX_SERIES + 500; i++) counter.inc({ endpoint: `e${i}`, outcome: "succeeded" });
  const lines = counter.render().split("\n").filter((line) => line.startsWith("test_total{"));
  assert.equal(lines.length, MAX_SERIES + 1);
  assert.equal(lines.at(-1), 'test_total{endpoint="other",outcome="other"} 500');
});
