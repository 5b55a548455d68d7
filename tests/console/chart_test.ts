/**
 * The console chart's hourly buckets, a pure module (routes/console/assets/chart.js) tested without a browser: each
 * bucket is a whole UTC hour labelled by the hour it covers, so a delivery shows under the hour it was made in, never
 * the one before (it once did, its buckets counted from "24 hours ago" and labelled by the hour that fell in).
 */
import assert from "node:assert/strict";
import { bucketOf, countByHour, hourBuckets } from "../../routes/console/assets/chart.js";

const at = (iso: string) => Date.parse(iso);
/** The label of the bucket `iso` falls in, with the page read at `now`. */
const labelOf = (now: string, iso: string) => {
  const buckets = hourBuckets(at(now));
  const i = bucketOf(buckets, at(iso));
  return i < 0 ? null : buckets[i].label;
};

Deno.test("24 whole UTC hours, oldest first, up to the hour now is in", () => {
  const buckets = hourBuckets(at("2026-11-27T14:30:00Z"));
  assert.equal(buckets.length, 24);
  assert.equal(buckets[23].label, "14:00–15:00 UTC");
  assert.equal(new Date(buckets[23].start).toISOString(), "2026-11-27T14:00:00.000Z");
  assert.equal(buckets[0].label, "15:00–16:00 UTC");
  assert.equal(new Date(buckets[0].start).toISOString(), "2026-11-26T15:00:00.000Z");
  for (let i = 1; i < 24; i++) assert.equal(buckets[i].start, buckets[i - 1].end);
});

Deno.test("a delivery shows under the hour it was made in, not the hour before", () => {
  const now = "2026-11-27T14:30:00Z";
  // read at 14:30, a delivery of 15:10 the day before once showed under "14:00"
  assert.equal(labelOf(now, "2026-11-26T15:10:00Z"), "15:00–16:00 UTC");
  assert.equal(labelOf(now, "2026-11-27T14:10:00Z"), "14:00–15:00 UTC");
  assert.equal(labelOf(now, "2026-11-27T13:45:00Z"), "13:00–14:00 UTC");
});

Deno.test("a bucket takes its start and leaves its end to the next", () => {
  const now = "2026-11-27T14:30:00Z";
  assert.equal(labelOf(now, "2026-11-27T14:00:00.000Z"), "14:00–15:00 UTC");
  assert.equal(labelOf(now, "2026-11-27T13:59:59.999Z"), "13:00–14:00 UTC");
  assert.equal(labelOf(now, "2026-11-26T15:00:00.000Z"), "15:00–16:00 UTC");
  assert.equal(labelOf(now, "2026-11-26T14:59:59.999Z"), null, "before the first hour");
  assert.equal(labelOf(now, "2026-11-27T15:00:00.000Z"), null, "after the current hour");
});

Deno.test("across midnight the hours run 23:00–00:00 then 00:00–01:00", () => {
  const buckets = hourBuckets(at("2026-11-28T00:20:00Z"));
  assert.deepEqual(buckets.slice(-2).map((b) => b.label), ["23:00–00:00 UTC", "00:00–01:00 UTC"]);
});

Deno.test("counts per hour and status", () => {
  const buckets = hourBuckets(at("2026-11-27T14:30:00Z"));
  const counted = countByHour(buckets, [
    { inserted_at: "2026-11-27T14:05:00.000Z", status: "succeeded" },
    { inserted_at: "2026-11-27T14:25:00.000Z", status: "failed" },
    { inserted_at: "2026-11-27T13:05:00.000Z", status: "pending" },
    { inserted_at: "2026-11-26T14:05:00.000Z", status: "succeeded" },
  ]);
  assert.deepEqual(
    counted.slice(-2).map(({ label, succeeded, failed, pending }) => ({ label, succeeded, failed, pending })),
    [
      { label: "13:00–14:00 UTC", succeeded: 0, failed: 0, pending: 1 },
      { label: "14:00–15:00 UTC", succeeded: 1, failed: 1, pending: 0 },
    ],
  );
  assert.equal(counted.reduce((n, b) => n + b.succeeded + b.failed + b.pending, 0), 3, "the day-old one left out");
});
