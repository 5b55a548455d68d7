/**
 * The integrator account (the `companies` row) as authentication sees it: `tokens_valid_after`, read by token_guard.ts
 * and moved by `deno task token:revoke` to end every token issued until then; and the list an operator chooses a
 * company from (`deno task user:create`).
 */
import type { Sql } from "../infra/db.ts";

/**
 * The instant before which (inclusive) the company's tokens are refused, or null; the company row is created on the
 * first use of its token. One statement: the insert when new, the read when not.
 */
export async function companyTokensValidAfter(sql: Sql, id: string): Promise<Date | null> {
  const [row] = await sql<{ tokens_valid_after: Date | null }[]>`
    with made as (
      insert into companies (id) values (${id}) on conflict (id) do nothing returning tokens_valid_after
    )
    select tokens_valid_after from made
    union all
    select tokens_valid_after from companies where id = ${id}`;
  return row?.tokens_valid_after ?? null;
}

/**
 * Ends every token of the company issued until now, however it was made (sign-in or `deno task token`); sign-in and
 * `deno task token` give new ones from the next second. The companies_tokens_revoked trigger tells every instance.
 */
export async function revokeCompanyTokens(sql: Sql, id: string): Promise<Date> {
  const [row] = await sql<{ tokens_valid_after: Date }[]>`
    insert into companies (id, tokens_valid_after) values (${id}, now())
    on conflict (id) do update set tokens_valid_after = excluded.tokens_valid_after
    returning tokens_valid_after`;
  return row.tokens_valid_after;
}

/** A company as an operator chooses it: its id, when it was made, and how many users it has. */
export type CompanyChoice = { id: string; insertedAt: Date; users: number };

/**
 * The newest `limit` companies of the database, with the total, for a command that needs the operator to name one
 * (`deno task user:create` without `--company` and no development company): an operator's view across companies.
 */
export async function listCompanies(sql: Sql, limit: number): Promise<{ companies: CompanyChoice[]; total: number }> {
  const rows = await sql<{ id: string; inserted_at: Date; users: number; total: number }[]>`
    select c.id, c.inserted_at, (select count(*)::int from users u where u.company_id = c.id) as users,
      count(*) over ()::int as total
    from companies c
    order by c.inserted_at desc, c.id
    limit ${limit}`;
  return {
    companies: rows.map((r) => ({ id: r.id, insertedAt: r.inserted_at, users: r.users })),
    total: rows[0]?.total ?? 0,
  };
}
