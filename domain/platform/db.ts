import postgres from "postgres";
import { log } from "./log.ts";

/** The pool: each statement commits on its own; `sql.begin` opens a transaction. */
export type Sql = postgres.Sql;
/**
 * Inside `sql.begin`. A function that must commit together with its caller's change (one that writes an event, or
 * calls something that does) takes this, so passing the pool is a compile error rather than a half-done write.
 */
export type TransactionSql = postgres.TransactionSql;
/** Either: for reads and single statements that are whole on their own but may also join a caller's transaction. */
export type Tx = TransactionSql | Sql;

export function connect(url: string, options: { max?: number } = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: { application_name: "payments-api", TimeZone: "UTC" },
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
