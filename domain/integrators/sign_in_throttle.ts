import type { Sql } from "../infra/db.ts";
import { secondsToWait } from "../basics/time.ts";

/**
 * Failed sign-ins per username and per client address within a sliding window, counted in Postgres
 * (`reserve_sign_in`, sql/0021) so every instance sees the same counts and a restart forgets none (docs/limits.md,
 * "Failed sign-ins"). A failure is reserved before the password is hashed: of 60 guesses arriving together, the
 * first ones take the places and the rest answer 429 without a hash. The attempt then settles its reservation:
 *
 * ```ts
 * const held = await reserveSignIn(sql, limits, attempt);
 * if ("waitSeconds" in held) throw tooManyRequests(held.waitSeconds);
 * if (!user) return; // wrong password: the reservation stays, a failure counted
 * await settleSignIn(sql, attempt, held, "succeeded"); // a correct one clears the username's failures
 * ```
 */

export type ThrottleLimits = { perUsername: number; perAddress: number; windowSeconds: number };

/** `username` is already `usernameKey(...)`: the throttle counts what the lookup compares. */
export type SignInAttempt = { username: string; address: string };

/**
 * The instant reserved, as Postgres wrote it: a JS Date would lose its microseconds and not match it again (and
 * postgres.js turns a timestamptz parameter into a Date, hence the text parameter cast where it is used).
 */
export type Reservation = { reservedAt: string };

export async function reserveSignIn(
  sql: Sql,
  limits: ThrottleLimits,
  attempt: SignInAttempt,
): Promise<Reservation | { waitSeconds: number }> {
  const [row] = await sql<{ wait_ms: string; reserved_at: string | null }[]>`
    select wait_ms, reserved_at::text from reserve_sign_in(
      ${attempt.username}, ${attempt.address}, ${limits.perUsername}, ${limits.perAddress},
      make_interval(secs => ${limits.windowSeconds}))`;
  if (row.reserved_at === null) return { waitSeconds: secondsToWait(Number(row.wait_ms)) };
  return { reservedAt: row.reserved_at };
}

/**
 * Settles a reservation that is not a failure. A success clears the username's failures, not the address's (one
 * account an attacker owns must not reset the count of its guesses against others), and gives back its place at the
 * address; an attempt not tried at all (no room to hash it) gives back both places.
 */
export async function settleSignIn(
  sql: Sql,
  attempt: SignInAttempt,
  held: Reservation,
  outcome: "succeeded" | "not_tried",
): Promise<void> {
  await sql`
    update sign_in_failures
    set times = case when scope = 'username' and ${outcome === "succeeded"} then '{}'
                     else array_remove(times, ${held.reservedAt}::text::timestamptz) end
    where (scope = 'username' and key = ${attempt.username}) or (scope = 'address' and key = ${attempt.address})`;
}

/** Deletes the rows whose failures have all left the window, in one bounded batch; returns how many. */
export async function pruneSignInFailures(sql: Sql, windowSeconds: number, batchSize = 1000): Promise<number> {
  const { count } = await sql`
    delete from sign_in_failures where (scope, key) in (
      select scope, key from sign_in_failures
      where coalesce(times[cardinality(times)], '-infinity') < now() - make_interval(secs => ${windowSeconds})
      limit ${batchSize}
      for update skip locked
    )`;
  return count;
}
