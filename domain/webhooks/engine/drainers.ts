/**
 * A process's webhook drainers: the drain loops, the LISTEN for wake-ups that feeds them, and the retry timer
 * (docs/architecture.md, "The webhook engine"). The long-lived part of delivery; drain.ts is one run of one endpoint.
 */

import { log } from "../../basics/log.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { dueEndpoints, wakeDueSince } from "./statements/due.ts";
import { WAKE_CHANNEL } from "../outbox/wake.ts";
import type { Claim, ClaimedDelivery } from "./statements/claim_data.ts";
import { type DrainBudget, drainEndpoint, type DrainSteps } from "./drain.ts";
import { WakeQueue } from "./wake_queue.ts";

/** The retry timer's longest sleep: a retry another process scheduled and could not wake (it died) waits this long. */
const TIMER_MAX_SLEEP_MS = 5_000;
/** The shortest: a turn that finds the next record due at once (clocks apart) does not spin. */
const TIMER_MIN_SLEEP_MS = 20;
/** Every timer turn sends an empty wake-up to this process's own LISTEN; none heard for this long: listen again. */
const DEAF_AFTER_MS = 3 * TIMER_MAX_SLEEP_MS;

export type DrainersOptions = {
  /** Drain runs at once in this process, over all endpoints (WORKER_CONCURRENCY). */
  concurrency: number;
  budget: DrainBudget;
  /**
   * The steps of one run for `endpointId`. `abort` fires when the process must stop at once: attempts in flight end
   * then (after the grace of a stop); until then a stopping run ends after its attempt in flight.
   */
  steps: (endpointId: string, abort: AbortSignal) => DrainSteps;
  /** How long a stop lets attempts in flight finish before aborting them. */
  graceMs?: number;
  /**
   * Gives back what this process leased before its worker liveness session opened again, except the records in
   * `holding` (engine/statements/release.ts, `releaseUnheldLeases`); the endpoints freed. Absent: nothing is given back.
   */
  releaseUnheld?: (holding: string[]) => Promise<string[]>;
};

/** How long a release after the liveness session opened again waits for the lease statements sent before it. */
const SETTLE_WAIT_MS = 60_000;

/**
 * The webhook drainers of one process: `concurrency` drain loops (drain.ts) taking endpoints from a WakeQueue, which
 * is fed by the wake-ups of every process (LISTEN on WAKE_CHANNEL), by a look for due records whenever LISTEN starts
 * or starts again, and by the retry timer, which wakes endpoints whose records come due again at the time their
 * schedule says (docs/webhooks.md, Fair delivery under backlog). Records are claimed straight from
 * webhook_deliveries: no job queue sits between.
 */
export class Drainers {
  readonly #queue = new WakeQueue();
  readonly #stopping = new AbortController();
  readonly #abort = new AbortController();
  #runs: Promise<void>[] = [];
  #timer: ReturnType<typeof setTimeout> | null = null;
  #timerAt = Infinity;
  #since: Date | null = null;
  #turning: Promise<void> | null = null;
  #listener: Sql | null = null;
  #connectionString = "";
  #heardAt = Date.now();
  /** Records this process's runs hold (claimed, answer received, not yet recorded or released), by id: how many. */
  readonly #held = new Map<string, number>();
  /** The lease statements (claim, record, release) whose answer has not come yet. */
  readonly #unanswered = new Set<Promise<unknown>>();
  #releasing: Promise<void> = Promise.resolve();

  constructor(private readonly sql: Sql, private readonly opts: DrainersOptions) {}

  /** Starts listening on `connectionString` (a connection of the drainers' own), then the drain loops. */
  async start({ connectionString }: { connectionString: string }): Promise<void> {
    this.#connectionString = connectionString;
    await this.#listen();
    this.#runs = Array.from({ length: Math.max(1, this.opts.concurrency) }, () => this.#run());
    this.#arm(0);
  }

  /**
   * Ends every run: each gives back what it holds and wakes its endpoint for another process (drain.ts); an attempt
   * in flight finishes first, or is aborted after the grace (then recorded as failed, and made again).
   */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#queue.close();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = -Infinity; // arms nothing more
    const grace = setTimeout(() => this.#abort.abort(), this.opts.graceMs ?? 5_000);
    await Promise.all(this.#runs);
    clearTimeout(grace);
    await this.#turning;
    // the runs are over, so whatever lease statements it waits for have been answered
    await this.#releasing;
    await this.#listener?.end({ timeout: 0 }).catch(() => {});
  }

  /**
   * The worker's liveness session opened again (a failover, a restart of the database): gives back the leases this
   * process took before and does not know it holds (a claim whose answer was lost with its connection), so its
   * endpoints go on now rather than when those leases run out (docs/production.md, "Leases whose claim went
   * unanswered"). It waits for the lease statements sent before, whose answers make `#held` complete for the leases
   * taken before; what a run holds, an attempt in flight, is left alone.
   */
  sessionReopened(): Promise<void> {
    const release = this.opts.releaseUnheld;
    if (!release) return Promise.resolve();
    const sentBefore = [...this.#unanswered];
    this.#releasing = this.#releasing.then(async () => {
      if (this.#stopping.signal.aborted) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settled = await Promise.race([
        Promise.allSettled(sentBefore).then(() => true),
        new Promise<boolean>((r) => timer = setTimeout(() => r(false), SETTLE_WAIT_MS)),
      ]);
      clearTimeout(timer);
      if (!settled) {
        // without their answers this process cannot tell what it holds: the leases run out by themselves
        log.warn("webhook leases not given back: lease statements still unanswered", { waited_ms: SETTLE_WAIT_MS });
        return;
      }
      const freed = await release([...this.#held.keys()]);
      if (freed.length) {
        log.info("webhook leases given back after the liveness session opened again", { endpoints: freed.length });
      }
      for (const id of freed) this.#queue.wake(id);
    }).catch((err) => {
      log.warn("could not give back webhook leases", { error: err instanceof Error ? err.message : String(err) });
    });
    return this.#releasing;
  }

  /** A record recorded by this process comes due again at `at`: the timer wakes its endpoint then (or sooner). */
  dueAt(at: Date | null): void {
    if (at) this.#arm(at.getTime() - Date.now());
  }

  async #run(): Promise<void> {
    for (let endpointId = await this.#queue.take(); endpointId; endpointId = await this.#queue.take()) {
      const id = endpointId;
      let yielded = false;
      try {
        await drainEndpoint(this.#tracked(this.opts.steps(endpointId, this.#abort.signal)), {
          budget: this.opts.budget,
          now: () => performance.now(),
          signal: this.#stopping.signal,
          // past its budget a run goes on until an endpoint with fewer runs waits (wake_queue.ts)
          othersWaiting: () => yielded ||= this.#queue.yieldTurn(id),
        });
      } catch (err) {
        // What it held went back (drain.ts); the recovery sweep wakes the endpoint again.
        log.error("webhook drain failed", {
          endpoint_id: endpointId,
          error: err instanceof Error ? err.message : String(err),
        });
      } finally {
        this.#queue.done(endpointId, yielded);
      }
    }
  }

  /**
   * `steps` with their lease statements tracked: each one unanswered is in `#unanswered` until its answer (or error)
   * came, and each record it hands a run is in `#held` until the run recorded or released it.
   */
  #tracked(steps: DrainSteps): DrainSteps {
    const hold = (claim: Claim | null) => {
      if (claim?.delivery) this.#held.set(claim.delivery.id, (this.#held.get(claim.delivery.id) ?? 0) + 1);
      return claim;
    };
    const drop = (delivery: ClaimedDelivery) => {
      const n = (this.#held.get(delivery.id) ?? 0) - 1;
      if (n > 0) this.#held.set(delivery.id, n);
      else this.#held.delete(delivery.id);
    };
    const unanswered = <T>(statement: Promise<T>): Promise<T> => {
      this.#unanswered.add(statement);
      const answered = () => void this.#unanswered.delete(statement);
      statement.then(answered, answered);
      return statement;
    };
    return {
      ...steps,
      claim: async () => hold(await unanswered(steps.claim())),
      recordAndClaimNext: async (delivery, result, endpoint) => {
        const recorded = await unanswered(steps.recordAndClaimNext(delivery, result, endpoint));
        // drain.ts releases the record when this throws
        drop(delivery);
        hold(recorded.next);
        return recorded;
      },
      release: async (delivery) => {
        try {
          await unanswered(steps.release(delivery));
        } finally {
          drop(delivery);
        }
      },
    };
  }

  /**
   * LISTEN, and on every (re)start of it, wake what is due: wake-ups sent meanwhile were not heard. On a connection
   * pool of its own, made anew when listening again, so nothing of a LISTEN that was lost carries over.
   */
  async #listen(): Promise<void> {
    const listener = connect(this.#connectionString, { max: 1 });
    await listener.listen(WAKE_CHANNEL, (endpointId) => {
      this.#heardAt = Date.now();
      if (endpointId) this.#queue.wake(endpointId);
    }, () => {
      this.#heardAt = Date.now();
      dueEndpoints(this.sql).then(({ endpointIds, now }) => {
        this.#since ??= now;
        for (const id of endpointIds) this.#queue.wake(id);
      }).catch((err) => log.warn("could not read due webhooks", { error: err.message }));
    }).catch(async (err) => {
      await listener.end({ timeout: 0 }).catch(() => {});
      throw err;
    });
    this.#listener = listener;
  }

  #arm(inMs: number) {
    const at = Date.now() + Math.max(TIMER_MIN_SLEEP_MS, Math.min(inMs, TIMER_MAX_SLEEP_MS));
    if (at >= this.#timerAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.#turning = this.#turn().finally(() => this.#turning = null);
    }, at - Date.now());
  }

  /**
   * One turn of the retry timer: wake the endpoints whose records came due since the last turn (every process hears
   * it), then sleep until the next record comes due. A LISTEN that heard nothing, not even the turns' own empty
   * wake-ups, is started again.
   */
  async #turn(): Promise<void> {
    let nextInMs: number | null = TIMER_MAX_SLEEP_MS;
    try {
      if (Date.now() - this.#heardAt > DEAF_AFTER_MS) await this.#listenAgain();
      const turn = await wakeDueSince(this.sql, this.#since ?? new Date(0));
      this.#since = turn.now;
      // heard by every process but also taken up here, should this process's LISTEN be deaf
      for (const id of turn.endpointIds) this.#queue.wake(id);
      nextInMs = turn.nextInMs;
    } catch (err) {
      // the database is away: try again shortly
      log.warn("webhook retry timer failed", { error: err instanceof Error ? err.message : String(err) });
      nextInMs = 1_000;
    }
    if (!this.#stopping.signal.aborted) this.#arm(nextInMs ?? TIMER_MAX_SLEEP_MS);
  }

  async #listenAgain() {
    log.warn("webhook wake-ups not heard: listening again", { since_ms: Date.now() - this.#heardAt });
    const deaf = this.#listener;
    this.#listener = null;
    await deaf?.end({ timeout: 0 }).catch(() => {});
    this.#heardAt = Date.now();
    await this.#listen();
  }
}
