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
 * fails as a read-only transaction (25006): that too is "no primary right now" (README, "A Postgres HA cluster").
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
