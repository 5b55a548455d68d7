/**
 * Sessions: a token from sign-in carries its session's id as `jti`, and answers only while the row is there, not
 * revoked and not expired (docs/production.md, "Sessions and revocation"). Ending one is an UPDATE; the
 * sessions_revoked trigger (sql/0021) tells every instance, whose caches (token_guard.ts) forget the company's.
 */
import type { Sql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";

/** Opens a session of `userId` for `ttlSeconds`: its id goes in the token as `jti`. */
export async function startSession(
  sql: Sql,
  session: { companyId: string; userId: string; ttlSeconds: number },
): Promise<string> {
  const id = newId();
  await sql`
    insert into sessions (id, company_id, user_id, expires_at)
    values (${id}, ${session.companyId}, ${session.userId},
            now() + make_interval(secs => ${session.ttlSeconds}))`;
  return id;
}

/** Ends the session `id` of the company; false when there was none left to end. */
export async function endSession(sql: Sql, companyId: string, id: string): Promise<boolean> {
  const { count } = await sql`
    update sessions set revoked_at = now()
    where id = ${id} and company_id = ${companyId} and revoked_at is null`;
  return count > 0;
}

/** Whether the session `id` of the company still opens its token. */
export async function sessionActive(sql: Sql, companyId: string, id: string): Promise<boolean> {
  const [row] = await sql`
    select 1 from sessions
    where id = ${id} and company_id = ${companyId} and revoked_at is null and expires_at > now()`;
  return row !== undefined;
}

/**
 * Deletes sessions expired more than a day ago (a revoked one expires too), in one bounded batch; returns how many.
 * Their tokens are refused by their `exp` anyway.
 */
export async function pruneSessions(sql: Sql, batchSize = 1000): Promise<number> {
  const { count } = await sql`
    delete from sessions where id in (
      select id from sessions where expires_at < now() - interval '1 day' limit ${batchSize}
    )`;
  return count;
}
