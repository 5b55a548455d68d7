/**
 * A company's filter time (docs/webhooks.md, "What a company's filters may spend"; docs/limits.md): every evaluation of
 * an endpoint's filter, at the fan-out, in a recover and when a deferred record is decided, is charged to the company
 * whose endpoint it is, in a token bucket of milliseconds per second. A company whose bucket is empty evaluates nothing
 * more until it refills: its records are written all the same and their filters decided later, within the same budget
 * (deferred_filters.ts in the engine), so one company's filters never take another's time on the thread that answers
 * everyone. Kept apart from filters.ts, which evaluates one filter and knows no company.
 *
 * Per instance: each instance protects its own event loop, and a company's work is spread over the instances that
 * handle its requests, so a company may spend the budget once per instance.
 */

/**
 * The bucket's refill and size when nothing configures them (FILTER_TIME_MS_PER_SECOND, FILTER_TIME_BURST_MS; a refill
 * of 0 turns the bound off). A typical filter takes a microsecond or two: 50 ms a second is tens of thousands of
 * evaluations, which no integrator's traffic comes near; a hostile filter gets 5 % of one core.
 */
export const DEFAULT_FILTER_TIME = { perSecondMs: 50, burstMs: 250 };
/**
 * Time the filters of one call may take before it gives the rest up to be decided later (one event's fan-out) or
 * yields to the event loop (a recover's slice): what one call may hold the thread that answers everyone for.
 */
export const FILTER_SLICE_MS = 5;
/** Companies whose bucket is remembered; past it, the full ones (which a fresh bucket equals) are forgotten. */
const REMEMBERED_COMPANIES = 10_000;

type Bucket = { tokens: number; at: number };

let settings = { ...DEFAULT_FILTER_TIME };
const buckets = new Map<string, Bucket>();

/** The bucket's refill and size (from the configuration, at start); buckets already made keep what they hold. */
export function configureFilterTime(next: { perSecondMs: number; burstMs: number }) {
  settings = { ...next };
}

/** The company's bucket as of now. */
function bucketOf(companyId: string, now = performance.now()): Bucket {
  let b = buckets.get(companyId);
  if (!b) {
    if (buckets.size >= REMEMBERED_COMPANIES) forgetFull(now);
    b = { tokens: settings.burstMs, at: now };
    buckets.set(companyId, b);
  }
  b.tokens = Math.min(settings.burstMs, b.tokens + (now - b.at) * settings.perSecondMs / 1000);
  b.at = now;
  return b;
}

function forgetFull(now: number) {
  for (const [id, b] of buckets) {
    if (b.tokens + (now - b.at) * settings.perSecondMs / 1000 >= settings.burstMs) buckets.delete(id);
  }
}

/** Whether the company may evaluate a filter now: its bucket holds some time. */
export function hasFilterTime(companyId: string): boolean {
  return settings.perSecondMs === 0 || bucketOf(companyId).tokens > 0;
}

/** Milliseconds until the company's bucket holds time again (0 when it does now). */
export function filterTimeWait(companyId: string): number {
  if (settings.perSecondMs === 0) return 0;
  const b = bucketOf(companyId);
  if (b.tokens > 0) return 0;
  return Math.ceil((-b.tokens + 0.001) * 1000 / settings.perSecondMs);
}

/** Charges `ms` of evaluation to the company: the bucket may go below zero, which the refill pays back first. */
export function chargeFilterTime(companyId: string, ms: number) {
  if (settings.perSecondMs !== 0) bucketOf(companyId).tokens -= ms;
}

/**
 * Runs `evaluate` and charges its time to the company: the one way a filter's evaluation is timed, so every caller
 * accounts the same way.
 */
export function charged<T>(companyId: string, evaluate: () => T): T {
  const start = performance.now();
  try {
    return evaluate();
  } finally {
    chargeFilterTime(companyId, performance.now() - start);
  }
}

/** A tick of the event loop: what a long loop of evaluations awaits between slices, so requests are answered. */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
