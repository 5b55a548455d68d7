/**
 * The graphile-worker runner of a worker process, and the session in `worker_processes` by which instances tell a dead
 * peer from a live one and free its jobs and leases. The only file on the `pg` driver, which graphile-worker needs.
 */

import { Logger, run, type Runner, type TaskList, type WorkerEvents } from "graphile-worker";
import { EventEmitter } from "node:events";
// @ts-types="npm:@types/pg@8.23.1"
import pg from "pg";
import { log } from "../basics/log.ts";

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

/**
 * Work that runs beside graphile-worker in a worker process, started once the process is registered (so that what it
 * leases under the process id is freed if the process dies) and stopped before graphile-worker is.
 */
export type Companion = {
  start(worker: { connectionString: string }): Promise<void>;
  stop(): Promise<void>;
  /**
   * The liveness session was lost and is open again (a failover, a restart of the database): what the companion
   * leased under the process id and does not know it holds (a statement whose answer was lost) may go back now.
   */
  sessionReopened?(): Promise<void>;
};

export type Worker = {
  runner: Runner;
  pool: pg.Pool;
  liveness: Liveness;
  sweeper: ReturnType<typeof setInterval>;
  companions: Companion[];
};

/** Called with the ids of worker processes found dead, after their jobs were unlocked. */
export type OnDeadProcesses = (processIds: string[]) => Promise<void>;

const SWEEP_EVERY_MS = 5_000;
/** Longer than a peer takes to open its session again once the database is back (its retries wait 2 s at most). */
const RECONNECT_GRACE_MS = 10_000;

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
 * The session that tells other instances this process is alive: registered in `worker_processes` with the ids of
 * its graphile-worker pools. When the database goes away (a restart, a failover) the session is lost; it is opened
 * again as soon as the server answers and the registration renewed, so the process carries on by itself.
 */
class Liveness {
  private client: pg.Client | null = null;
  private reconnecting: Promise<void> | null = null;
  private stopped = false;
  private workerIds: string[] = [];
  /** When the session was last opened again after a loss (0: never lost). */
  private reopenedAt = 0;

  constructor(
    private connectionString: string,
    readonly processId: string,
    /** Called each time the session is open again after a loss, once registered anew. */
    private onReopened: () => Promise<unknown> = () => Promise.resolve(),
  ) {}

  async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: "payments-worker-liveness",
    });
    client.on("error", (err) => {
      log.error("worker liveness session lost", { error: err.message });
      this.lost(client);
    });
    client.on("end", () => this.lost(client));
    await client.connect();
    await client.query(
      `insert into worker_processes (id, backend_pid, backend_start, worker_ids)
       select $1, pid, backend_start, $2 from pg_stat_activity where pid = pg_backend_pid()
       on conflict (id) do update set backend_pid = excluded.backend_pid, backend_start = excluded.backend_start,
         worker_ids = excluded.worker_ids`,
      [this.processId, this.workerIds],
    );
    this.client = client;
  }

  /** A pool of graphile-worker workers whose locked jobs are freed if this process dies. */
  async addWorker(workerId: string): Promise<void> {
    this.workerIds.push(workerId);
    await this.client?.query("update worker_processes set worker_ids = array_append(worker_ids, $2) where id = $1", [
      this.processId,
      workerId,
    ]);
  }

  /** The session, or null while it is being opened again (the caller skips its turn). */
  get session(): pg.Client | null {
    return this.client;
  }

  /**
   * Whether other processes may be judged now. A restart or a failover of the database ends every process's session
   * at once, and each opens its own again in its own time: until `RECONNECT_GRACE_MS` after this one did, a peer
   * without a session is more likely on its way back than dead, and handing its jobs and leases to others would run
   * a delivery twice at once (a sequential endpoint's order broken).
   */
  get mayJudgeOthers(): boolean {
    return Date.now() - this.reopenedAt >= RECONNECT_GRACE_MS;
  }

  private lost(client: pg.Client) {
    if (this.client !== client || this.stopped) return;
    this.client = null;
    client.end().catch(() => {});
    this.reconnecting ??= this.reconnect().finally(() => this.reconnecting = null);
  }

  private async reconnect() {
    for (let wait = 100; !this.stopped; wait = Math.min(wait * 2, 2_000)) {
      await new Promise((r) => setTimeout(r, wait));
      try {
        await this.connect();
        this.reopenedAt = Date.now();
        log.info("worker liveness session open again", { process_id: this.processId });
        // not awaited: a loss while it runs must find no reconnection in progress and start one
        this.onReopened().catch((err) => log.warn("after the liveness session opened again", { error: err.message }));
        return;
      } catch { /* the database is still away */ }
    }
  }

  async end(): Promise<void> {
    this.stopped = true;
    await this.reconnecting;
    const client = this.client;
    this.client = null;
    if (!client) return;
    // A job fetched while the runner was stopping can stay locked by it (for hours, in graphile-worker's eyes):
    // nothing of this process runs any more, so whatever it still holds goes back to the queue.
    await client.query(
      `with gone as (delete from worker_processes where id = $1 returning worker_ids)
       select graphile_worker.force_unlock_workers(coalesce((select worker_ids from gone), '{}'))`,
      [this.processId],
    ).catch((err) => log.warn("could not hand back the jobs of this process", { error: err.message }));
    await client.end();
  }
}

/** graphile-worker's jobs run at most this many at a time in one process. */
const MAX_TASK_CONCURRENCY = 4;
/** How soon an idle graphile-worker finds a job whose `run_at` came (a job added now is announced at once). */
const POLL_INTERVAL_MS = 1000;

/**
 * Starts the graphile-worker runner inside this process, registered as `processId`. It needs a `pg` pool of its
 * own (postgres.js pools are not supported). A separate session stays open for the life of the process: it is how
 * other instances tell that this one is alive.
 */
export async function startWorker(
  connectionString: string,
  concurrency: number,
  taskList: TaskList,
  opts: {
    processId?: string;
    onDeadProcesses?: OnDeadProcesses;
    onSweep?: () => Promise<unknown>;
    companions?: Companion[];
  } = {},
): Promise<Worker> {
  const companions = opts.companions ?? [];
  // what the companions leased and lost track of when the session went (docs/production.md, "Leases whose claim went
  // unanswered")
  const reopened = () => Promise.all(companions.map((c) => c.sessionReopened?.()));
  const liveness = new Liveness(connectionString, opts.processId ?? crypto.randomUUID(), reopened);
  await liveness.connect();
  const sweep = async () => {
    const session = liveness.session;
    if (!session) return; // the database is away: the next sweep after it is back does the work
    if (liveness.mayJudgeOthers) await recoverDeadProcesses(session, opts.onDeadProcesses);
    await opts.onSweep?.();
  };
  await sweep();

  // graphile-worker runs only the few tasks left to it (a wire's retry); the webhook drainers, its companions, have
  // their own concurrency. Each of its workers polls on its own when idle: 32 of them every 200 ms made 160 queries a
  // second of an idle service, a few percent of the CPU every request shares (docs/performance.md, "What changed").
  // New jobs are announced by NOTIFY; the poll only finds jobs scheduled for later, within POLL_INTERVAL_MS.
  const taskConcurrency = Math.min(concurrency, MAX_TASK_CONCURRENCY);
  // Tasks run their own queries through postgres.js; this pool only serves graphile-worker's fetch and complete
  // queries, so it need not grow with the concurrency (every connection counts against max_connections).
  const pool = new pg.Pool({ connectionString, max: taskConcurrency + 2 });
  pool.on("error", (err) => log.error("worker pool error", { error: err.message }));
  pool.on("connect", (client) => client.on("error", (err) => log.error("worker client error", { error: err.message })));

  const registrations: Promise<unknown>[] = [];
  // workers are created inside run(): the listener must be in place before it
  const events = new EventEmitter() as WorkerEvents;
  events.on("worker:create", ({ worker }) => registrations.push(liveness.addWorker(worker.workerId)));
  // graphile-worker 0.18 locks jobs with the pool's id (locked_by = "pool-..."), not the worker's
  events.on("pool:create", ({ workerPool }) => registrations.push(liveness.addWorker(workerPool.id)));
  const runner = await run({
    pgPool: pool,
    taskList,
    concurrency: taskConcurrency,
    pollInterval: POLL_INTERVAL_MS,
    parsedCronItems: [],
    noHandleSignals: true,
    logger: workerLogger(),
    events,
    // graphile-worker's local queue and batched completion stay off (docs/operations.md, "Memory and throughput").
  });
  await Promise.all(registrations);
  const sweeper = setInterval(() => {
    sweep().catch((err) => log.error("recovery sweep failed", { error: err.message }));
  }, SWEEP_EVERY_MS);
  for (const companion of companions) await companion.start({ connectionString });
  return { runner, pool, liveness, sweeper, companions };
}

export async function stopWorker(worker: Worker): Promise<void> {
  clearInterval(worker.sweeper);
  await Promise.all(worker.companions.map((c) => c.stop()));
  await worker.runner.stop();
  await worker.pool.end();
  await worker.liveness.end();
}
