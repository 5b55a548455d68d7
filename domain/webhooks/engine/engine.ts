/**
 * The webhook engine of one process, in the order a record travels (docs/architecture.md, "The webhook engine"): the
 * drainers hear an endpoint woken (a NOTIFY, the retry timer, or a look for what is due when they start listening)
 * and keep it in a WakeQueue; a drain loop takes it and claims, sends and records, record after record, until nothing
 * may start or its budget is spent; a failed attempt comes due again by its schedule and the timer wakes it, or the
 * record gives up after MAX_ATTEMPTS. The statements are in statements/, the sending in sender.ts; the loop's steps
 * are parameters, so its ordering rules are tested with fakes and run for real with Postgres (jobs/drain_webhooks.ts).
 */

import { pause } from "../../basics/abort.ts";
import { log } from "../../basics/log.ts";
import { connect, type Sql } from "../../infra/db.ts";
import { dueEndpoints, wakeDueSince } from "./statements/due.ts";
import { WAKE_CHANNEL } from "../outbox/wake.ts";
import type { Claim, ClaimedDelivery } from "./statements/claim_data.ts";
import { WakeQueue } from "./wake_queue.ts";
import { metrics } from "../../infra/metrics.ts";
import type { Recorded } from "./recorder.ts";
import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import type { SendResult } from "./sender.ts";
import { failureReason } from "../endpoints/decisions.ts";

// ---- Wake: the drainers of a process --------------------------------------------------------------------------

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
 * The webhook drainers of one process: `concurrency` drain loops (`drainEndpoint`) taking endpoints from a WakeQueue, which
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
  /** Batched endpoints to wake when their partial batch has waited long enough (`#wakeIn`), by id. */
  readonly #batchWakes = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();

  constructor(private readonly sql: Sql, private readonly opts: DrainersOptions) {}

  /** Starts listening on `connectionString` (a connection of the drainers' own), then the drain loops. */
  async start({ connectionString }: { connectionString: string }): Promise<void> {
    this.#connectionString = connectionString;
    await this.#listen();
    this.#runs = Array.from({ length: Math.max(1, this.opts.concurrency) }, () => this.#run());
    this.#arm(0);
  }

  /**
   * Ends every run: each gives back what it holds and wakes its endpoint for another process (`drainEndpoint`); an attempt
   * in flight finishes first, or is aborted after the grace (then recorded as failed, and made again).
   */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#queue.close();
    if (this.#timer) clearTimeout(this.#timer);
    for (const { timer } of this.#batchWakes.values()) clearTimeout(timer);
    this.#batchWakes.clear();
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

  /**
   * Wakes `endpointId` in `ms` (a partial batch's oldest record will have waited its `max_wait_ms` then:
   * claim_batch.ts), once: an earlier wake-up already set for it stands. Should this process stop or die first, the
   * records are due, and the look for due records of another process's start or sweep wakes the endpoint.
   */
  #wakeIn(endpointId: string, ms: number): void {
    const at = Date.now() + ms;
    const set = this.#batchWakes.get(endpointId);
    if (set && set.at <= at) return;
    if (set) clearTimeout(set.timer);
    const timer = setTimeout(() => {
      this.#batchWakes.delete(endpointId);
      if (!this.#stopping.signal.aborted) this.#queue.wake(endpointId);
    }, Math.max(1, ms));
    this.#batchWakes.set(endpointId, { at, timer });
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
          throttledFor: (ms) => this.dueAt(new Date(Date.now() + ms)),
          batchDueIn: (ms) => this.#wakeIn(id, ms),
        });
      } catch (err) {
        // What it held went back (`drainEndpoint`); the recovery sweep wakes the endpoint again.
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
    // a batch holds every record it carries (docs/webhooks.md, "Batches")
    const idsOf = (delivery: ClaimedDelivery) => delivery.batch?.records.map((r) => r.id) ?? [delivery.id];
    const hold = (claim: Claim | null) => {
      for (const id of claim?.delivery ? idsOf(claim.delivery) : []) this.#held.set(id, (this.#held.get(id) ?? 0) + 1);
      return claim;
    };
    const drop = (delivery: ClaimedDelivery) => {
      for (const id of idsOf(delivery)) {
        const n = (this.#held.get(id) ?? 0) - 1;
        if (n > 0) this.#held.set(id, n);
        else this.#held.delete(id);
      }
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
        // drainEndpoint releases the record when this throws
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

// ---- Claim, send, record: the drain loop of one endpoint ---------------------------------------------------------

/**
 * What the drain loop does to the world, one endpoint at a time. The real steps are Postgres statements
 * (engine/statements/) and the HTTP sender, wired up in jobs/drain_webhooks.ts; tests pass fakes.
 */
export type DrainSteps = {
  /** Leases a free slot with the next record that may start now; null when the endpoint does not exist. */
  claim(): Promise<Claim | null>;
  /** One attempt; never throws (a failure is a result). */
  send(endpoint: EndpointRow, delivery: ClaimedDelivery, signal?: AbortSignal): Promise<SendResult>;
  /**
   * Stores the attempt and hands its slot to the next record that may start, or frees the slot. `endpoint` is the
   * endpoint as the claim saw it, whose health the answer may change.
   */
  recordAndClaimNext(delivery: ClaimedDelivery, result: SendResult, endpoint: EndpointRow): Promise<Recorded>;
  /** Gives back a slot and its record without an attempt. */
  release(delivery: ClaimedDelivery): Promise<void>;
  /** Wakes this endpoint again (a NOTIFY every drainer hears), so another run carries on where this one handed over. */
  wake(slot: number): Promise<void>;
  /** Marks what is still pending for a disabled endpoint as failed. */
  failPending(endpoint: EndpointRow): Promise<void>;
};

/**
 * How long one run may go on while other endpoints wait for a drainer. A run hands its drainer back after this long or
 * this many attempts, waking its endpoint to carry on, once `othersWaiting` says another endpoint waits for it: one
 * busy endpoint does not hold a drainer for ever while others wait, and one that nobody waits behind (a sequential
 * endpoint beside another's backlog) does not pay a hand-over and a new claim every two seconds. A shutdown ends a run
 * after its attempt in flight, whatever the budget.
 */
export type DrainBudget = { ms: number; deliveries: number };
export const RUN_BUDGET: DrainBudget = { ms: 2_000, deliveries: 200 };

/**
 * A throttled endpoint's next turn this close (docs/webhooks.md, "Throttle"): its run waits for it and claims again,
 * as it would wait for a slow receiver's answer; further off, the run ends and the retry timer wakes the endpoint
 * when the turn comes, so a slow rate never holds a drainer.
 */
export const THROTTLE_NAP_MS = 250;

/** Why a run ended. */
export type DrainEnd =
  | "gone" // the endpoint does not exist
  | "idle" // nothing may start now: nothing due, every slot taken by other runs, or its throttle's turn to come
  | "inactive" // the endpoint is disabled: what was pending is failed
  | "handed_over"; // budget spent with others waiting, or shutting down: the slot was released and the endpoint woken

/**
 * Delivers what is due for one endpoint until nothing is, every slot is busy, or the run is over, holding at most
 * one slot and one attempt in flight. The slot goes from record to record in the step that records an attempt;
 * when that step frees it, the loop claims once more, so a record that arrived meanwhile (whose wake-up found the
 * slot taken and was dropped) is not stranded. Every record claimed is either recorded or released.
 */
export async function drainEndpoint(
  steps: DrainSteps,
  opts: {
    budget: DrainBudget;
    now: () => number;
    signal?: AbortSignal;
    othersWaiting?: () => boolean;
    /** The endpoint's throttle holds its next record this many ms: wake it then (the retry timer). */
    throttledFor?: (ms: number) => void;
    /** A batched endpoint's partial batch goes in this many ms (claim_batch.ts): wake it then. */
    batchDueIn?: (ms: number) => void;
  },
): Promise<DrainEnd> {
  const { budget, now, signal, othersWaiting = () => true } = opts;
  const started = now();
  let claim = await steps.claim();
  for (let attempts = 0; claim; attempts++) {
    const { endpoint, delivery } = claim;
    if (endpoint.status !== "active") {
      if (delivery) await steps.release(delivery);
      await steps.failPending(endpoint);
      return "inactive";
    }
    if (!delivery) {
      if (claim.batchWaitMs != null) {
        // the run ends rather than wait: the batch may fill meanwhile, and its wake-up claims it then
        opts.batchDueIn?.(claim.batchWaitMs);
        return "idle";
      }
      const waitMs = claim.throttleWaitMs;
      if (waitMs == null) return "idle";
      // past its budget a throttled run gives its drainer back rather than wait, as any run does
      if (waitMs > THROTTLE_NAP_MS || signal?.aborted || (now() - started > budget.ms && othersWaiting())) {
        opts.throttledFor?.(waitMs);
        return "idle";
      }
      await pause(waitMs, signal);
      claim = await steps.claim();
      continue;
    }
    const spent = attempts >= budget.deliveries || now() - started > budget.ms;
    if (signal?.aborted || (spent && othersWaiting())) {
      await steps.release(delivery);
      // After the release, so that the run the wake-up starts finds the slot free.
      await steps.wake(delivery.slot);
      return "handed_over";
    }
    let result: SendResult;
    let recorded: Recorded;
    try {
      result = await steps.send(endpoint, delivery, signal);
      recorded = await steps.recordAndClaimNext(delivery, result, endpoint);
    } catch (err) {
      // The record goes back at once rather than when its lease runs out: at least once, a little sooner.
      await steps.release(delivery).catch(() => {});
      throw err;
    }
    observeAttempt(endpoint.id, delivery, result, recorded);
    // a hand-over its throttle held back says when the turn comes: the loop waits for it, then claims
    claim = recorded.next?.delivery || recorded.next?.throttleWaitMs != null ? recorded.next : await steps.claim();
  }
  return "gone";
}

/** Delivery record ids are UUIDv7, made when the event was emitted: their first 48 bits are that instant in ms. */
const emittedAt = (uuidV7: string) => parseInt(uuidV7.slice(0, 8) + uuidV7.slice(9, 13), 16);

/**
 * Metrics for every attempt; at the default log level one line per failed attempt, so that an operator finds a
 * failing delivery and why (the same reason as the attempt's `response_body` when no answer came).
 */
function observeAttempt(endpointId: string, delivery: ClaimedDelivery, result: SendResult, recorded: Recorded) {
  const deliveryId = delivery.id;
  const status = recorded.status;
  const outcome = status === "succeeded" ? "succeeded" : status === "failed" ? "failed" : "failed_attempt";
  metrics.deliveries.inc({ outcome });
  metrics.deliveryDuration.observe({}, result.durationMs / 1000);
  if (outcome === "succeeded") metrics.deliveryLatency.observe({}, (Date.now() - emittedAt(deliveryId)) / 1000);
  if (!result.ok) {
    log.warn("webhook attempt failed", {
      delivery_id: deliveryId,
      endpoint_id: endpointId,
      event_type: delivery.type,
      http_status: result.httpStatus,
      reason: failureReason(result),
      attempt: recorded.attempt,
      next_attempt_at: recorded.nextAttemptAt?.toISOString() ?? (status === null ? null : "failed for good"),
      ...(recorded.disabled ? { endpoint_disabled: recorded.disabled } : {}),
    });
    return;
  }
  log.debug("webhook attempt", {
    endpoint_id: endpointId,
    delivery_id: deliveryId,
    http_status: result.httpStatus,
    duration_ms: Math.round(result.durationMs),
    status,
  });
}
