/**
 * The postgres.js pool and its types, and how to tell a database that is away from a statement that failed, so that
 * callers can wait for it to come back. Creating the database and probing the server live here too.
 */

import postgres from "postgres";
import { log } from "../basics/log.ts";
import { VERSION } from "./version.ts";

/** Every connection of this release's pool says so (docs/production.md, "Upgrading"). */
export const APPLICATION_NAME = `payments-api/${VERSION}`;

/** The pool: each statement commits on its own; `sql.begin` opens a transaction. */
export type Sql = postgres.Sql;
/**
 * Inside `sql.begin`. A function that must commit together with its caller's change (one that writes an event, or
 * calls something that does) takes this, so passing the pool is a compile error rather than a half-done write.
 */
export type TransactionSql = postgres.TransactionSql;
/** Either: for reads and single statements that are whole on their own but may also join a caller's transaction. */
export type SqlOrTransaction = TransactionSql | Sql;

export function connect(url: string, options: { max?: number } = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    // postgres.js waits up to 20 s (3^n / 100 s) before it reconnects after failed attempts, which kept the service
    // idle for seconds after a database restart: a second at most, the callers retry on their own.
    backoff: (retries: number) => (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 1),
    onnotice: () => {},
    // jit off: every statement here is a short index read or write, and a plan whose estimate passes jit_above_cost
    // (the stats read's sums over a busy endpoint's rows) spent about half a second compiling (docs/performance.md)
    // application_name carries the release: the contract step refuses while another release is connected
    connection: { application_name: APPLICATION_NAME, TimeZone: "UTC", jit: "off" },
    types: {
      // `date` stays the exact YYYY-MM-DD text; a JS Date would shift it by the process time zone.
      date: { to: 1082, from: [1082], serialize: (x: string) => x, parse: (x: string) => x },
    },
  });
}

/**
 * A transaction like `sql.begin`, one round trip shorter, for the money routes (docs/performance.md, "What changed"):
 * `sql.begin` waits for the answer to BEGIN before `work` sends anything; here BEGIN is queued on a reserved connection
 * and goes out in the same write as the first statements `work` sends (postgres.js gathers what a connection sends in
 * one tick), and `work` may queue COMMIT behind its last statements (`commitNow`), so the locks it took are held one
 * round trip less. Postgres runs them in order; when one fails the transaction is rolled back. `work` must not use
 * savepoints (a reserved connection has none of `sql.begin`'s helpers).
 *
 * What keeps every statement inside the transaction:
 * - `work`'s statements pass a gate that refuses them (they fail, nothing is sent) once BEGIN has failed and once
 *   COMMIT or ROLLBACK is queued, so none runs in a session that is no longer in the transaction. Only what went out
 *   in BEGIN's own write could run without it, and BEGIN on an idle session fails only with the session itself (a
 *   failover, which fails everything sent behind it: docs/database-driver.md) or a cancel landing on it, which the
 *   service never sends; then `work` fails at its first answer, before anything else is sent.
 * - COMMIT or ROLLBACK is always sent on a live connection, and the connection is always handed back, also when
 *   `work` or the commit throws; a connection lost under it (a failover) is left to the pool, which reconnects it.
 */
export async function transaction<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  try {
    return await transactionOnce(sql, work);
  } catch (err) {
    // as `sql.begin` does (docs/database-driver.md, "The patch", 5): the stale statement is forgotten by now
    if (!isStalePlan(err)) throw err;
    return await transactionOnce(sql, work);
  }
}

/**
 * Runs `write` again (up to three times in all) when Postgres chose it as a deadlock's victim: it rolled back whole, so
 * running it again is safe. Two writers of the same rows in different orders meet this (a manual retry of a batch
 * while the engine records its attempt; the engine's fan-out and a request's endpoint update).
 */
export async function afterDeadlock<T>(write: () => Promise<T>): Promise<T> {
  for (let tries = 1;; tries++) {
    try {
      return await write();
    } catch (err) {
      if ((err as { code?: string }).code !== "40P01" || tries >= 3) throw err;
    }
  }
}

/**
 * Whether `err` is Postgres refusing a prepared statement whose plan a schema change made stale ("cached plan must not
 * change result type"): an expand migration adding a column to a table a statement reads with `*` does it to every
 * session that prepared the statement before (docs/production.md, "Old and new side by side (1.3.0 and 1.4.0)").
 */
function isStalePlan(err: unknown): boolean {
  const routine = (err as { routine?: unknown } | null)?.routine;
  return routine === "RevalidateCachedQuery" || routine === "FetchPreparedStatement";
}

async function transactionOnce<T>(sql: Sql, work: (tx: TransactionSql) => Promise<T>): Promise<T> {
  const conn = await sql.reserve();
  // null while statements may be sent; then the COMMIT or ROLLBACK that ends the transaction
  let ending: Promise<readonly unknown[] & { command: string }> | null = null;
  let beginFailed: unknown = null;
  const end = (statement: "commit" | "rollback") => {
    ending = conn.unsafe(statement).execute();
    // answered below; a failed one must not be reported as unhandled in the meantime
    ending.catch(() => {});
    return ending;
  };
  const tx = gated(conn, () => beginFailed === null && ending === null);
  try {
    // its failure fails `work` at its first answer (the statements are answered in order, BEGIN's first)
    const begun = conn.unsafe("begin").execute().then(() => {}, (err) => void (beginFailed = err));
    commitQueues.set(tx, () => void end("commit"));
    const result = await work(tx);
    await begun;
    if (beginFailed !== null) throw beginFailed;
    const done = await (ending ?? end("commit"));
    // a statement that failed unawaited leaves Postgres nothing to commit: it answers COMMIT with ROLLBACK
    if (done.command !== "COMMIT") {
      throw new Error(`the transaction ended in ${done.command}: a statement in it failed`);
    }
    return result;
  } catch (err) {
    if (ending === null) await end("rollback").catch(() => {});
    else await Promise.resolve(ending).catch(() => {});
    throw beginFailed ?? err;
  } finally {
    commitQueues.delete(tx);
    conn.release();
  }
}

/**
 * Inside `transaction`: queues COMMIT behind the statements already handed to the connection, so it leaves in the same
 * write, and refuses any statement after it. Handed means `execute()`d: a statement that is only awaited is handed a
 * few microtasks later, and COMMIT would overtake it. The caller must have handed over everything the transaction
 * writes (the pay-in's last batch: transactions.ts, `storeWithEvent`): a throw after it does not undo what COMMIT
 * commits, unless a statement before it failed (then Postgres answers COMMIT with ROLLBACK). Inside `sql.begin` it does
 * nothing: that commits when its callback returns.
 */
export function commitNow(tx: TransactionSql): void {
  commitQueues.get(tx)?.();
}

const commitQueues = new WeakMap<object, () => void>();

/**
 * `conn` for `work`: a statement made through it is refused (fails, unsent) when it is handed to the connection
 * (awaited or `execute()`d) while not `open()`. Checked when handed, not when written: postgres.js writes a statement a
 * microtask later, and a COMMIT queued behind a statement already handed must still go after it.
 */
function gated(conn: postgres.ReservedSql, open: () => boolean): TransactionSql {
  type Statement = { handle: () => unknown; handler: (q: { reject: (e: unknown) => void }) => void };
  const refuse = (q: { reject: (e: unknown) => void }) =>
    q.reject(new Error("statement outside its transaction refused"));
  const gate = <T>(made: T): T => {
    const statement = made as unknown as Partial<Statement>;
    if (!(made instanceof Promise) || typeof statement.handle !== "function") return made; // a fragment's parts
    const handle = statement.handle;
    statement.handle = function (this: Statement) {
      if (!open()) this.handler = refuse;
      return handle.call(this);
    };
    return made;
  };
  return new Proxy(conn, {
    apply: (target, self, args) => gate(Reflect.apply(target, self, args)),
    get: (target, name, receiver) => {
      const value = Reflect.get(target, name, receiver);
      return name === "unsafe" ? (...args: unknown[]) => gate(Reflect.apply(value, target, args)) : value;
    },
  }) as unknown as TransactionSql;
}

/** Creates the database named in `url` when the server answers but the database does not exist yet. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, "")) || "postgres";
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await sql`select 1 from pg_database where datname = ${name}`;
    if (exists) return;
    await sql`create database ${sql(name)}`;
    log.info("database created", { database: name });
  } catch (err) {
    // Two processes starting at once may both try: losing that race is fine.
    const code = (err as { code?: string }).code;
    if (code !== "42P04" && code !== "23505") throw err;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** True when a Postgres server accepts connections at `url` (used to decide on the embedded fallback). */
export async function serverAnswers(url: string): Promise<boolean> {
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const sql = postgres(admin.toString(), { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    // The server answered but refused this database or role: it is there.
    return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * True for an error that says the database could not be reached or went away (refused, reset, shutting down,
 * starting up), as opposed to an error in the statement: the same statement may succeed once the server is back.
 * On an HA cluster a write that reaches a primary being demoted, or a replica the proxy has not yet taken out,
 * fails as a read-only transaction (25006): that too is "no primary right now" (docs/operations.md, "A Postgres HA
 * cluster").
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return /^(08|57P)/.test(code) || code === READ_ONLY_TRANSACTION || UNREACHABLE_CODES.has(code);
}

const READ_ONLY_TRANSACTION = "25006";

/**
 * True for an error that escaped the database client libraries while a connection went down: a lost connection's
 * error that graphile-worker's job completion leaves unhandled, or postgres.js writing to a socket it has just
 * closed. The process survives these (main.ts); any other uncaught error still ends it.
 */
export function isConnectionLayerFault(err: unknown): boolean {
  if (isDatabaseUnreachable(err)) return true;
  const stack = err instanceof Error ? err.stack ?? "" : "";
  return /\/postgres\/src\/connection\.js|\/pg\/lib\/client\.js|\/pg-pool\//.test(stack);
}

/** postgres.js's and the socket's own codes for a connection that could not be made or was lost. */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTCONN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);

/**
 * Runs `attempt` again while it fails because the database is unreachable, waiting a little longer each time (up
 * to a second), until `deadline` (ms since the epoch): work already done elsewhere (a request sent to a receiver)
 * is recorded once the database is back instead of being lost with the connection. Any other error, or the deadline,
 * ends it with that error.
 */
export async function whileUnreachable<T>(attempt: () => Promise<T>, deadline: number): Promise<T> {
  for (let wait = 50;; wait = Math.min(wait * 2, 1_000)) {
    try {
      return await attempt();
    } catch (err) {
      if (!isDatabaseUnreachable(err) || Date.now() + wait > deadline) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
