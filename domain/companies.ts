import type { Sql } from "../lib/db.ts";

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

export type CompanyProfile = {
  id: string;
  social_name: string | null;
  document_type: string | null;
  document_number: string | null;
};

export async function companyProfile(sql: Sql, id: string): Promise<CompanyProfile> {
  const [row] = await sql<CompanyProfile[]>`
    select id, social_name, document_type, document_number from companies where id = ${id}`;
  return row ?? { id, social_name: null, document_type: null, document_number: null };
}
