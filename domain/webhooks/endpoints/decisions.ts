/**
 * What an attempt's answer decides, as pure functions (docs/webhooks.md, "Retries and the schedule", "What the
 * receiver's status changes", "When an endpoint is disabled"). The record statement (record.ts) only applies them:
 * what depends on the rows as the statement finds them (a record acknowledged meanwhile, the schedule reset by a
 * manual retry, the endpoint's failing clock moved by another attempt) is resolved there, from the values decided here.
 */

import type { DisabledReason } from "./endpoint_row.ts";

/** Attempts per schedule (docs/webhooks.md, Retries and the schedule). */
export const MAX_ATTEMPTS = 10;

/** The statuses whose Retry-After postpones the next attempt; any other status is an ordinary failure. */
export function honoursRetryAfter(httpStatus: number): boolean {
  return httpStatus === 429 || httpStatus === 503;
}

/**
 * What went wrong with an attempt, as the record's `last_error` and the log line say it: the receiver's status, or
 * why no answer came (the attempt's `response_body` then); null for a success.
 */
export function failureReason(result: { ok: boolean; httpStatus: number; responseBody: string }): string | null {
  if (result.ok) return null;
  return result.httpStatus === 0 ? result.responseBody : `HTTP ${result.httpStatus}`;
}

/**
 * A 410 Gone disables the endpoint at once, whatever its history, and so does a broker's permanent refusal (no such
 * exchange or stream, access refused: docs/webhooks.md, "Destinations").
 */
export function disablesAtOnce(httpStatus: number, permanent = false): boolean {
  return httpStatus === 410 || permanent;
}

/**
 * Seconds from the end of a failed attempt to the next one, when `done` attempts of the schedule came before it:
 * the schedule's delay, or longer when the receiver asked for it (Retry-After); null once this attempt was the last
 * of the schedule (the record fails for good). A schedule shorter than the attempts repeats its last delay.
 */
export function retryDelaySeconds(schedule: number[], done: number, retryAfterSeconds?: number | null): number | null {
  if (done + 1 >= MAX_ATTEMPTS || schedule.length === 0) return null;
  return Math.max(schedule[Math.min(done, schedule.length - 1)], retryAfterSeconds ?? 0);
}

/**
 * `retryDelaySeconds` for every position of the schedule, the attempt's own Retry-After applied: the record statement
 * picks the entry of the record's `schedule_attempts` as it finds it (a manual retry may have reset it meanwhile).
 * Its length is the number of retries: past its end the record fails.
 */
export function retryPlan(schedule: number[], retryAfterSeconds?: number | null): number[] {
  const plan: number[] = [];
  for (let done = 0;; done++) {
    const delay = retryDelaySeconds(schedule, done, retryAfterSeconds);
    if (delay === null) return plan;
    plan.push(delay);
  }
}

/** The endpoint as the attempt's claim saw it: whether it was active, and since when every attempt failed. */
export type EndpointSeen = { status: "active" | "disabled"; failingSince: Date | null };

/**
 * What attempts finishing together do to their endpoint's health: disable it (`gone` on a 410; `failing` when none
 * succeeded and every attempt has failed for `disableAfterSeconds`), or move its failing clock (started by the first
 * failure after a success, stopped by a success), or nothing. `failingSince` is written only when it changes, so a
 * healthy endpoint's row is not updated per attempt.
 */
export type Health = { disable: DisabledReason | null; failing: "keep" | "start" | "clear" };

export function endpointHealth(
  seen: EndpointSeen,
  outcome: { anyOk: boolean; gone: boolean },
  opts: { nowMs: number; disableAfterSeconds: number },
): Health {
  if (seen.status !== "active") return { disable: null, failing: "keep" };
  if (outcome.gone) return { disable: "gone", failing: "keep" };
  if (outcome.anyOk) return { disable: null, failing: seen.failingSince ? "clear" : "keep" };
  if (!seen.failingSince) return { disable: null, failing: "start" };
  const failedFor = opts.nowMs - seen.failingSince.getTime();
  return failedFor >= opts.disableAfterSeconds * 1000
    ? { disable: "failing", failing: "keep" }
    : { disable: null, failing: "keep" };
}

/**
 * When an endpoint is found failing (`endpoint.failing`, docs/webhooks.md "Operational events"): once per streak,
 * by the first failed attempt that makes `failingAfterAttempts` failures in a row, or that comes
 * `failingAfterSeconds` after the streak's first failure. The record statement checks it against the endpoint's
 * counters as it leaves them (record.ts); announcing it marks the streak under the row's lock (operational.ts), so
 * concurrent batches announce it once.
 */
export type FailingAlert = { failingAfterAttempts: number; failingAfterSeconds: number };

/**
 * What attempts of one endpoint finishing together add to its failures in a row: each failure, or none when any
 * succeeded (the success ends the streak; failures beside it in the batch are not counted against it).
 */
export function failuresInARow(results: { ok: boolean }[]): number {
  return results.some((r) => r.ok) ? 0 : results.length;
}

/**
 * Seconds every record of the endpoint waits after an attempt's answer: a 429 Too Many Requests with a Retry-After
 * speaks for the whole endpoint (it is rate limited), so its other records wait too, throttled or not. Other statuses,
 * 503 included, hold only the record answered (its retry, `retryPlan`).
 */
export function endpointHoldSeconds(result: { httpStatus: number; retryAfterSeconds?: number | null }): number | null {
  if (result.httpStatus !== 429 || !result.retryAfterSeconds || result.retryAfterSeconds <= 0) return null;
  return result.retryAfterSeconds;
}
