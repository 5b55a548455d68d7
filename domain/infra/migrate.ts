/**
 * Brings the schema up to date: at start, graphile-worker's own, then the numbered expand files of `sql/`, each once,
 * with every instance starting at the same time taking turns on one advisory lock; on the operator's word
 * (`deno task migrate --contract`), the contract files of `sql/contract/`, once no instance of an earlier release is
 * connected (docs/production.md, "Upgrading").
 */

import { runMigrations } from "graphile-worker";
import { APPLICATION_NAME, type Sql } from "./db.ts";
import { log } from "../basics/log.ts";
import { workerLogger } from "./worker.ts";

const LOCK_KEY = 72_010_001; // any constant shared by every instance of this service

export const CONTRACT_DIR = new URL("../../sql/contract/", import.meta.url);

/** The numbered files of `dir` (`sql/` by default), in order; none when the folder does not exist. */
export async function migrationFiles(dir = new URL("../../sql/", import.meta.url)) {
  const files: { version: string; text: string }[] = [];
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch((err) => {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  });
  for (const entry of entries) {
    if (entry.isFile && /^\d{4}_.+\.sql$/.test(entry.name)) {
      files.push({
        version: entry.name.replace(/\.sql$/, ""),
        text: await Deno.readTextFile(new URL(entry.name, dir)),
      });
    }
  }
  return files.sort((a, b) => a.version.localeCompare(b.version));
}

/**
 * Applies each pending file once, in order, each in its own transaction. The transaction-scoped advisory lock
 * makes two processes starting together take turns; the second one then sees the version recorded and skips it.
 */
export async function migrate(sql: Sql, connectionString: string): Promise<void> {
  await ensureMigrationsTable(sql);
  // graphile-worker's own schema first: jobs are added with plain SQL (graphile_worker.add_job) even by API-only
  // instances, and sql/0019 and sql/0020 (whose functions sql/0023 drops) name its types and tables.
  await runMigrations({ connectionString, logger: workerLogger() });
  await applyEach(sql, await migrationFiles(), "");
}

async function ensureMigrationsTable(sql: Sql) {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`create table if not exists schema_migrations (
      version text primary key,
      applied_at timestamptz not null default now()
    )`;
  });
}

/** Each file not yet recorded, in order, each in its own transaction under the lock; `prefix` names its folder. */
async function applyEach(sql: Sql, files: { version: string; text: string }[], prefix: string) {
  const applied: string[] = [];
  for (const file of files) {
    const version = prefix + file.version;
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
      const [done] = await tx`select 1 from schema_migrations where version = ${version}`;
      if (done) return;
      await tx.unsafe(file.text);
      await tx`insert into schema_migrations (version) values (${version})`;
      log.info("migration applied", { version });
      applied.push(version);
    });
  }
  return applied;
}

/** Connections of the service that name no release or another release than this one, by application name. */
export async function otherReleasesConnected(sql: Sql): Promise<{ application_name: string; connections: number }[]> {
  return await sql<{ application_name: string; connections: number }[]>`
    select application_name, count(*)::int as connections
    from pg_stat_activity
    where datname = current_database()
      and (application_name = 'payments-api' or application_name like 'payments-api/%')
      and application_name <> ${APPLICATION_NAME}
    group by application_name
    order by application_name`;
}

/** Why the contract step may not run now, in one sentence, or null when it may. */
export class ContractRefused extends Error {}

/**
 * The contract step, on a database the expand files were applied to (`migrate`; a contract file may rely on them):
 * the files of `sql/contract/`, which remove what only an earlier release used. Refused while any instance of another
 * release is connected: an instance of the previous release still running, or started again by a rollback, would call
 * what is removed.
 */
export async function contract(sql: Sql, dir = CONTRACT_DIR): Promise<string[]> {
  const others = await otherReleasesConnected(sql);
  if (others.length > 0) {
    const named = others.map((o) => `${o.connections} as ${o.application_name}`).join(", ");
    throw new ContractRefused(
      `instances of another release are still connected (${named}): stop or upgrade them first, then run the ` +
        'contract step again (docs/production.md, "Upgrading")',
    );
  }
  return await applyEach(sql, await migrationFiles(dir), "contract/");
}
