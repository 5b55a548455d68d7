/**
 * Request rates per key (a company id), counted where every instance sees them: a token bucket per key in Postgres
 * (`take_rate_tokens`, sql/0021), so N instances hold one company to one rate and a restart resets nothing
 * (docs/limits.md). An instance takes a few tokens at a time and spends them from memory, so most requests cost no
 * round trip. Local state is bounded: past `maxKeys` the idle keys are dropped, then the least recently used.
 */

import type { Sql } from "../infra/db.ts";
import { secondsToWait } from "../basics/time.ts";

/** Milliseconds, injectable so tests can move time by hand. */
export type Clock = () => number;

const DEFAULT_MAX_KEYS = 100_000;

/** A Map that keeps its most recently used keys last and drops from the front past `max`. */
class RecentMap<V> {
  readonly #map = new Map<string, V>();
  constructor(readonly max: number, readonly idle: (v: V) => boolean) {}
  get(key: string): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }
  set(key: string, v: V) {
    this.#map.delete(key);
    if (this.#map.size >= this.max) this.#evict();
    this.#map.set(key, v);
  }
  delete(key: string) {
    this.#map.delete(key);
  }
  get size() {
    return this.#map.size;
  }
  /** Idle entries first (they hold nothing a later call needs); if none, the least recently used tenth. */
  #evict() {
    for (const [k, v] of this.#map) if (this.idle(v)) this.#map.delete(k);
    if (this.#map.size < this.max) return;
    let drop = Math.max(1, Math.floor(this.max / 10));
    for (const k of this.#map.keys()) {
      if (drop-- <= 0) break;
      this.#map.delete(k);
    }
  }
}

/** Takes up to `want` tokens of `key` from the shared bucket: how many it got, and if none, the ms until one is there. */
export type TakeTokens = (key: string, want: number) => Promise<{ granted: number; waitMs: number }>;

/** The shared buckets of `scope` in Postgres, refilled at `perSecond` up to `burst`. */
export function bucketsIn(sql: Sql, scope: string, opts: { perSecond: number; burst: number }): TakeTokens {
  return async (key, want) => {
    const [row] = await sql<{ granted: number; wait_ms: string }[]>`
      select granted, wait_ms from take_rate_tokens(${scope}, ${key}, ${opts.perSecond}, ${opts.burst}, ${want})`;
    return { granted: row.granted, waitMs: Number(row.wait_ms) };
  };
}

/** A limiter over the shared buckets of `scope`: what the API's middleware uses. */
export function sharedRateLimiter(sql: Sql, scope: string, opts: { perSecond: number; burst: number }): RateLimiter {
  return new RateLimiter({ ...opts, take: bucketsIn(sql, scope, opts) });
}

/**
 * Deletes buckets untouched for a day (full again at any rate worth setting: a missing bucket starts full), in one
 * bounded batch; returns how many.
 */
export async function pruneRateBuckets(sql: Sql, batchSize = 1000): Promise<number> {
  const { count } = await sql`
    delete from rate_limit_buckets where (scope, key) in (
      select scope, key from rate_limit_buckets where at < now() - interval '1 day' limit ${batchSize}
      for update skip locked
    )`;
  return count;
}

type Local = {
  /** Tokens taken from the shared bucket and not spent yet, usable until `expiresAt`. */
  tokens: number;
  expiresAt: number;
  /** The shared bucket was empty: answer 429 without asking until then. */
  deniedUntil: number;
  /** The one trip to the shared bucket under way for this key, which every waiting request shares. */
  pending?: Promise<void>;
  /** Requests waiting for that trip: it asks for at least as many tokens. */
  waiting: number;
};

/** Trips to the shared bucket a request may wait through before it is told to come back (its tokens went to others). */
const MAX_TRIPS = 4;
/** The most tokens one trip asks for, however many requests wait. */
const MAX_WANT = 1000;

/**
 * A token bucket per key: `burst` requests at once, refilled at `perSecond`, the bucket itself shared (`take`).
 * A rate of 0 means no limit. Each trip to the shared bucket takes a batch of tokens (a fiftieth of the burst, 1 to
 * 100), spent from memory within `leaseMs`: the shared bucket never lets more through than its rate, and an
 * instance holds at most one batch unspent, so N instances admit at least the burst less N batches.
 *
 * ```ts
 * const limiter = sharedRateLimiter(sql, "api", { perSecond: 100, burst: 200 }); // or new RateLimiter({..., take})
 * const wait = await limiter.take(companyId); // 0: go ahead; otherwise seconds until a token is there
 * ```
 */
export class RateLimiter {
  readonly #perSecond: number;
  readonly #batch: number;
  readonly #leaseMs: number;
  readonly #take: TakeTokens;
  readonly #now: Clock;
  readonly #local: RecentMap<Local>;

  constructor(
    opts: { perSecond: number; burst: number; take: TakeTokens; leaseMs?: number; maxKeys?: number; now?: Clock },
  ) {
    this.#perSecond = opts.perSecond;
    this.#batch = Math.min(100, Math.max(1, Math.floor(opts.burst / 50)));
    this.#leaseMs = opts.leaseMs ?? 1000;
    this.#take = opts.take;
    this.#now = opts.now ?? Date.now;
    this.#local = new RecentMap(
      opts.maxKeys ?? DEFAULT_MAX_KEYS,
      (l) => !l.pending && (l.tokens === 0 || l.expiresAt <= this.#now()) && l.deniedUntil <= this.#now(),
    );
  }

  get enabled(): boolean {
    return this.#perSecond > 0;
  }

  /** Tokens taken from the shared bucket per trip. */
  get batch(): number {
    return this.#batch;
  }

  /** Keys remembered now (bounded by `maxKeys`). */
  get size(): number {
    return this.#local.size;
  }

  /** Takes one token for `key`: 0 when there was one, else the seconds to wait until there is (nothing taken). */
  async take(key: string): Promise<number> {
    if (!this.enabled) return 0;
    let local = this.#local.get(key);
    if (!local) this.#local.set(key, local = { tokens: 0, expiresAt: 0, deniedUntil: 0, waiting: 0 });
    for (let trip = 0;; trip++) {
      const now = this.#now();
      if (local.tokens > 0 && now < local.expiresAt) {
        local.tokens--;
        return 0;
      }
      if (now < local.deniedUntil) return secondsToWait(local.deniedUntil - now);
      if (trip === MAX_TRIPS) return secondsToWait(1000 / this.#perSecond);
      local.waiting++;
      try {
        local.pending ??= this.#refill(key, local).finally(() => local.pending = undefined);
        await local.pending;
      } finally {
        local.waiting--;
      }
    }
  }

  /** One trip for every request waiting: a batch, or as many tokens as there are requests waiting for one. */
  async #refill(key: string, local: Local) {
    const want = Math.min(MAX_WANT, Math.max(this.#batch, local.waiting));
    const { granted, waitMs } = await this.#take(key, want);
    const now = this.#now();
    if (granted > 0) Object.assign(local, { tokens: granted, expiresAt: now + this.#leaseMs, deniedUntil: 0 });
    else Object.assign(local, { tokens: 0, deniedUntil: now + waitMs });
  }
}
