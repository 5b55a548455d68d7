/**
 * At most `concurrency` pieces of work at once, at most `queue` more waiting; past that `run` refuses at once with
 * `PoolFull` instead of holding the work in memory. Password hashes go through one (32 MiB each while they run), so a
 * flood of sign-ins costs a bounded amount of memory and CPU whatever its size.
 *
 * ```ts
 * const pool = new WorkPool({ concurrency: 2, queue: 16 });
 * const key = await pool.run(() => derive(password, salt)); // throws PoolFull when 18 are already there
 * ```
 */
export class PoolFull extends Error {
  constructor() {
    super("too much work waiting");
  }
}

export class WorkPool {
  readonly #concurrency: number;
  readonly #queue: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(opts: { concurrency: number; queue: number }) {
    this.#concurrency = Math.max(1, opts.concurrency);
    this.#queue = Math.max(0, opts.queue);
  }

  /** Work running now and waiting, for tests and metrics. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#concurrency) {
      if (this.#waiting.length >= this.#queue) throw new PoolFull();
      // the slot is handed over by the finishing work, so `running` never dips for a newcomer to jump the queue
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
