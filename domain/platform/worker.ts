import { Logger, run, type Runner, type TaskList, type WorkerEvents } from "graphile-worker";
import { EventEmitter } from "node:events";
import pg from "pg";
import { log } from "./log.ts";

/** graphile-worker's log lines in our JSON format. */
export function workerLogger() {
  return new Logger(() => (level, message, meta) => {
    if (level === "debug") return;
    // graphile-worker assumes a task holds a pool connection; ours do not (see startWorker)
    if (message.includes("smaller than concurrency")) return;
    // one line per job done, with the whole job row: debug only (failed deliveries log their own line)
    if (level !== "error" && message.startsWith("Completed task")) {
      return log.debug(message, { source: "graphile-worker" });
    }
    const fn = level === "error" ? log.error : level === "warning" ? log.warn : log.info;
    fn(message, { source: "graphile-worker", ...(meta ?? {}) });
  });
}

export type Worker = { runner: Runner; pool: pg.Pool; liveness: pg.Client; sweeper: ReturnType<typeof setInterval> };

/** Called with the ids of worker processes found dead, after their jobs were unlocked. */
export type OnDeadProcesses = (processIds: string[]) => Promise<void>;

const SWEEP_EVERY_MS = 5_000;

/**
 * Frees what worker processes that are gone had taken: their registered session no longer exists.
 * Run at start and periodically, so a surviving instance also recovers a crashed peer's work.
 */
export async function recoverDeadProcesses(client: pg.Client | pg.Pool, onDead?: OnDeadProcesses): Promise<number> {
  const { rows } = await client.query<{ id: string; worker_ids: string[] }>(`
    delete from worker_processes w
    where not exists (
      select 1 from pg_stat_activity a where a.pid = w.backend_pid and a.backend_start = w.backend_start
    )
    returning id, worker_ids`);
  if (!rows.length) return 0;
  const workerIds = rows.flatMap((r) => r.worker_ids);
  if (workerIds.length) await client.query("select graphile_worker.force_unlock_workers($1::text[])", [workerIds]);
  await onDead?.(rows.map((r) => r.id));
  log.warn("recovered work of stopped worker processes", { processes: rows.length, workers: workerIds.length });
  return rows.length;
}

/**
 * Starts the graphile-worker runner inside this process, registered as `processId`. It needs a `pg` pool of its
 * own (postgres.js pools are not supported). A separate session stays open for the life of the process: it is how
 * other instances tell that this one is alive.
 */
export async function startWorker(
  connectionString: string,
  concurrency: number,
  taskList: TaskList,
  opts: { processId?: string; onDeadProcesses?: OnDeadProcesses; onSweep?: () => Promise<unknown> } = {},
): Promise<Worker> {
  const processId = opts.processId ?? crypto.randomUUID();
  const liveness = new pg.Client({ connectionString, application_name: "payments-worker-liveness" });
  liveness.on("error", (err) => log.error("worker liveness session lost", { error: err.message }));
  await liveness.connect();
  await liveness.query(
    `insert into worker_processes (id, backend_pid, backend_start)
     select $1, pid, backend_start from pg_stat_activity where pid = pg_backend_pid()`,
    [processId],
  );
  const sweep = async () => {
    await recoverDeadProcesses(liveness, opts.onDeadProcesses);
    await opts.onSweep?.();
  };
  await sweep();

  // Tasks run their own queries through postgres.js; this pool only serves graphile-worker's fetch and complete
  // queries, so it need not grow with the concurrency (every connection counts against max_connections).
  const pool = new pg.Pool({ connectionString, max: Math.min(concurrency, 10) + 2 });
  pool.on("error", (err) => log.error("worker pool error", { error: err.message }));
  pool.on("connect", (client) => client.on("error", (err) => log.error("worker client error", { error: err.message })));

  const registrations: Promise<unknown>[] = [];
  // workers are created inside run(): the listener must be in place before it
  const events = new EventEmitter() as WorkerEvents;
  events.on("worker:create", ({ worker }) => {
    registrations.push(liveness.query(
      "update worker_processes set worker_ids = array_append(worker_ids, $2) where id = $1",
      [processId, worker.workerId],
    ));
  });
  // graphile-worker 0.18 locks jobs with the pool's id (locked_by = "pool-..."), not the worker's
  events.on("pool:create", ({ workerPool }) => {
    registrations.push(liveness.query(
      "update worker_processes set worker_ids = array_append(worker_ids, $2) where id = $1",
      [processId, workerPool.id],
    ));
  });
  const runner = await run({
    pgPool: pool,
    taskList,
    concurrency,
    pollInterval: 200,
    parsedCronItems: [],
    noHandleSignals: true,
    logger: workerLogger(),
    events,
  });
  await Promise.all(registrations);
  const sweeper = setInterval(() => {
    sweep().catch((err) => log.error("recovery sweep failed", { error: err.message }));
  }, SWEEP_EVERY_MS);
  return { runner, pool, liveness, sweeper };
}

export async function stopWorker(worker: Worker): Promise<void> {
  clearInterval(worker.sweeper);
  await worker.runner.stop();
  await worker.pool.end();
  // A job fetched while the runner was stopping can stay locked by it (for hours, in graphile-worker's eyes):
  // nothing of this process runs any more, so whatever it still holds goes back to the queue.
  await worker.liveness.query(
    `with gone as (delete from worker_processes where backend_pid = pg_backend_pid() returning worker_ids)
     select graphile_worker.force_unlock_workers(coalesce((select worker_ids from gone), '{}'))`,
  ).catch((err) => log.warn("could not hand back the jobs of this process", { error: err.message }));
  await worker.liveness.end();
}
