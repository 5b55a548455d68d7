import { Logger, run, type Runner, type TaskList, type WorkerEvents } from "graphile-worker";
import { EventEmitter } from "node:events";
import pg from "pg";
import { log } from "./log.ts";

/** graphile-worker's log lines in our JSON format. */
export function workerLogger() {
  return new Logger(() => (level, message, meta) => {
    if (level === "debug") return;
    const fn = level === "error" ? log.error : level === "warning" ? log.warn : log.info;
    fn(message, { source: "graphile-worker", ...(meta ?? {}) });
  });
}

export type Worker = { runner: Runner; pool: pg.Pool; liveness: pg.Client; sweeper: ReturnType<typeof setInterval> };

const SWEEP_EVERY_MS = 15_000;

/**
 * Frees the jobs locked by workers whose process is gone: their registered session no longer exists.
 * Run at start and periodically, so a surviving instance also recovers a crashed peer's jobs.
 */
export async function recoverOrphanedJobs(client: pg.Client | pg.Pool): Promise<number> {
  const { rows } = await client.query<{ worker_id: string }>(`
    delete from worker_processes w
    where not exists (
      select 1 from pg_stat_activity a where a.pid = w.backend_pid and a.backend_start = w.backend_start
    )
    returning worker_id`);
  const dead = rows.map((r) => r.worker_id);
  if (dead.length) {
    await client.query("select graphile_worker.force_unlock_workers($1::text[])", [dead]);
    log.warn("freed jobs of stopped workers", { workers: dead.length });
  }
  return dead.length;
}

/**
 * Starts the graphile-worker runner inside this process. It needs a `pg` pool of its own
 * (postgres.js pools are not supported). A separate session stays open for the life of the process:
 * it is how other instances tell that this one is alive.
 */
export async function startWorker(connectionString: string, concurrency: number, taskList: TaskList): Promise<Worker> {
  const liveness = new pg.Client({ connectionString, application_name: "payments-worker-liveness" });
  liveness.on("error", (err) => log.error("worker liveness session lost", { error: err.message }));
  await liveness.connect();
  await recoverOrphanedJobs(liveness);

  const pool = new pg.Pool({ connectionString, max: concurrency + 2 });
  pool.on("error", (err) => log.error("worker pool error", { error: err.message }));
  pool.on("connect", (client) => client.on("error", (err) => log.error("worker client error", { error: err.message })));

  const registrations: Promise<unknown>[] = [];
  // workers are created inside run(): the listener must be in place before it
  const events = new EventEmitter() as WorkerEvents;
  events.on("worker:create", ({ worker }) => {
    registrations.push(liveness.query(
      `insert into worker_processes (worker_id, backend_pid, backend_start)
       select $1, pid, backend_start from pg_stat_activity where pid = pg_backend_pid()
       on conflict (worker_id) do nothing`,
      [worker.workerId],
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
    recoverOrphanedJobs(liveness).catch((err) => log.error("job recovery failed", { error: err.message }));
  }, SWEEP_EVERY_MS);
  return { runner, pool, liveness, sweeper };
}

export async function stopWorker(worker: Worker): Promise<void> {
  clearInterval(worker.sweeper);
  await worker.runner.stop();
  await worker.pool.end();
  await worker.liveness.query("delete from worker_processes where backend_pid = pg_backend_pid()").catch(() => {});
  await worker.liveness.end();
}
