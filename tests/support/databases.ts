/**
 * Where the suite's databases live and what they are called. Kept apart from helpers.ts so the test runner
 * (tests/run.ts) can use it without loading the app.
 *
 * Every test makes its own database, `<base>_<name>_<run id><process id>`: the run id comes from the runner
 * (TEST_RUN_ID), so at the end of a run it can drop what a crashed or aborted test file left behind; the process
 * id keeps two test files that happen to pick the same name apart.
 */
import postgres from "postgres";
import { withUser as withUserName } from "../../domain/infra/config.ts";

/** The server and base database name used when TEST_DATABASE_URL is not set. */
export const DEFAULT_TEST_DATABASE_URL = "postgres://127.0.0.1:5432/payments_test";

const PROCESS_ID_LENGTH = 4;

/** The run id the runner hands to every test process, or one of this process alone when run without it. */
export const RUN_ID = Deno.env.get("TEST_RUN_ID") || newRunId();
const PROCESS_ID = crypto.randomUUID().slice(0, PROCESS_ID_LENGTH);

export function newRunId(): string {
  return crypto.randomUUID().slice(0, 6);
}

/** `url` with a user name: both drivers need one, and `pg` does not fall back to the OS user. */
export function withUser(url: string): string {
  return withUserName(url, Deno.env.get("PGUSER") ?? Deno.env.get("USER") ?? "postgres");
}

/** The Postgres server and base database name the suite runs against. */
export function testDatabaseUrl(suffix?: string): string {
  const base = withUser(Deno.env.get("TEST_DATABASE_URL") || DEFAULT_TEST_DATABASE_URL);
  if (!suffix) return base;
  const url = new URL(base);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}

/** The URL of the database one test named `name` uses in this run and process. */
export function perTestDatabaseUrl(name: string): string {
  return testDatabaseUrl(`${name}_${RUN_ID}${PROCESS_ID}`);
}

/** The same URL on the server's maintenance database, to create and drop others from. */
export function adminUrl(url: string): string {
  const admin = new URL(url);
  admin.pathname = "/postgres";
  return admin.toString();
}

/**
 * The migrated database the runner made for this run (TEST_TEMPLATE_DATABASE), or null when a test file runs on its
 * own without the runner.
 */
export const TEMPLATE_DATABASE = Deno.env.get("TEST_TEMPLATE_DATABASE") || null;

/**
 * Creates the database of `url` as a copy of `template`: a few dozen milliseconds where running the migrations takes
 * a second. Copies of one template may be made at once; the template itself must have no session open.
 */
export async function cloneDatabase(url: string, template: string): Promise<void> {
  const dbName = decodeURIComponent(new URL(url).pathname.slice(1));
  const sql = postgres(adminUrl(url), { max: 1, onnotice: () => {} });
  try {
    await sql`create database ${sql(dbName)} template ${sql(template)}`;
  } finally {
    await sql.end();
  }
}

/** Drops a database (its connections are closed by then, or forced out). */
export async function dropDatabase(url: string): Promise<void> {
  const dbName = decodeURIComponent(new URL(url).pathname.slice(1));
  const sql = postgres(adminUrl(url), { max: 1, onnotice: () => {} });
  try {
    await sql`drop database if exists ${sql(dbName)} with (force)`;
  } finally {
    await sql.end();
  }
}

/** Whether the server of `url` has a database called `name`, by default the one `url` names. */
export async function databaseExists(
  url: string,
  name = decodeURIComponent(new URL(url).pathname.slice(1)),
): Promise<boolean> {
  const sql = postgres(adminUrl(withUser(url)), { max: 1, onnotice: () => {} });
  try {
    return (await sql`select 1 from pg_database where datname = ${name}`).length > 0;
  } finally {
    await sql.end();
  }
}

/** The databases of run `runId` still on the server of `baseUrl`, for example after a test file was killed. */
export async function leftoverDatabases(baseUrl: string, runId: string): Promise<string[]> {
  const base = decodeURIComponent(new URL(baseUrl).pathname.slice(1));
  const escape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  // `_` matches exactly one character: the process id's length
  const pattern = `${escape(base)}\\_%\\_${escape(runId)}${"_".repeat(PROCESS_ID_LENGTH)}`;
  const sql = postgres(adminUrl(baseUrl), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ datname: string }[]>`
      select datname from pg_database where datname like ${pattern} order by datname`;
    return rows.map((r) => r.datname);
  } finally {
    await sql.end();
  }
}

/** Drops what run `runId` left on the server of `baseUrl`; returns the names it dropped. */
export async function dropLeftovers(baseUrl: string, runId: string): Promise<string[]> {
  const names = await leftoverDatabases(baseUrl, runId);
  for (const name of names) {
    const url = new URL(baseUrl);
    url.pathname = `/${encodeURIComponent(name)}`;
    await dropDatabase(url.toString());
  }
  return names;
}
