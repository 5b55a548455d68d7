/**
 * Natural batching: items submitted while a write is in flight are written together by the next one. A quiet caller
 * waits for nothing (its item is written at once, alone); a busy one makes fewer, larger writes.
 *
 * Items wait in one line per key and a batch takes them round-robin: one item of each waiting key before a second of
 * any, so a key with one item is in the next batch rather than behind another key's backlog (docs/webhooks.md, "Fair
 * delivery under backlog", where the key is the endpoint). A key with nothing else pending (its one item neither
 * waiting nor being written) does not even wait for that: when every writer is busy, a writer of its own writes such
 * items at once. A lane that submits one item at a time and waits for its result (a sequential endpoint) would
 * otherwise wait a batch in flight and then a batch of its own for every item, while a backlog of other keys keeps the
 * writers busy.
 *
 * ```ts
 * const batcher = new Batcher((items: Attempt[]) => writeAll(items), { keyOf: (a) => a.endpointId });
 * const stored = await batcher.submit(attempt); // the write's result for this item
 * ```
 */
export class Batcher<I, R> {
  readonly #waiting = new Map<string, Waiting<I, R>[]>();
  readonly #maxBatch: number;
  readonly #maxWriters: number;
  #writers = 0;
  /** The writer of lone items is writing. */
  #writingLone = false;
  /** Items submitted and not yet answered, per key. */
  readonly #pending = new Map<string, number>();

  /**
   * `write` takes a batch and answers one result per item, in the same order; when it throws, every item of the
   * batch is rejected with that error. At most `maxWriters` writes run at once, each of at most `maxBatch` items,
   * and beside them one write of lone items.
   */
  constructor(
    private readonly write: (items: I[]) => Promise<R[]>,
    private readonly opts: { keyOf: (item: I) => string; maxBatch?: number; maxWriters?: number },
  ) {
    this.#maxBatch = Math.max(1, opts.maxBatch ?? 64);
    this.#maxWriters = Math.max(1, opts.maxWriters ?? 2);
  }

  /** The result of the write that carried `item`. */
  submit(item: I): Promise<R> {
    const { promise, resolve, reject } = Promise.withResolvers<R>();
    const key = this.opts.keyOf(item);
    const pending = (this.#pending.get(key) ?? 0) + 1;
    this.#pending.set(key, pending);
    const settle = () => {
      const left = (this.#pending.get(key) ?? 1) - 1;
      if (left > 0) this.#pending.set(key, left);
      else this.#pending.delete(key);
    };
    const waiting = { item, resolve: (r: R) => (settle(), resolve(r)), reject: (e: unknown) => (settle(), reject(e)) };
    const line = this.#waiting.get(key);
    if (line) line.push(waiting);
    else this.#waiting.set(key, [waiting]);
    if (this.#writers < this.#maxWriters) this.#drain();
    else if (pending === 1 && !this.#writingLone) this.#drainLone();
    return promise;
  }

  /** Up to maxBatch items, one per key in turn; a key served goes to the back of the line. */
  #take(): Waiting<I, R>[] {
    const batch: Waiting<I, R>[] = [];
    while (batch.length < this.#maxBatch && this.#waiting.size) {
      for (const [key, line] of this.#waiting) {
        batch.push(line.shift()!);
        this.#waiting.delete(key);
        if (line.length) this.#waiting.set(key, line);
        if (batch.length === this.#maxBatch) break;
      }
    }
    return batch;
  }

  /** Up to maxBatch waiting items whose key has nothing else pending. */
  #takeLone(): Waiting<I, R>[] {
    const batch: Waiting<I, R>[] = [];
    for (const [key, line] of this.#waiting) {
      if (batch.length === this.#maxBatch) break;
      if (this.#pending.get(key) !== 1) continue;
      batch.push(line[0]);
      this.#waiting.delete(key);
    }
    return batch;
  }

  async #drain() {
    this.#writers++;
    try {
      await this.#writeAll(() => this.#take());
    } finally {
      this.#writers--;
    }
  }

  async #drainLone() {
    this.#writingLone = true;
    try {
      await this.#writeAll(() => this.#takeLone());
    } finally {
      this.#writingLone = false;
    }
  }

  async #writeAll(take: () => Waiting<I, R>[]) {
    for (let batch = take(); batch.length; batch = take()) {
      try {
        const results = await this.write(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }
}

type Waiting<I, R> = { item: I; resolve: (r: R) => void; reject: (e: unknown) => void };
