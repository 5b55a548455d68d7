/**
 * The drain loop of one endpoint: claim, send, record, until nothing may start or the run's budget is spent. Its steps
 * are parameters, so its ordering rules are tested with fakes and run for real with Postgres (the steps of
jobs/drain_webhooks.ts, run by the drainers of drainers.ts).
 */

import { log } from "../../basics/log.ts";
import { metrics } from "../../infra/metrics.ts";
import type { Claim, ClaimedDelivery } from "./statements/claim_data.ts";
import type { Recorded } from "./recorder.ts";
import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import type { SendResult } from "./sender.ts";
import { failureReason } from "../endpoints/decisions.ts";

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

/** Why a run ended. */
export type DrainEnd =
  | "gone" // the endpoint does not exist
  | "idle" // nothing may start now: nothing due, or every slot taken by other runs
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
  opts: { budget: DrainBudget; now: () => number; signal?: AbortSignal; othersWaiting?: () => boolean },
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
    if (!delivery) return "idle";
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
    claim = recorded.next?.delivery ? recorded.next : await steps.claim();
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
