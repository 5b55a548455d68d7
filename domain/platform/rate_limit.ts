/**
 * Rate limits and failure throttles kept in this process's memory, keyed by a string (a company id, a username, a
 * client address). Each process counts on its own: N instances behind a load balancer let N times the rate through,
 * which docs/limits.md states. Keys are bounded: past `maxKeys` the idle ones are dropped, then the least recently
 * used, so a flood of new keys costs memory up to that bound and no more.
 */

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

/** Seconds for a Retry-After header: whole seconds, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * A token bucket per key: `burst` requests at once, refilled at `perSecond`. A rate of 0 means no limit.
 *
 * ```ts
 * const limiter = new RateLimiter({ perSecond: 100, burst: 200 });
 * const wait = limiter.take(companyId); // 0: go ahead; otherwise seconds until a token is there
 * ```
 */
export class RateLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #now: Clock;
  readonly #buckets: RecentMap<{ tokens: number; at: number }>;

  constructor(opts: { perSecond: number; burst: number; maxKeys?: number; now?: Clock }) {
    this.#perMs = opts.perSecond / 1000;
    this.#burst = Math.max(1, opts.burst);
    this.#now = opts.now ?? Date.now;
    // a bucket that has had time to refill completely is the same as no bucket
    this.#buckets = new RecentMap(
      opts.maxKeys ?? DEFAULT_MAX_KEYS,
      (b) => b.tokens + (this.#now() - b.at) * this.#perMs >= this.#burst,
    );
  }

  get enabled(): boolean {
    return this.#perMs > 0;
  }

  /** Keys remembered now (bounded by `maxKeys`). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one token for `key`: 0 when there was one, else the seconds to wait until there is (nothing taken). */
  take(key: string): number {
    if (!this.enabled) return 0;
    const now = this.#now();
    const bucket = this.#buckets.get(key) ?? { tokens: this.#burst, at: now };
    const tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.at) * this.#perMs);
    if (tokens >= 1) {
      this.#buckets.set(key, { tokens: tokens - 1, at: now });
      return 0;
    }
    this.#buckets.set(key, { tokens, at: now });
    return retryAfterSeconds((1 - tokens) / this.#perMs);
  }
}

/**
 * Failures per key within a sliding window: once `maxFailures` happened in the last `windowSeconds`, the key waits
 * until the oldest of them leaves the window. Only failures count, so a user who signs in correctly is never slowed.
 */
export class FailureCounter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: Clock;
  readonly #failures: RecentMap<number[]>;

  constructor(opts: { maxFailures: number; windowSeconds: number; maxKeys?: number; now?: Clock }) {
    this.#max = Math.max(1, opts.maxFailures);
    this.#windowMs = opts.windowSeconds * 1000;
    this.#now = opts.now ?? Date.now;
    this.#failures = new RecentMap(
      opts.maxKeys ?? DEFAULT_MAX_KEYS,
      (times) => times.length === 0 || times[times.length - 1] <= this.#now() - this.#windowMs,
    );
  }

  /** The failures of `key` still inside the window, oldest first. */
  #recent(key: string): number[] {
    const since = this.#now() - this.#windowMs;
    return (this.#failures.get(key) ?? []).filter((t) => t > since);
  }

  /** 0 when `key` may try now, else the seconds until it may. */
  retryAfter(key: string): number {
    const recent = this.#recent(key);
    if (recent.length < this.#max) return 0;
    return retryAfterSeconds(recent[recent.length - this.#max] + this.#windowMs - this.#now());
  }

  fail(key: string) {
    // the newest `max` failures decide when the key is free again; older ones need not be kept
    this.#failures.set(key, [...this.#recent(key), this.#now()].slice(-this.#max));
  }

  clear(key: string) {
    this.#failures.delete(key);
  }
}

export type SignInAttempt = { username: string; address: string };

/**
 * Failed sign-ins, throttled per username (guessing one account's password) and per client address (trying many
 * accounts from one place). Check before verifying the password, so a throttled attempt costs no password hash:
 *
 * ```ts
 * const wait = throttle.retryAfter({ username, address });
 * if (wait) throw tooManyRequests(wait);
 * if (!(await passwordMatches(...))) { throttle.recordFailure({ username, address }); throw unauthorized(); }
 * throttle.recordSuccess({ username, address });
 * ```
 */
export class SignInThrottle {
  readonly #byUsername: FailureCounter;
  readonly #byAddress: FailureCounter;

  constructor(
    opts: { perUsername: number; perAddress: number; windowSeconds: number; maxKeys?: number; now?: Clock },
  ) {
    const common = { windowSeconds: opts.windowSeconds, maxKeys: opts.maxKeys, now: opts.now };
    this.#byUsername = new FailureCounter({ ...common, maxFailures: opts.perUsername });
    this.#byAddress = new FailureCounter({ ...common, maxFailures: opts.perAddress });
  }

  /** Usernames differ only by case and surrounding spaces count as one, so "Ana" and "ana " share a counter. */
  static #user(username: string) {
    return username.trim().toLowerCase();
  }

  /** 0 when the attempt may go ahead, else the seconds to wait (the longer of the two throttles). */
  retryAfter({ username, address }: SignInAttempt): number {
    return Math.max(this.#byUsername.retryAfter(SignInThrottle.#user(username)), this.#byAddress.retryAfter(address));
  }

  recordFailure({ username, address }: SignInAttempt) {
    this.#byUsername.fail(SignInThrottle.#user(username));
    this.#byAddress.fail(address);
  }

  /**
   * A correct password clears that username's failures. Not the address's: one account an attacker owns must not
   * reset the count of the guesses made from the same place against others.
   */
  recordSuccess({ username }: SignInAttempt) {
    this.#byUsername.clear(SignInThrottle.#user(username));
  }
}
