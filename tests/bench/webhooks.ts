/**
 * Webhook delivery figures on a fresh database of their own, with a receiver on loopback in this process.
 *
 * - ceiling: 20,000 no-op graphile-worker jobs queued at once, then drained by the worker (jobs/s);
 * - backlog: 20,000 events emitted one per transaction (as producers do) while the worker is stopped, then
 *   delivered (deliveries/s, comparable with the ceiling: both start from a full queue); then the same to an https
 *   receiver, as a share of it;
 * - live ceiling: 8 producers adding one no-op job per transaction while the worker runs (jobs/s);
 * - live: the same producers emitting 20,000 events, one per transaction, while the worker delivers them
 *   (deliveries/s, p50 and p99 emit-to-receipt latency);
 * - steady: 100 events/s for 10 s (p50 and p99 latency);
 * - fairness: a sequential endpoint's backlog drained alone, then again beside a parallel endpoint's 20,000-record
 *   backlog queued before it (each with its own receiver): its rate beside as a share of alone, once with receivers
 *   answering after 50 ms (as across a network) and once answering at once (the process then saturated by the
 *   parallel backlog, and the sequential endpoint's every step waits its turn), with the CPU the service, Postgres
 *   and the receivers used over each drain (tests/bench/cpu.ts), which bounds the second.
 * Peak RSS is sampled through the whole run. Measures only; nothing here asserts a timing.
 */
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createEndpoint } from "../../domain/webhooks/endpoints/endpoints.ts";
import { TASKS } from "../../domain/infra/tasks.ts";
import { companions, taskList } from "../../jobs/index.ts";
import { type Config, loadConfig } from "../../domain/infra/config.ts";
import { connect, ensureDatabase, type Sql } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { type LogLevel, setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { startWorker, stopWorker, type Worker } from "../../domain/infra/worker.ts";
import { dropDatabase } from "../support/databases.ts";
import { describe, type Figures, round, summary } from "./figures.ts";
import { atFixedRate } from "./http.ts";
import { cpuDuring } from "./cpu.ts";
import { A_MONTH, partitionPastDays } from "./partitions.ts";
import { BENCH_JWT_SECRET as JWT_SECRET, benchConfig } from "./service.ts";

const EVENTS = Number(Deno.env.get("BENCH_WEBHOOK_EVENTS") ?? 20_000);
const PRODUCERS = 8;
const STEADY_RATE = 100;
const STEADY_SECONDS = Number(Deno.env.get("BENCH_STEADY_SECONDS") ?? 10);
const SEQUENTIAL_EVENTS = Number(Deno.env.get("BENCH_SEQUENTIAL_EVENTS") ?? 1_000);
/** Deliveries run against the month of daily history partitions a service at the default retention has. */
const DAYS_OF_PARTITIONS = Number(Deno.env.get("BENCH_PARTITION_DAYS") ?? A_MONTH);
/** BENCH_LOG_LEVEL=warn shows what went wrong in a run that failed. */
const LOG_LEVEL = (Deno.env.get("BENCH_LOG_LEVEL") ?? "silent") as LogLevel;

/** A database of this run's own, so two people benchmarking on one server never drop each other's. */
async function freshBenchDatabase(): Promise<string> {
  const base = new URL(
    loadConfig({
      DATABASE_URL: Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://127.0.0.1:5432/payments_bench_webhooks",
      USER: Deno.env.get("USER"),
      JWT_SECRET,
    }).databaseUrl,
  );
  base.pathname = `${base.pathname}_${crypto.randomUUID().slice(0, 8)}`;
  await ensureDatabase(base.toString());
  return base.toString();
}

/** The test authority that issued the https receiver's certificate. */
export const LOOPBACK_CA_PATH = new URL("../fixtures/tls/loopback_ca.pem", import.meta.url).pathname;
const LOOPBACK_CA = Deno.readTextFileSync(LOOPBACK_CA_PATH);
/** The client certificate the mTLS receiver requires (tests/fixtures/tls/README.md). */
export const CLIENT_CERTIFICATE = {
  certificate: Deno.readTextFileSync(new URL("../fixtures/tls/client.pem", import.meta.url)),
  private_key: Deno.readTextFileSync(new URL("../fixtures/tls/client.key", import.meta.url)),
};

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/**
 * A webhook receiver on loopback in a process of its own (tests/bench/receiver.ts): counts receipts and keeps each
 * delivery's emit-to-receipt latency, so that the service's figures (its memory above all) leave the receiving end
 * out, as with a real integrator's server.
 */
export async function startReceiver(
  answerAfterMs = 0,
  opts: { tls?: boolean; mtls?: boolean; nodeTls?: boolean } = {},
) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-read",
      new URL("./receiver.ts", import.meta.url).pathname,
      String(answerAfterMs),
      ...(opts.mtls ? ["--mtls"] : opts.nodeTls ? ["--node-tls"] : opts.tls ? ["--tls"] : []),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the receiver process ended before it listened");
    first += value;
  }
  reader.releaseLock();
  child.stdout.cancel().catch(() => {});
  const secure = opts.tls || opts.mtls || opts.nodeTls;
  const base = `${secure ? "https" : "http"}://127.0.0.1:${first.trim()}`;
  // the bench's own questions to an https receiver trust its test authority (tests/fixtures/tls/README.md); an mTLS
  // receiver asks them for the test client certificate too
  const client = opts.mtls
    ? Deno.createHttpClient({
      caCerts: [LOOPBACK_CA],
      cert: CLIENT_CERTIFICATE.certificate,
      key: CLIENT_CERTIFICATE.private_key,
    })
    : secure
    ? Deno.createHttpClient({ caCerts: [LOOPBACK_CA] })
    : undefined;
  const ask = (what: string) => fetch(`${base}/__${what}?path=/hook`, { client }).then((r) => r.json());
  const count = (): Promise<number> => ask("count");
  return {
    url: `${base}/hook`,
    /** The receiver's process, whose CPU a phase may count (cpu.ts). */
    pid: child.pid,
    count,
    latencies: (): Promise<number[]> => ask("latencies"),
    /** Arrivals after a later record (out of order), and arrivals of a record seen before (duplicates). */
    order: (): Promise<{ out_of_order: number; duplicates: number }> => ask("order"),
    reset: () => fetch(`${base}/__reset?path=/hook`, { method: "POST", client }).then((r) => r.body?.cancel()),
    async until(wanted: number, timeoutMs = 300_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      for (let got = await count(); got < wanted; got = await count()) {
        if (Date.now() > deadline) throw new Error(`only ${got} of ${wanted} deliveries arrived`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    /** Answers what is in flight, then stops. */
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      client?.close();
    },
  };
}

/** `total` events, one per transaction, from `producers` concurrent producers. */
export async function emitMany(sql: Sql, companyId: string, total: number, producers = PRODUCERS) {
  let next = 0;
  await Promise.all(Array.from({ length: producers }, async () => {
    while (next < total) {
      next++;
      await sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: crypto.randomUUID() }));
    }
  }));
}

/** Every record delivered and recorded: nothing pending, no drain job left. */
export async function waitForDrained(sql: Sql, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [{ left }] = await sql<{ left: boolean }[]>`
      select exists (select 1 from webhook_deliveries where status = 'pending') as left`;
    if (!left) return await waitForNoJobs(sql, TASKS.deliverWebhook, Math.max(0, deadline - Date.now()));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`deliveries still pending after ${timeoutMs} ms`);
}

async function waitForNoJobs(sql: Sql, task: string, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    const [{ left }] = await sql<{ left: boolean }[]>`
      select exists (select 1 from graphile_worker.jobs where task_identifier = ${task}) as left`;
    if (!left) return;
  }
  // what was left, so that a run that failed says why
  const jobs = await sql`
    select key, priority, run_at - now() as due_in, locked_at is not null as locked, attempts, last_error
    from graphile_worker.jobs where task_identifier = ${task} order by run_at limit 20`;
  const records = await sql`
    select endpoint_id, count(*)::int as pending, min(next_attempt_at) - now() as first_due_in,
      count(*) filter (where leased_until > now())::int as leased
    from webhook_deliveries where status = 'pending' group by endpoint_id`;
  const slots = await sql`select * from webhook_slots where delivery_id is not null`;
  throw new Error(
    `${task} jobs still queued after ${timeoutMs} ms: ${JSON.stringify({ jobs, records, slots }, null, 1)}`,
  );
}

/** A fresh database, migrated, with the worker's start and stop for the phases to call. */
export async function benchBase() {
  setLogLevel(LOG_LEVEL);
  const url = await freshBenchDatabase();
  const config = benchConfig(url, { LOG_LEVEL });
  const sql = connect(url, { max: 10 });
  await migrate(sql, url);
  await partitionPastDays(sql, DAYS_OF_PARTITIONS);
  // `as`: the fields Deps may gain (a process id) are not needed here.
  const deps = { sql, config, processId: crypto.randomUUID() } as Deps;
  let worker: Worker | null = null;
  const start = async (): Promise<Worker> =>
    worker = await startWorker(url, config.workerConcurrency, taskList(deps), { companions: companions(deps) });
  const stop = async () => {
    if (worker) await stopWorker(worker);
    worker = null;
  };
  return {
    sql,
    config,
    start,
    stop,
    worker: () => worker,
    close: async () => {
      await stop();
      await sql.end({ timeout: 2 });
      await dropDatabase(url);
    },
  };
}

export async function benchWebhooks(): Promise<Record<string, number | string>> {
  const { sql, config, start, stop, worker, close } = await benchBase();
  const receiver = await startReceiver();
  let peakRss = Deno.memoryUsage().rss;
  const sampler = setInterval(() => peakRss = Math.max(peakRss, Deno.memoryUsage().rss), 100);
  try {
    const companyId = crypto.randomUUID();
    await sql`insert into companies (id) values (${companyId})`;
    const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
    await createEndpoint(sql, companyId, { url: receiver.url, max_concurrency: 100 }, {
      allowPrivateUrls: true,
      quota,
      box: await secretBoxFor(config),
    });

    // Ceiling: the same worker draining no-op jobs.
    await sql`select count(*) from graphile_worker.add_jobs(array(
      select row(${TASKS.noop}, '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec
      from generate_series(1, ${EVENTS})))`;
    let t0 = performance.now();
    const noopDone = Promise.withResolvers<void>();
    let noops = 0;
    const noopWorker = await start();
    // Counted from the worker's own events: polling the jobs table would load the database being measured.
    noopWorker.runner.events.on("job:complete", ({ job }) => {
      if (job.task_identifier === TASKS.noop && ++noops === EVENTS) noopDone.resolve();
    });
    await Promise.race([noopDone.promise, waitForNoJobs(sql, TASKS.noop)]);
    const noopPerSecond = EVENTS / ((performance.now() - t0) / 1000);
    await stop();

    // Backlog: every event in its own transaction (one drain job each), delivered from a full queue.
    const emitStarted = performance.now();
    await emitMany(sql, companyId, EVENTS, PRODUCERS);
    const emitPerSecond = EVENTS / ((performance.now() - emitStarted) / 1000);
    await receiver.reset();
    t0 = performance.now();
    await start();
    await receiver.until(EVENTS);
    const backlogPerSecond = EVENTS / ((performance.now() - t0) / 1000);
    await waitForDrained(sql);
    const backlogAllDone = (performance.now() - t0) / 1000;

    // The same backlog to an https receiver (a company of its own): what TLS costs once connections are kept. The
    // worker's node:https trusts the receiver's test authority through NODE_EXTRA_CA_CERTS, which Deno reads at the
    // first TLS connection (tests/fixtures/tls/README.md).
    Deno.env.set("NODE_EXTRA_CA_CERTS", LOOPBACK_CA_PATH);
    const tlsReceiver = await startReceiver(0, { tls: true });
    let httpsPerSecond: number;
    try {
      const tlsCompany = crypto.randomUUID();
      await sql`insert into companies (id) values (${tlsCompany})`;
      await createEndpoint(sql, tlsCompany, { url: tlsReceiver.url, max_concurrency: 100 }, {
        allowPrivateUrls: true,
        quota,
        box: await secretBoxFor(config),
      });
      await stop();
      await emitMany(sql, tlsCompany, EVENTS, PRODUCERS);
      t0 = performance.now();
      await start();
      await tlsReceiver.until(EVENTS);
      httpsPerSecond = EVENTS / ((performance.now() - t0) / 1000);
      await waitForDrained(sql);
    } finally {
      await tlsReceiver.close();
    }

    // Live ceiling: the same producers adding one no-op job per transaction while the worker runs. Every add_job
    // NOTIFYs, and Postgres serialises the commits of notifying transactions: this bounds any live figure.
    const liveNoopDone = Promise.withResolvers<void>();
    let liveNoops = 0;
    const onComplete = ({ job }: { job: { task_identifier: string } }) => {
      if (job.task_identifier === TASKS.noop && ++liveNoops === EVENTS) liveNoopDone.resolve();
    };
    worker()!.runner.events.on("job:complete", onComplete);
    t0 = performance.now();
    let queued = 0;
    await Promise.all(Array.from({ length: PRODUCERS }, async () => {
      while (queued++ < EVENTS) await sql.begin((tx) => tx`select graphile_worker.add_job(${TASKS.noop}, '{}'::json)`);
    }));
    await Promise.race([liveNoopDone.promise, waitForNoJobs(sql, TASKS.noop)]);
    const liveNoopPerSecond = EVENTS / ((performance.now() - t0) / 1000);
    worker()!.runner.events.off("job:complete", onComplete);

    // Live: producers and deliveries at the same time.
    await receiver.reset();
    t0 = performance.now();
    await emitMany(sql, companyId, EVENTS, PRODUCERS);
    await receiver.until(EVENTS);
    const livePerSecond = EVENTS / ((performance.now() - t0) / 1000);
    const live = (await receiver.latencies()).sort((a, b) => a - b);
    await waitForDrained(sql);

    // Steady: 100 events/s, one per transaction.
    await receiver.reset();
    const steadyTotal = STEADY_RATE * STEADY_SECONDS;
    await atFixedRate(STEADY_RATE, steadyTotal, () => emitMany(sql, companyId, 1, 1));
    await receiver.until(steadyTotal);
    const steady = (await receiver.latencies()).sort((a, b) => a - b);

    await stop();
    const fairness = await fairnessFigures(sql, config, start, stop, databaseOf(config.databaseUrl));
    // A receipt comes before its attempt is recorded: let the last records settle.
    for (let i = 0; i < 100; i++) {
      const [{ pending }] = await sql<{ pending: number }[]>`
        select count(*)::int as pending from webhook_deliveries where status = 'pending'`;
      if (pending === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const [{ failed }] = await sql<{ failed: number }[]>`
      select count(*)::int as failed from webhook_deliveries where status <> 'succeeded'`;
    return {
      events_per_run: EVENTS,
      worker_concurrency: config.workerConcurrency,
      noop_jobs_per_s: round(noopPerSecond, 0),
      emit_events_per_s: round(emitPerSecond, 0),
      backlog_deliveries_per_s: round(backlogPerSecond, 0),
      backlog_vs_noop_pct: round((100 * backlogPerSecond) / noopPerSecond),
      backlog_jobs_all_done_s: round(backlogAllDone, 2),
      backlog_https_deliveries_per_s: round(httpsPerSecond, 0),
      backlog_https_vs_http: round(httpsPerSecond / backlogPerSecond, 2),
      live_deliveries_per_s: round(livePerSecond, 0),
      live_noop_jobs_per_s: round(liveNoopPerSecond, 0),
      live_vs_live_noop_pct: round((100 * livePerSecond) / liveNoopPerSecond),
      live_latency_p50_ms: live.length ? percentile(live, 0.5) : "n/a",
      live_latency_p99_ms: live.length ? percentile(live, 0.99) : "n/a",
      steady_rate_per_s: STEADY_RATE,
      steady_latency_p50_ms: percentile(steady, 0.5),
      steady_latency_p95_ms: percentile(steady, 0.95),
      steady_latency_p99_ms: percentile(steady, 0.99),
      ...fairness,
      deliveries_not_succeeded: failed,
      peak_rss_mb: round(peakRss / 1024 / 1024),
    };
  } finally {
    clearInterval(sampler);
    await receiver.close();
    await close();
  }
}

/**
 * Fairness: a sequential endpoint alone, then behind a parallel endpoint's backlog (two new companies each time), with
 * receivers answering after 50 ms (as across a network) and at once (the process then saturated by the parallel
 * backlog). `start` and `stop` run the worker; it is stopped when this returns. Over the sequential drain alone and
 * beside, the CPU each side used (tests/bench/cpu.ts): this process (the worker, which is the service here), Postgres
 * (the sessions of `database` and its own processes) and both receivers, as cores of the machine and per delivery, so
 * that a ratio bounded by the CPU they share can be read.
 */
async function fairnessFigures(
  sql: Sql,
  config: Config,
  start: () => Promise<unknown>,
  stop: () => Promise<void>,
  database: string,
) {
  const box = await secretBoxFor(config);
  const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
  const fairness = async (answerAfterMs: number, sequentialEvents: number) => {
    const [seqCompany, parCompany] = [crypto.randomUUID(), crypto.randomUUID()];
    await sql`insert into companies (id) values (${seqCompany}), (${parCompany})`;
    const [seqReceiver, parReceiver] = [await startReceiver(answerAfterMs), await startReceiver(answerAfterMs)];
    const endpoint = { allowPrivateUrls: true, quota, box };
    await createEndpoint(sql, seqCompany, { url: seqReceiver.url, delivery_mode: "sequential" }, endpoint);
    await createEndpoint(sql, parCompany, { url: parReceiver.url, max_concurrency: 100 }, endpoint);
    const pids = { service: Deno.pid, sequentialReceiver: seqReceiver.pid, parallelReceiver: parReceiver.pid };
    const drainSequential = () =>
      cpuDuring(pids, async () => {
        await seqReceiver.reset();
        const started = performance.now();
        await start();
        await seqReceiver.until(sequentialEvents);
        return sequentialEvents / ((performance.now() - started) / 1000);
      }, database);
    await emitMany(sql, seqCompany, sequentialEvents);
    const alone = await drainSequential();
    await stop();
    const aloneOrder = await seqReceiver.order();
    await emitMany(sql, parCompany, EVENTS);
    await emitMany(sql, seqCompany, sequentialEvents);
    const started = performance.now();
    const beside = await drainSequential();
    const parallelAtThatPoint = await parReceiver.count();
    await parReceiver.until(EVENTS);
    const seconds = (performance.now() - started) / 1000;
    await waitForDrained(sql);
    await stop();
    const order = await seqReceiver.order();
    const parallelOrder = await parReceiver.order();
    await seqReceiver.close();
    await parReceiver.close();
    return {
      alone: alone.result,
      beside: beside.result,
      parallelAtThatPoint,
      parallel: EVENTS / seconds,
      total: (EVENTS + sequentialEvents) / seconds,
      outOfOrder: aloneOrder.out_of_order + order.out_of_order,
      duplicates: aloneOrder.duplicates + order.duplicates + parallelOrder.duplicates,
      cpu: {
        alone: cpuShares(alone, sequentialEvents),
        beside: cpuShares(beside, sequentialEvents + parallelAtThatPoint),
      },
    };
  };
  const instant = await fairness(0, SEQUENTIAL_EVENTS);
  const networked = await fairness(50, SEQUENTIAL_EVENTS / 10);
  return {
    fair_sequential_alone_per_s: round(networked.alone, 1),
    fair_sequential_beside_per_s: round(networked.beside, 1),
    fair_sequential_beside_vs_alone: round(networked.beside / networked.alone, 2),
    fair_parallel_done_when_sequential_done: networked.parallelAtThatPoint,
    fair_parallel_beside_per_s: round(networked.parallel, 0),
    fair_total_deliveries_per_s: round(networked.total, 0),
    fair_instant_sequential_alone_per_s: round(instant.alone, 0),
    fair_instant_sequential_beside_per_s: round(instant.beside, 0),
    fair_instant_sequential_beside_vs_alone: round(instant.beside / instant.alone, 2),
    fair_instant_parallel_done_when_sequential_done: instant.parallelAtThatPoint,
    fair_instant_parallel_beside_per_s: round(instant.parallel, 0),
    fair_instant_total_deliveries_per_s: round(instant.total, 0),
    fair_sequential_out_of_order: networked.outOfOrder + instant.outOfOrder,
    fair_deliveries_duplicated: networked.duplicates + instant.duplicates,
    ...cpuFigures("fair", networked.cpu),
    ...cpuFigures("fair_instant", instant.cpu),
  };
}

/** What cpuShares gives for a drain, in the order the figures print. */
const CPU_SHARES = [
  "service_cores",
  "postgres_cores",
  "receivers_cores",
  "all_cores",
  "service_us_per_delivery",
  "postgres_us_per_delivery",
] as const;

/**
 * A drain's CPU as shares of the machine (cores: CPU time over wall time) for the service, Postgres, both receivers
 * together and all of them, and per delivery received meanwhile for the service and Postgres; null without /proc.
 */
function cpuShares(
  m: { wallMs: number; cpuMs: Record<string, number> | null },
  deliveries: number,
): Record<typeof CPU_SHARES[number], number> | null {
  if (!m.cpuMs) return null;
  const c = m.cpuMs;
  const receivers = c.sequentialReceiver + c.parallelReceiver;
  const cores = (ms: number) => round(ms / m.wallMs, 2);
  const perDelivery = (ms: number) => round((ms * 1000) / Math.max(1, deliveries), 0);
  return {
    service_cores: cores(c.service),
    postgres_cores: cores(c.postgres),
    receivers_cores: cores(receivers),
    all_cores: cores(c.service + c.postgres + receivers),
    service_us_per_delivery: perDelivery(c.service),
    postgres_us_per_delivery: perDelivery(c.postgres),
  };
}

/** `prefix`_alone_… and `prefix`_beside_… of both drains' CPU shares ("n/a" without /proc). */
function cpuFigures(prefix: string, cpu: Record<"alone" | "beside", ReturnType<typeof cpuShares>>): Figures {
  return Object.fromEntries(
    (["alone", "beside"] as const).flatMap((phase) =>
      CPU_SHARES.map((name) => [`${prefix}_${phase}_${name}`, cpu[phase]?.[name] ?? "n/a"])
    ),
  );
}

/** The name of the database a URL names (the sessions whose CPU counts as Postgres', cpu.ts). */
const databaseOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** BENCH_ONLY=fairness: the fairness phase alone, on a database of its own. */
export async function benchFairness(): Promise<Figures> {
  const { sql, config, start, stop, close } = await benchBase();
  try {
    return await fairnessFigures(sql, config, start, stop, databaseOf(config.databaseUrl));
  } finally {
    await close();
  }
}

if (import.meta.main) {
  const figures = await benchWebhooks();
  for (const line of describe(figures)) console.log(line);
  console.log(`\n${summary(figures)}`);
}
