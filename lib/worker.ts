import { Logger, run, type Runner, type TaskList } from "graphile-worker";
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

export type Worker = { runner: Runner; pool: pg.Pool };

/**
 * Starts the graphile-worker runner inside this process. It needs a `pg` pool of its own
 * (postgres.js pools are not supported), sized to the concurrency plus room for its housekeeping.
 */
export async function startWorker(connectionString: string, concurrency: number, taskList: TaskList): Promise<Worker> {
  const pool = new pg.Pool({ connectionString, max: concurrency + 2 });
  pool.on("error", (err) => log.error("worker pool error", { error: err.message }));
  pool.on("connect", (client) => client.on("error", (err) => log.error("worker client error", { error: err.message })));
  const runner = await run({
    pgPool: pool,
    taskList,
    concurrency,
    pollInterval: 200,
    parsedCronItems: [],
    noHandleSignals: true,
    logger: workerLogger(),
  });
  return { runner, pool };
}

export async function stopWorker(worker: Worker): Promise<void> {
  await worker.runner.stop();
  await worker.pool.end();
}
