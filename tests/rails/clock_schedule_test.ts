/**
 * The test clock's schedule, pure (domain/rails/clock_schedule.ts): billing dates by interval, the steps an advance
 * takes and their order, the cap, and the instants a clock body accepts. No database.
 */
import assert from "node:assert/strict";
import {
  addIntervals,
  dueSteps,
  nextStepAt,
  nextStepOf,
  type ScheduledSubscription,
} from "../../domain/rails/clock_schedule.ts";
import { parseInstant } from "../../routes/sandbox/test_clock_schemas.ts";

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

const monthly = (over: Partial<ScheduledSubscription> = {}): ScheduledSubscription => ({
  id: "0193a6e4-0000-7000-8000-000000000001",
  status: "pending",
  anchor: at("2026-01-15T09:30:00Z"),
  interval: "month",
  cycles: 12,
  paidCycles: 0,
  failAtCycle: null,
  ...over,
});

Deno.test("billing dates: days and weeks add time; months and years keep the day, or the month's last", () => {
  const jan31 = at("2026-01-31T10:00:00Z");
  assert.equal(iso(addIntervals(jan31, "day", 1)), "2026-02-01T10:00:00.000Z");
  assert.equal(iso(addIntervals(jan31, "week", 2)), "2026-02-14T10:00:00.000Z");
  assert.equal(iso(addIntervals(jan31, "month", 1)), "2026-02-28T10:00:00.000Z");
  assert.equal(iso(addIntervals(jan31, "month", 2)), "2026-03-31T10:00:00.000Z", "anchored on the 31st, not the 28th");
  assert.equal(iso(addIntervals(jan31, "month", 13)), "2027-02-28T10:00:00.000Z");
  assert.equal(iso(addIntervals(at("2028-01-31T00:00:00Z"), "month", 1)), "2028-02-29T00:00:00.000Z", "leap year");
  assert.equal(iso(addIntervals(at("2028-02-29T00:00:00Z"), "year", 1)), "2029-02-28T00:00:00.000Z");
  assert.equal(iso(addIntervals(at("2028-02-29T00:00:00Z"), "year", 4)), "2032-02-29T00:00:00.000Z");
  assert.equal(iso(addIntervals(at("2026-11-30T23:59:59.999Z"), "month", 3)), "2027-02-28T23:59:59.999Z");
});

Deno.test("an advance over three months pays cycles 1 to 3 on their dates, in order", () => {
  const { steps, more } = dueSteps([monthly()], at("2026-04-15T09:30:00Z"), 100);
  assert.equal(more, false);
  assert.deepEqual(steps.map((s) => [iso(s.at), s.cycle, s.outcome]), [
    ["2026-02-15T09:30:00.000Z", 1, "paid"],
    ["2026-03-15T09:30:00.000Z", 2, "paid"],
    ["2026-04-15T09:30:00.000Z", 3, "paid"],
  ]);
  // a millisecond short of the third date leaves it for later
  assert.equal(dueSteps([monthly()], at("2026-04-15T09:29:59.999Z"), 100).steps.length, 2);
});

Deno.test("steps start after the cycles already paid and stop at the last cycle", () => {
  const { steps } = dueSteps([monthly({ status: "active", paidCycles: 10 })], at("2030-01-01T00:00:00Z"), 100);
  assert.deepEqual(steps.map((s) => s.cycle), [11, 12]);
  for (const status of ["canceled", "completed"] as const) {
    assert.deepEqual(dueSteps([monthly({ status })], at("2030-01-01T00:00:00Z"), 100).steps, [], status);
  }
});

Deno.test("the failing cycle is the subscription's last step", () => {
  const { steps } = dueSteps([monthly({ failAtCycle: 2 })], at("2027-01-01T00:00:00Z"), 100);
  assert.deepEqual(steps.map((s) => [s.cycle, s.outcome]), [[1, "paid"], [2, "failed"]]);
});

Deno.test("several subscriptions interleave by time; at the same instant, the older subscription first", () => {
  const older = monthly({ id: "0193a6e4-0000-7000-8000-00000000000a", cycles: 2 });
  const weekly = monthly({ id: "0193a6e4-0000-7000-8000-00000000000b", interval: "week", cycles: 5 });
  const sameTime = monthly({ id: "0193a6e4-0000-7000-8000-000000000009", cycles: 1 });
  const { steps } = dueSteps([older, weekly, sameTime], at("2026-03-31T00:00:00Z"), 100);
  assert.deepEqual(steps.map((s) => [s.at.toISOString().slice(0, 10), s.subscriptionId.slice(-1), s.cycle]), [
    ["2026-01-22", "b", 1],
    ["2026-01-29", "b", 2],
    ["2026-02-05", "b", 3],
    ["2026-02-12", "b", 4],
    ["2026-02-15", "9", 1],
    ["2026-02-15", "a", 1],
    ["2026-02-19", "b", 5],
    ["2026-03-15", "a", 2],
  ]);
});

Deno.test("past the limit the advance is refused, and the work stays bounded however far it goes", () => {
  const daily = monthly({ interval: "day", cycles: 1200 });
  const exactly = dueSteps([daily], addIntervals(daily.anchor, "day", 100), 100);
  assert.deepEqual([exactly.steps.length, exactly.more], [100, false]);
  const over = dueSteps([daily], addIntervals(daily.anchor, "day", 101), 100);
  assert.deepEqual([over.steps.length, over.more], [100, true]);
  assert.equal(iso(over.steps[99].at), iso(addIntervals(daily.anchor, "day", 100)), "the last time that fits");
  // ten subscriptions of 1200 daily cycles and a clock moved 150 years: still at most limit + 1 steps each
  const many = Array.from({ length: 10 }, (_, i) => ({ ...daily, id: `${daily.id.slice(0, -2)}${10 + i}` }));
  const started = performance.now();
  const far = dueSteps(many, at("2176-01-01T00:00:00Z"), 100);
  assert.deepEqual([far.steps.length, far.more], [100, true]);
  assert.ok(performance.now() - started < 200, "bounded work");
  // split among subscriptions, the total counts
  const two = dueSteps([daily, { ...daily, id: many[0].id }], addIntervals(daily.anchor, "day", 51), 100);
  assert.deepEqual([two.steps.length, two.more], [100, true]);
});

Deno.test("next step: the earliest next invoice of any subscription still charging", () => {
  assert.equal(iso(nextStepOf(monthly({ paidCycles: 3, status: "active" }))), "2026-05-15T09:30:00.000Z");
  assert.equal(nextStepOf(monthly({ paidCycles: 12, status: "completed" })), null);
  const weekly = monthly({ interval: "week" });
  assert.equal(iso(nextStepAt([monthly(), weekly])), "2026-01-22T09:30:00.000Z");
  assert.equal(nextStepAt([monthly({ status: "canceled" })]), null);
  assert.equal(nextStepAt([]), null);
});

Deno.test("a clock's time: ISO 8601 with a zone, an offset, none (UTC) or a bare date; real calendar dates only", () => {
  assert.equal(iso(parseInstant("2026-01-01T00:00:00Z")), "2026-01-01T00:00:00.000Z");
  assert.equal(iso(parseInstant("2026-01-01T10:00:00-03:00")), "2026-01-01T13:00:00.000Z");
  assert.equal(iso(parseInstant("2026-01-01T10:00:00+0530")), "2026-01-01T04:30:00.000Z");
  assert.equal(iso(parseInstant("2026-01-01T10:00")), "2026-01-01T10:00:00.000Z");
  assert.equal(iso(parseInstant("2026-01-01 10:00:00.123456")), "2026-01-01T10:00:00.123Z");
  assert.equal(iso(parseInstant("2028-02-29")), "2028-02-29T00:00:00.000Z");
  for (const bad of ["2026-02-29", "2026-13-01", "2026-01-01T24:00:00Z", "02/01/1990", "1767225600", "", "tomorrow"]) {
    assert.equal(parseInstant(bad), null, bad);
  }
});
