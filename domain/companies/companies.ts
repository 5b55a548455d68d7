import type { Sql } from "../platform/db.ts";

const knownBySql = new WeakMap<Sql, Set<string>>();
const MAX_CACHED = 50_000;

/**
 * Creates the company row on first use of its token. Seen ids are remembered so the common case costs
 * no query; the insert is idempotent, so a forgotten id only costs one.
 */
export async function ensureCompany(sql: Sql, id: string): Promise<void> {
  let known = knownBySql.get(sql);
  if (!known) knownBySql.set(sql, known = new Set());
  if (known.has(id)) return;
  await sql`insert into companies (id) values (${id}) on conflict (id) do nothing`;
  if (known.size >= MAX_CACHED) known.clear();
  known.add(id);
}
