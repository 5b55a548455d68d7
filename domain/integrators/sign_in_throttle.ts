/**
 * Failed sign-ins within a sliding window, counted in Postgres (sql/0034) so every instance sees the same counts and a
 * restart forgets none (docs/limits.md, "Failed sign-ins"): per username at one client address, per address, and of
 * all addresses together. Throttling slows an address down; it never refuses a correct password from an address that
 * has not failed, so nobody at one address can lock a user out at another. A failure is reserved before the password
 * is hashed: of 60 guesses arriving together, the first ones take the places and the rest answer 429 without a hash.
 * The attempt then settles its reservation:
 *
 * ```ts
 * const held = await reserveSignIn(sql, limits, attempt);
 * if ("waitSeconds" in held) throw tooManyRequests(held.waitSeconds);
 * if (!user) return await countSignInFailure(sql, limits); // wrong password: the reservation stays, a failure
 * await settleSignIn(sql, attempt, held, "succeeded"); // a correct one clears the pair's failures
 * ```
 */
import type { Sql } from "../infra/db.ts";
import { secondsToWait } from "../basics/time.ts";

export type ThrottleLimits = {
  /** Failures of one username from one address. */
  perUsername: number;
  perAddress: number;
  /** Failures of all addresses together past which an address that has failed waits for the window. */
  global: number;
  windowSeconds: number;
};

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
    select wait_ms, reserved_at::text from reserve_sign_in_attempt(
      ${attempt.username}, ${attempt.address}, ${limits.perUsername}, ${limits.perAddress}, ${limits.global},
      make_interval(secs => ${limits.windowSeconds}))`;
  if (row.reserved_at === null) return { waitSeconds: secondsToWait(Number(row.wait_ms)) };
  return { reservedAt: row.reserved_at };
}

/**
 * Settles a reservation that is not a failure, locking the pair's row before the address's as the reservation does
 * (one order, so concurrent sign-ins of one user take turns and never deadlock). A success clears the pair's failures,
 * not the address's (one account an attacker owns must not reset the count of its guesses against others), and gives
 * back its place at the address; an attempt not tried at all (no room to hash it) gives back both places.
 */
export async function settleSignIn(
  sql: Sql,
  attempt: SignInAttempt,
  held: Reservation,
  outcome: "succeeded" | "not_tried",
): Promise<void> {
  await sql`select settle_sign_in_attempt(${attempt.username}, ${attempt.address},
    ${held.reservedAt}::text::timestamptz, ${outcome === "succeeded"})`;
}

/** Counts a failure of any address (a wrong password, an unknown or a disabled user) toward the global ceiling. */
export async function countSignInFailure(sql: Sql, limits: ThrottleLimits): Promise<void> {
  await sql`select count_sign_in_failure(make_interval(secs => ${limits.windowSeconds}))`;
}

/** Deletes the rows whose failures have all left the window, in bounded batches; returns how many. */
export async function pruneSignInFailures(sql: Sql, windowSeconds: number, batchSize = 1000): Promise<number> {
  const window = sql`make_interval(secs => ${windowSeconds})`;
  const stale = sql`coalesce(times[cardinality(times)], '-infinity') < now() - ${window}`;
  const [byScope, byPair, buckets] = await Promise.all([
    sql`
      delete from sign_in_failures where (scope, key) in (
        select scope, key from sign_in_failures where ${stale} limit ${batchSize} for update skip locked
      )`,
    sql`
      delete from sign_in_pair_failures where (username, address) in (
        select username, address from sign_in_pair_failures where ${stale} limit ${batchSize} for update skip locked
      )`,
    sql`
      delete from sign_in_failure_buckets
      where bucket < now() - ${window} - sign_in_bucket_width(${window})`,
  ]);
  return byScope.count + byPair.count + buckets.count;
}
