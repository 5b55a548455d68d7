import type { Sql } from "../platform/db.ts";
import { newId } from "../platform/ids.ts";
import { generatePassword, hashPassword, passwordMatches, UNKNOWN_USER_HASH } from "./passwords.ts";

export type User = { id: string; companyId: string; username: string; name: string };

type UserRow = { id: string; company_id: string; username: string; name: string; password_hash: string };

const toUser = (r: UserRow): User => ({ id: r.id, companyId: r.company_id, username: r.username, name: r.name });

export const USERNAME_RE = /^[A-Za-z0-9._@+\-]{1,100}$/;

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
      insert into users (id, company_id, username, name, password_hash)
      values (${newId()}, ${input.companyId}, ${input.username}, ${input.name ?? input.username}, ${hash})
      on conflict do nothing
      returning *`;
  });
  if (!rows.length) return { error: `username ${input.username} is taken` };
  return { user: toUser(rows[0]), password };
}

/** Replaces the password of `username` with a generated one, returned once; null when there is no such user. */
export async function resetPassword(sql: Sql, username: string): Promise<{ user: User; password: string } | null> {
  const password = generatePassword();
  const hash = await hashPassword(password);
  const [row] = await sql<UserRow[]>`
    update users set password_hash = ${hash}, updated_at = now()
    where lower(username) = lower(${username})
    returning *`;
  return row ? { user: toUser(row), password } : null;
}

/**
 * The user whose username and password these are, or null. An unknown username still costs one hash, against a
 * hash nobody knows the password of, so the time taken does not tell which usernames exist.
 */
export async function authenticate(sql: Sql, username: string, password: string): Promise<User | null> {
  const [row] = await sql<UserRow[]>`select * from users where lower(username) = lower(${username})`;
  const matches = await passwordMatches(password, row?.password_hash ?? UNKNOWN_USER_HASH);
  return row && matches ? toUser(row) : null;
}
