/**
 * The endpoints a process was woken for and has not yet taken up, each once however often it was woken, and the runs
 * it has going for each. `take` hands out the endpoint with the fewest runs going in this process, the longest waiting
 * first among equals: every endpoint with something due gets a first drainer before any gets a second, so one
 * endpoint's backlog never keeps another's first delivery waiting behind it (docs/webhooks.md, Fair delivery under
 * backlog). A run whose budget is spent asks `yieldTurn` whether to give its drainer back: only when an endpoint with
 * fewer runs waits for one, so a lone endpoint's run (a sequential endpoint beside a backlog) goes on instead of paying
 * a hand-over and a wait for a drainer every two seconds. Pure: no timers, no database.
 */
export class WakeQueue {
  /** Woken endpoints in the order they were woken (a Map keeps insertion order). */
  readonly #waiting = new Map<string, true>();
  readonly #running = new Map<string, number>();
  readonly #takers: ((endpointId: string | null) => void)[] = [];
  /** Runs that said they would give their drainer back (`yieldTurn`) and have not ended yet. */
  #yielding = 0;
  #closed = false;

  /** Wakes `endpointId`: a taker waiting gets it at once, otherwise it waits (once) for the next taker. */
  wake(endpointId: string): void {
    if (this.#closed) return;
    const taker = this.#takers.shift();
    if (taker) {
      this.#start(endpointId);
      taker(endpointId);
    } else this.#waiting.set(endpointId, true);
  }

  /** The next endpoint to drain, counted as running until `done`; null once closed. */
  take(): Promise<string | null> {
    if (this.#closed) return Promise.resolve(null);
    let chosen: string | null = null;
    let fewest = Infinity;
    for (const endpointId of this.#waiting.keys()) {
      const running = this.#running.get(endpointId) ?? 0;
      if (running < fewest) [chosen, fewest] = [endpointId, running];
      if (running === 0) break;
    }
    if (chosen === null) return new Promise((resolve) => this.#takers.push(resolve));
    this.#waiting.delete(chosen);
    this.#start(chosen);
    return Promise.resolve(chosen);
  }

  /**
   * Whether a run of `endpointId` should give its drainer back: an endpoint with fewer runs waits, and no other run has
   * already promised it the drainer it would free. True counts the run as yielding until its `done(…, true)`.
   */
  yieldTurn(endpointId: string): boolean {
    const running = this.#running.get(endpointId) ?? 0;
    let waitingWithFewer = 0;
    for (const other of this.#waiting.keys()) {
      if (other !== endpointId && (this.#running.get(other) ?? 0) < running) waitingWithFewer++;
    }
    if (waitingWithFewer <= this.#yielding) return false;
    this.#yielding++;
    return true;
  }

  /** A run taken for `endpointId` ended; `yielded` when its `yieldTurn` said true. */
  done(endpointId: string, yielded = false): void {
    if (yielded) this.#yielding--;
    const running = (this.#running.get(endpointId) ?? 1) - 1;
    if (running > 0) this.#running.set(endpointId, running);
    else this.#running.delete(endpointId);
  }

  /** Endpoints woken and not taken yet, and runs going. */
  get size(): { waiting: number; running: number } {
    let running = 0;
    for (const n of this.#running.values()) running += n;
    return { waiting: this.#waiting.size, running };
  }

  /** Takes nothing more: every taker waiting gets null. */
  close(): void {
    this.#closed = true;
    this.#waiting.clear();
    for (const taker of this.#takers.splice(0)) taker(null);
  }

  #start(endpointId: string) {
    this.#running.set(endpointId, (this.#running.get(endpointId) ?? 0) + 1);
  }
}
