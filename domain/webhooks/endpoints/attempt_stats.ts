/**
 * What the health aggregate of an endpoint counts (docs/webhooks.md, "Endpoint health"), as pure functions: the
 * outcome class of an attempt, the duration histogram's buckets, the tally of a batch of attempts that the record
 * statement adds to its endpoint's minute (engine/statements/record.ts), and percentiles read back from summed buckets.
 */

import { failureReason } from "./decisions.ts";

/** An attempt's outcome: a 2xx, another status by class, or why no answer came (the texts of sender.ts). */
export const OUTCOMES = ["succeeded", "http_3xx", "http_4xx", "http_5xx", "timeout", "network", "refused"] as const;
export type Outcome = typeof OUTCOMES[number];

export function outcomeOf(result: { ok: boolean; httpStatus: number; responseBody: string }): Outcome {
  if (result.ok) return "succeeded";
  if (result.httpStatus >= 500) return "http_5xx";
  if (result.httpStatus >= 400) return "http_4xx";
  if (result.httpStatus > 0) return "http_3xx"; // a redirect (never followed) or another status that is no answer
  if (result.responseBody.startsWith("timeout")) return "timeout";
  if (result.responseBody.startsWith("refused")) return "refused";
  return "network"; // refused connection, reset, TLS, DNS, or the worker stopping mid-attempt
}

/** Buckets per doubling of the duration: each bucket is 2^(1/3), about 26%, wider than the one before. */
const PER_DOUBLING = 3;
/** Bucket 0 holds attempts under 1 ms; bucket k, 2^((k-1)/3) ms up to 2^(k/3); the last, 2^16 ms (65.5 s) and more. */
export const DURATION_BUCKETS = 16 * PER_DOUBLING + 2;
/** The aggregate's column of each bucket (sql/0027). */
export const DURATION_COLUMNS: readonly string[] = Array.from({ length: DURATION_BUCKETS }, (_, k) => `d${k}`);

/** The histogram bucket of a duration in ms. */
export function durationBucket(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(DURATION_BUCKETS - 1, Math.floor(PER_DOUBLING * Math.log2(ms) + 1e-9) + 1);
}

/** The durations a bucket holds, in ms: [from, to), `to` Infinity for the last. */
export function bucketRange(k: number): { from: number; to: number } {
  if (k === 0) return { from: 0, to: 1 };
  const from = 2 ** ((k - 1) / PER_DOUBLING);
  return { from, to: k === DURATION_BUCKETS - 1 ? Infinity : 2 ** (k / PER_DOUBLING) };
}

/**
 * The `q`-quantile (0 < q <= 1) of the durations counted in `histogram`, in whole ms; null when it counts none. The
 * attempt of rank ceil(q × n) is placed within its bucket by its rank among the bucket's attempts (as if spread
 * evenly), so the answer is off by less than the bucket's width (26%); in the last bucket, its lower end.
 */
export function durationQuantile(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let below = 0;
  for (let k = 0; k < histogram.length; k++) {
    const count = histogram[k];
    if (below + count >= rank) {
      const { from, to } = bucketRange(k);
      if (to === Infinity) return Math.round(from);
      return Math.round(from + (to - from) * (rank - below - 0.5) / count);
    }
    below += count;
  }
  return null; // unreachable: the ranks end within the total
}

/** What one endpoint's attempts of a batch add to its minute and to its last success and failure. */
export type EndpointTally = {
  endpointId: string;
  counts: Record<Outcome, number>;
  durations: number[];
  anySucceeded: boolean;
  /** `failureReason` of the batch's last failed attempt; null when none failed. */
  lastFailure: string | null;
  /** Requests that carried batches (docs/webhooks.md, "Batches"), and the records they carried. */
  batchRequests: number;
  batchedEvents: number;
};

type Attempt = {
  endpointId: string;
  result: { ok: boolean; httpStatus: number; responseBody: string; durationMs: number };
  batch?: { first: boolean };
};

/**
 * One tally per endpoint of a batch, by endpoint id: every statement adds to the rows of its endpoints in the same
 * order, so two batches meeting on two endpoints wait for each other instead of deadlocking. Durations are counted as
 * the attempt log stores them (whole ms).
 */
export function tallyAttempts(attempts: readonly Attempt[]): EndpointTally[] {
  const byEndpoint = new Map<string, EndpointTally>();
  for (const { endpointId, result, batch } of attempts) {
    let tally = byEndpoint.get(endpointId);
    if (!tally) {
      tally = {
        endpointId,
        counts: Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>,
        durations: new Array(DURATION_BUCKETS).fill(0),
        anySucceeded: false,
        lastFailure: null,
        batchRequests: 0,
        batchedEvents: 0,
      };
      byEndpoint.set(endpointId, tally);
    }
    tally.counts[outcomeOf(result)]++;
    tally.durations[durationBucket(Math.round(result.durationMs))]++;
    tally.anySucceeded ||= result.ok;
    tally.lastFailure = failureReason(result) ?? tally.lastFailure;
    if (batch) {
      tally.batchedEvents++;
      if (batch.first) tally.batchRequests++;
    }
  }
  return [...byEndpoint.values()].sort((a, b) =>
    a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0
  );
}
