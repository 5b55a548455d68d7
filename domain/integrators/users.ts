/**
 * The users who sign in for a company: created, reset and disabled by an operator (`deno task user:...`), checked at
 * sign-in. Hashing is passwords.ts's and sessions are sessions.ts's.
 */
import type { Sql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import type { WorkQueue } from "../basics/work_pool.ts";
import { generatePassword, hashPassword, passwordMatches, UNKNOWN_USER_HASH } from "./passwords.ts";

export type User = { id: string; companyId: string; username: string; name: string };

type UserRow = {
  id: string;
  company_id: string;
  username: string;
  name: string;
  password_hash: string;
  disabled_at: Date | null;
};

const toUser = (r: UserRow): User => ({ id: r.id, companyId: r.company_id, username: r.username, name: r.name });

export const USERNAME_RE = /^[A-Za-z0-9._@+\-]{1,100}$/;

/**
 * The one form of a username that storage, lookup and the sign-in throttle compare: surrounding spaces dropped,
 * compatibility forms unified (NFKC: a full-width "ａ" is "a") and case folded (upper then lower case, so "ß" and "SS"
 * meet). Made here, never by Postgres' lower(), whose folding depends on the database's collation.
 */
export function usernameKey(username: string): string {
  return username.trim().normalize("NFKC").toUpperCase().toLowerCase().normalize("NFKC");
}

/**
 * Creates a user of `companyId` (and the company row when new) with a generated password, returned once: only its
 * hash is stored. A username taken already (whatever its case) is refused.
 */
export async function createUser(
  sql: Sql,
  input: { companyId: string; username: string; name?: string },
): Promise<{ user: User; password: string } | { error: string }> {
  if (!USERNAME_RE.test(input.username)) {
    return { error: "username must be 1 to 100 letters, digits or . _ @ + -" };
  }
  const password = generatePassword();
  const hash = await hashPassword(password);
  const rows = await sql.begin(async (tx) => {
    await tx`insert into companies (id) values (${input.companyId}) on conflict (id) do nothing`;
    return await tx<UserRow[]>`
      insert into users (id, company_id, username, username_key, name, password_hash)
      values (${newId()}, ${input.companyId}, ${input.username}, ${usernameKey(input.username)},
              ${input.name ?? input.username}, ${hash})
      on conflict do nothing
      returning *`;
  });
  if (!rows.length) return { error: `username ${input.username} is taken` };
  return { user: toUser(rows[0]), password };
}

/**
 * Replaces the password of `username` with a generated one, returned once, and ends the user's sessions (the
 * sessions_revoked trigger tells every instance); null when there is no such user.
 */
export async function resetPassword(sql: Sql, username: string): Promise<{ user: User; password: string } | null> {
  const password = generatePassword();
  const hash = await hashPassword(password);
  const [row] = await sql<UserRow[]>`
    with changed as (
      update users set password_hash = ${hash}, updated_at = now()
      where username_key = ${usernameKey(username)}
      returning *
    ), ended as (
      update sessions set revoked_at = now()
      where user_id in (select id from changed) and revoked_at is null
    )
    select * from changed`;
  return row ? { user: toUser(row), password } : null;
}

/**
 * Disables (or enables again) `username`: a disabled user cannot sign in, and disabling ends its sessions at once.
 * Null when there is no such user.
 */
export async function setUserDisabled(sql: Sql, username: string, disabled: boolean): Promise<User | null> {
  const [row] = await sql<UserRow[]>`
    with changed as (
      update users set disabled_at = case when ${disabled} then coalesce(disabled_at, now()) end, updated_at = now()
      where username_key = ${usernameKey(username)}
      returning *
    ), ended as (
      update sessions set revoked_at = now()
      where ${disabled} and user_id in (select id from changed) and revoked_at is null
    )
    select * from changed`;
  return row ? toUser(row) : null;
}

/**
 * The user whose username and password these are, or null. An unknown username, or a disabled user, still costs one
 * hash (against a hash nobody knows the password of for the unknown one), so the time taken does not tell which
 * usernames exist. The hash waits for a place in the bounded pool of `passwords.ts`.
 */
export async function authenticate(
  sql: Sql,
  pool: WorkQueue,
  username: string,
  password: string,
): Promise<User | null> {
  const [row] = await sql<UserRow[]>`select * from users where username_key = ${usernameKey(username)}`;
  const matches = await passwordMatches(password, row?.password_hash ?? UNKNOWN_USER_HASH, pool);
  return row && matches && !row.disabled_at ? toUser(row) : null;
}
