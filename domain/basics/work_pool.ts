/**
 * At most `concurrency` pieces of work at once, at most `queue` more waiting; past that `run` refuses at once with
 * `PoolFull` instead of holding the work in memory. Password hashes go through one (32 MiB each while they run), so a
 * flood of sign-ins costs a bounded amount of memory and CPU whatever its size.
 *
 * With `perKey`, work run under a key (a client address) holds at most that many places, running and waiting
 * together; one more is refused with `ShareFull`. Waiting work is started in turns, one key after the other, so one
 * key's backlog neither fills the pool nor makes another key wait behind it (docs/limits.md, "What an anonymous
 * request can grow").
 *
 * ```ts
 * const pool = new WorkPool({ concurrency: 2, queue: 16, perKey: 4 });
 * const key = await pool.for(address).run(() => derive(password, salt)); // ShareFull when address holds 4 already
 * ```
 */
export class PoolFull extends Error {
  constructor(message = "too much work waiting") {
    super(message);
  }
}

/** The key's share of the pool is taken: the pool may have room for others. */
export class ShareFull extends PoolFull {
  constructor() {
    super("this key holds its share of the pool");
  }
}

/** What runs work in a pool, a key's view of it included. */
export type WorkQueue = { run<T>(work: () => Promise<T>): Promise<T> };

export class WorkPool implements WorkQueue {
  readonly #concurrency: number;
  readonly #queue: number;
  readonly #perKey: number;
  #running = 0;
  #waitingCount = 0;
  /** Waiting work by key; the map's order is the order of turns (a key served goes to the back). */
  readonly #waiting = new Map<string | null, (() => void)[]>();
  /** Places (running and waiting) each key holds, for the keys that hold any. */
  readonly #held = new Map<string, number>();

  constructor(opts: { concurrency: number; queue: number; perKey?: number }) {
    this.#concurrency = Math.max(1, opts.concurrency);
    this.#queue = Math.max(0, opts.queue);
    this.#perKey = Math.max(0, opts.perKey ?? 0);
  }

  /** Work running now and waiting, for tests and metrics. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waitingCount };
  }

  /** Whether `key` holds its whole share now: a caller can turn it away before doing any work of its own. */
  shareTaken(key: string): boolean {
    return this.#perKey > 0 && (this.#held.get(key) ?? 0) >= this.#perKey;
  }

  /** This pool as seen by one key: its work counts against the key's share and waits for the key's turn. */
  for(key: string): WorkQueue {
    return { run: (work) => this.#run(work, key) };
  }

  /** Work of no key: bounded by the pool alone, waiting in a turn of its own. */
  run<T>(work: () => Promise<T>): Promise<T> {
    return this.#run(work, null);
  }

  async #run<T>(work: () => Promise<T>, key: string | null): Promise<T> {
    if (key !== null && this.shareTaken(key)) throw new ShareFull();
    const held = key === null ? 0 : this.#held.get(key) ?? 0;
    if (this.#running >= this.#concurrency) {
      if (this.#waitingCount >= this.#queue) throw new PoolFull();
      this.#hold(key, held + 1);
      this.#waitingCount++;
      const line = this.#waiting.get(key) ?? [];
      // the slot is handed over by the finishing work, so `running` never dips for a newcomer to jump the queue
      const started = new Promise<void>((resolve) => line.push(resolve));
      this.#waiting.set(key, line);
      await started;
    } else {
      this.#hold(key, held + 1);
      this.#running++;
    }
    try {
      return await work();
    } finally {
      if (key !== null) this.#hold(key, this.#held.get(key)! - 1);
      this.#handOver();
    }
  }

  #hold(key: string | null, places: number) {
    if (key === null) return;
    if (places > 0) this.#held.set(key, places);
    else this.#held.delete(key);
  }

  /** Gives the finished work's slot to the first waiting work of the key whose turn it is, or frees it. */
  #handOver() {
    const next = this.#waiting.entries().next();
    if (next.done) {
      this.#running--;
      return;
    }
    const [turn, line] = next.value;
    const start = line.shift()!;
    this.#waiting.delete(turn);
    if (line.length) this.#waiting.set(turn, line); // to the back of the turns
    this.#waitingCount--;
    start();
  }
}
