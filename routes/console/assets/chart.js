// The console's hourly buckets, kept apart from console.js so that a unit test imports them without a browser
// (tests/console/chart_test.ts). Each bucket is a whole UTC hour and is labelled by the hour it covers: its start to
// its end. The buckets were once counted from "24 hours before now" while labelled by the hour that instant fell in,
// so a delivery at 15:10, with the page read at 14:30, showed under "14:00", an hour early.

const HOUR = 3_600_000;

/**
 * The 24 whole UTC hours up to and including the current one, oldest first: `start` (the first instant it covers),
 * `end` (the first it does not) and `label` ("14:00–15:00 UTC").
 * @param {number} now milliseconds since 1970
 */
export function hourBuckets(now) {
  const current = Math.floor(now / HOUR) * HOUR;
  return Array.from({ length: 24 }, (_, i) => {
    const start = current - (23 - i) * HOUR;
    const hh = (t) => new Date(t).toISOString().slice(11, 16);
    return { start, end: start + HOUR, label: `${hh(start)}–${hh(start + HOUR)} UTC` };
  });
}

/**
 * The bucket an instant falls in (`start <= t < end`), or -1 before the first and after the last.
 * @param {{ start: number, end: number }[]} buckets
 * @param {number} at milliseconds since 1970
 */
export function bucketOf(buckets, at) {
  if (!buckets.length || at < buckets[0].start || at >= buckets[buckets.length - 1].end) return -1;
  return Math.floor((at - buckets[0].start) / HOUR);
}

/**
 * Counts per bucket and status of the records given (`inserted_at`, `status`), the chart's bars.
 * @param {{ start: number, end: number, label: string }[]} buckets
 * @param {{ inserted_at: string, status: string }[]} records
 */
export function countByHour(buckets, records) {
  const counts = buckets.map((b) => ({ ...b, succeeded: 0, failed: 0, pending: 0 }));
  for (const r of records) {
    const i = bucketOf(buckets, Date.parse(r.inserted_at));
    if (i >= 0 && r.status in counts[i]) counts[i][r.status]++;
  }
  return counts;
}
