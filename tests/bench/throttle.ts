/**
 * Throttle precision (`BENCH_ONLY=throttle`): endpoints with a rate_limit (docs/webhooks.md, "Throttle") drained by two
 * sets of drainers sharing one database, as two instances would, each endpoint given a backlog of
 * `BENCH_THROTTLE_SECONDS` (default 10) seconds at its rate, emitted at once. For each rate: the rate achieved over
 * the configured one (second to last arrival), and the most arrivals any one second held. A receiver in this process
 * answers 200 at once and keeps only arrival times. A module of its own: one phase of tests/bench/main.ts.
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

/** The rates measured, deliveries per second: a slow receiver's and a busy one's. */
export const THROTTLE_RATES = [5, 50];

/** The most of `times` (ms) within any window of `ms` that starts at one of them. */
function mostInWindow(times: number[], ms: number): number {
  const at = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (j < at.length && at[j] < at[i] + ms) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

export async function benchThrottle(): Promise<Figures> {
  setLogLevel("silent");
  const seconds = Number(Deno.env.get("BENCH_THROTTLE_SECONDS") ?? 10);
  const url = await freshDatabase("bench_throttle");
  const config = benchConfig(url, { WORKER_CONCURRENCY: "8" });
  const sql = connect(url, { max: 10 });
  const arrivals = new Map<string, number[]>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    const path = new URL(req.url).pathname;
    (arrivals.get(path) ?? arrivals.set(path, []).get(path)!).push(performance.now());
    return new Response("ok");
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const workers = [];
  try {
    await migrate(sql, url);
    const companyId = crypto.randomUUID();
    await sql`insert into companies (id) values (${companyId})`;
    const opts = {
      allowPrivateUrls: true,
      quota: { endpoints: 10, concurrency: 100 },
      box: await secretBoxFor(config),
    };
    for (const rate of THROTTLE_RATES) {
      await createEndpoint(sql, companyId, { url: `${base}/${rate}`, rate_limit: rate, max_concurrency: 10 }, opts);
    }
    // two instances' drainers, each with its own process id
    for (let i = 0; i < 2; i++) {
      const deps = { sql, config, processId: crypto.randomUUID() } as Deps;
      workers.push(await startWorker(url, config.workerConcurrency, taskList(deps), { companions: companions(deps) }));
    }
    // every endpoint gets every event: the largest backlog is the fastest rate's
    const events = Math.max(...THROTTLE_RATES) * seconds + 1;
    await sql.begin(async (tx) => {
      for (let i = 0; i < events; i++) await emitEvent(tx, companyId, "identified", { transaction_id: `t${i}` });
    });
    const figures: Figures = {};
    for (const rate of THROTTLE_RATES) {
      // the slower rate's backlog is cut at `seconds`: what it delivered by then is what is measured
      const want = rate * seconds + 1;
      const deadline = performance.now() + seconds * 3_000;
      while ((arrivals.get(`/${rate}`)?.length ?? 0) < want && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const times = (arrivals.get(`/${rate}`) ?? []).slice(0, want);
      // from the second arrival: the first pays the connection's set-up, and its turn starts the schedule
      const spanS = (times.at(-1)! - times[1]) / 1000;
      figures[`throttle_${rate}ps_precision_pct`] = round(((times.length - 2) / spanS / rate) * 100);
      figures[`throttle_${rate}ps_max_in_1s`] = mostInWindow(times, 1_000);
    }
    return figures;
  } finally {
    for (const worker of workers) await stopWorker(worker);
    await server.shutdown();
    await sql.end({ timeout: 2 });
    await dropDatabase(url);
  }
}
