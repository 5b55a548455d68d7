/**
 * Batches (`BENCH_ONLY=batches`, docs/webhooks.md "Batches"): in one run, the events per second a backlog reaches an
 * instant receiver one by one and in batches of 50, and the latency a batch adds at 10 events per second with
 * `max_wait_ms: 200` (emitted to received, beside the same trickle one by one). One company per measure, so each
 * backlog is alone. A module of its own: one phase of tests/bench/main.ts.
 */
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { companions, taskList } from "../../jobs/index.ts";
import { connect } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { startWorker, stopWorker } from "../../domain/infra/worker.ts";
import { dropDatabase, freshDatabase } from "../support/helpers.ts";
import { benchConfig } from "./service.ts";
import { type Figures, round } from "./figures.ts";

/** The `q` quantile of `values`, by rank. */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export async function benchBatches(): Promise<Figures> {
  setLogLevel("silent");
  const backlog = Number(Deno.env.get("BENCH_BATCH_EVENTS") ?? 5_000);
  const trickleSeconds = Number(Deno.env.get("BENCH_BATCH_TRICKLE_SECONDS") ?? 10);
  const url = await freshDatabase("bench_batches");
  const config = benchConfig(url, { WORKER_CONCURRENCY: "8" });
  const sql = connect(url, { max: 10 });
  /** Events received per path, and when each transaction id arrived. */
  const received = new Map<string, number>();
  const arrivedAt = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = JSON.parse(await req.text());
    const now = performance.now();
    const bodies: { data: { transaction_id: string } }[] = Array.isArray(body) ? body : [body];
    const path = new URL(req.url).pathname;
    received.set(path, (received.get(path) ?? 0) + bodies.length);
    for (const b of bodies) arrivedAt.set(b.data.transaction_id, now);
    return new Response("ok");
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  let worker = null;
  try {
    await migrate(sql, url);
    const opts = {
      allowPrivateUrls: true,
      quota: { endpoints: 10, concurrency: 100 },
      box: await secretBoxFor(config),
    };
    const company = async (path: string, batch: { max_events: number; max_wait_ms: number } | null) => {
      const id = crypto.randomUUID();
      await sql`insert into companies (id) values (${id})`;
      await createEndpoint(sql, id, { url: `${base}${path}`, max_concurrency: 10, batch }, opts);
      return id;
    };
    const deps = { sql, config, processId: crypto.randomUUID() } as Deps;
    worker = await startWorker(url, config.workerConcurrency, taskList(deps), { companions: companions(deps) });
    const figures: Figures = {};

    // A backlog emitted at once, timed from its commit to its last event received.
    const drain = async (path: string, batch: { max_events: number; max_wait_ms: number } | null) => {
      const companyId = await company(path, batch);
      await sql.begin(async (tx) => {
        for (let i = 0; i < backlog; i++) {
          await emitEvent(tx, companyId, "identified", { transaction_id: `${path}-${i}` });
        }
      });
      const started = performance.now();
      const deadline = started + 120_000;
      while ((received.get(path) ?? 0) < backlog && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      return (received.get(path) ?? 0) / ((performance.now() - started) / 1000);
    };
    const one = await drain("/one", null);
    const fifty = await drain("/fifty", { max_events: 50, max_wait_ms: 200 });
    figures.batches_one_by_one_events_per_s = round(one);
    figures.batches_of_50_events_per_s = round(fifty);
    figures.batches_of_50_vs_one_by_one = round(fifty / one, 2);

    // 10 events a second, one per transaction as requests emit them, to a batched endpoint and to one without
    const trickle = async (path: string, batch: { max_events: number; max_wait_ms: number } | null) => {
      const companyId = await company(path, batch);
      const emittedAt = new Map<string, number>();
      const count = trickleSeconds * 10;
      const start = performance.now();
      for (let i = 0; i < count; i++) {
        const due = start + i * 100;
        if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
        const id = `${path}-${i}`;
        await sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: id }));
        emittedAt.set(id, performance.now());
      }
      const deadline = performance.now() + 15_000;
      while ((received.get(path) ?? 0) < count && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      return [...emittedAt].map(([id, at]) => (arrivedAt.get(id) ?? Infinity) - at);
    };
    const alone = await trickle("/trickle-one", null);
    const batched = await trickle("/trickle-batch", { max_events: 50, max_wait_ms: 200 });
    figures.batches_latency_one_by_one_p50_ms = round(quantile(alone, 0.5));
    figures.batches_latency_one_by_one_p99_ms = round(quantile(alone, 0.99));
    figures.batches_latency_200ms_p50_ms = round(quantile(batched, 0.5));
    figures.batches_latency_200ms_p99_ms = round(quantile(batched, 0.99));
    figures.batches_latency_added_p99_ms = round(quantile(batched, 0.99) - quantile(alone, 0.99));
    return figures;
  } finally {
    if (worker) await stopWorker(worker);
    await server.shutdown();
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}
