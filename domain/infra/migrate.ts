/**
 * Brings the schema up to date at start: graphile-worker's own, then the numbered files of `sql/`, each once, with
 * every instance starting at the same time taking turns on one advisory lock.
 */

import { runMigrations } from "graphile-worker";
import type { Sql } from "./db.ts";
import { log } from "../basics/log.ts";
import { workerLogger } from "./worker.ts";

const LOCK_KEY = 72_010_001; // any constant shared by every instance of this service

/** The numbered files of `sql/`, in order. */
export async function migrationFiles(dir = new URL("../../sql/", import.meta.url)) {
  const files: { version: string; text: string }[] = [];
  for await (const entry of Deno.readDir(dir)) {
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
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`create table if not exists schema_migrations (
      version text primary key,
      applied_at timestamptz not null default now()
    )`;
  });
  // graphile-worker's own schema first: jobs are added with plain SQL (graphile_worker.add_job) even by API-only
  // instances, and sql/0019 and sql/0020 (whose functions sql/0023 drops) name its types and tables.
  await runMigrations({ connectionString, logger: workerLogger() });
  for (const file of await migrationFiles()) {
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
      const [done] = await tx`select 1 from schema_migrations where version = ${file.version}`;
      if (done) return;
      await tx.unsafe(file.text);
      await tx`insert into schema_migrations (version) values (${file.version})`;
      log.info("migration applied", { version: file.version });
    });
  }
}
