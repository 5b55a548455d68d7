/**
 * The test clock's schedule, pure (domain/rails/clock_schedule.ts): billing dates by interval, the steps an advance
 * takes (invoices and PIX expiries) and their order, the cap, and the instants a clock body accepts. No database.
 */
import assert from "node:assert/strict";
import {
  addIntervals,
  dueSteps,
  nextStepAt,
  nextStepOf,
  type Schedule,
  type ScheduledSubscription,
  type Step,
} from "../../domain/rails/clock_schedule.ts";
import { parseInstant } from "../../routes/sandbox/test_clock_schemas.ts";

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;
/** A schedule of subscriptions alone. */
const only = (...subscriptions: ScheduledSubscription[]): Schedule => ({ subscriptions, charges: [] });
/** A step as [time, what it happens to (last character of the id), cycle or "expiry", outcome]. */
const brief = (s: Step) =>
  s.kind === "invoice"
    ? [s.at.toISOString(), s.subscriptionId.slice(-1), s.cycle, s.outcome]
    : [s.at.toISOString(), s.chargeId.slice(-1), "expiry", s.outcome];
const cycles = (steps: Step[]) => steps.map((s) => s.kind === "invoice" ? s.cycle : NaN);

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
  const { steps, more } = dueSteps(only(monthly()), at("2026-04-15T09:30:00Z"), 100);
  assert.equal(more, false);
  assert.deepEqual(steps.map(brief), [
    ["2026-02-15T09:30:00.000Z", "1", 1, "paid"],
    ["2026-03-15T09:30:00.000Z", "1", 2, "paid"],
    ["2026-04-15T09:30:00.000Z", "1", 3, "paid"],
  ]);
  // a millisecond short of the third date leaves it for later
  assert.equal(dueSteps(only(monthly()), at("2026-04-15T09:29:59.999Z"), 100).steps.length, 2);
});

Deno.test("steps start after the cycles already paid and stop at the last cycle", () => {
  const { steps } = dueSteps(only(monthly({ status: "active", paidCycles: 10 })), at("2030-01-01T00:00:00Z"), 100);
  assert.deepEqual(cycles(steps), [11, 12]);
  for (const status of ["canceled", "completed"] as const) {
    assert.deepEqual(dueSteps(only(monthly({ status })), at("2030-01-01T00:00:00Z"), 100).steps, [], status);
  }
});

Deno.test("the failing cycle is the subscription's last step", () => {
  const { steps } = dueSteps(only(monthly({ failAtCycle: 2 })), at("2027-01-01T00:00:00Z"), 100);
  assert.deepEqual(steps.map((s) => [cycles([s])[0], s.outcome]), [[1, "paid"], [2, "failed"]]);
});

Deno.test("several subscriptions interleave by time; at the same instant, the older subscription first", () => {
  const older = monthly({ id: "0193a6e4-0000-7000-8000-00000000000a", cycles: 2 });
  const weekly = monthly({ id: "0193a6e4-0000-7000-8000-00000000000b", interval: "week", cycles: 5 });
  const sameTime = monthly({ id: "0193a6e4-0000-7000-8000-000000000009", cycles: 1 });
  const { steps } = dueSteps(only(older, weekly, sameTime), at("2026-03-31T00:00:00Z"), 100);
  assert.deepEqual(steps.map((s) => brief(s).slice(1, 3).concat(s.at.toISOString().slice(0, 10))), [
    ["b", 1, "2026-01-22"],
    ["b", 2, "2026-01-29"],
    ["b", 3, "2026-02-05"],
    ["b", 4, "2026-02-12"],
    ["9", 1, "2026-02-15"],
    ["a", 1, "2026-02-15"],
    ["b", 5, "2026-02-19"],
    ["a", 2, "2026-03-15"],
  ]);
});

Deno.test("a pending PIX charge expires at its time, among the invoices; a paid one has no step", () => {
  const sub = monthly({ id: "0193a6e4-0000-7000-8000-00000000000a", cycles: 2 });
  const pending = {
    id: "0193a6e4-0000-7000-8000-00000000000c",
    status: "pending" as const,
    expiresAt: at("2026-02-15T09:30:00Z"),
  };
  const early = {
    id: "0193a6e4-0000-7000-8000-000000000003",
    status: "pending" as const,
    expiresAt: at("2026-01-20T00:00:00Z"),
  };
  const paid = {
    id: "0193a6e4-0000-7000-8000-00000000000d",
    status: "paid" as const,
    expiresAt: at("2026-01-20T00:00:00Z"),
  };
  const late = {
    id: "0193a6e4-0000-7000-8000-00000000000e",
    status: "pending" as const,
    expiresAt: at("2027-01-01T00:00:00Z"),
  };
  const { steps } = dueSteps(
    { subscriptions: [sub], charges: [pending, early, paid, late] },
    at("2026-03-31T00:00:00Z"),
    100,
  );
  assert.deepEqual(steps.map(brief), [
    ["2026-01-20T00:00:00.000Z", "3", "expiry", "expired"],
    // the same instant as the invoice: the older of the two (the subscription's id sorts first) goes first
    ["2026-02-15T09:30:00.000Z", "a", 1, "paid"],
    ["2026-02-15T09:30:00.000Z", "c", "expiry", "expired"],
    ["2026-03-15T09:30:00.000Z", "a", 2, "paid"],
  ]);
});

Deno.test("past the limit the advance is refused, and the work stays bounded however far it goes", () => {
  const daily = monthly({ interval: "day", cycles: 1200 });
  const exactly = dueSteps(only(daily), addIntervals(daily.anchor, "day", 100), 100);
  assert.deepEqual([exactly.steps.length, exactly.more], [100, false]);
  const over = dueSteps(only(daily), addIntervals(daily.anchor, "day", 101), 100);
  assert.deepEqual([over.steps.length, over.more], [100, true]);
  assert.equal(iso(over.steps[99].at), iso(addIntervals(daily.anchor, "day", 100)), "the last time that fits");
  // ten subscriptions of 1200 daily cycles and a clock moved 150 years: still at most limit + 1 steps each
  const many = Array.from({ length: 10 }, (_, i) => ({ ...daily, id: `${daily.id.slice(0, -2)}${10 + i}` }));
  const started = performance.now();
  const far = dueSteps(only(...many), at("2176-01-01T00:00:00Z"), 100);
  assert.deepEqual([far.steps.length, far.more], [100, true]);
  assert.ok(performance.now() - started < 200, "bounded work");
  // split among subscriptions, the total counts
  const two = dueSteps(only(daily, { ...daily, id: many[0].id }), addIntervals(daily.anchor, "day", 51), 100);
  assert.deepEqual([two.steps.length, two.more], [100, true]);
});

Deno.test("next step: the earliest next invoice of any subscription still charging", () => {
  assert.equal(iso(nextStepOf(monthly({ paidCycles: 3, status: "active" }))), "2026-05-15T09:30:00.000Z");
  assert.equal(nextStepOf(monthly({ paidCycles: 12, status: "completed" })), null);
  const weekly = monthly({ interval: "week" });
  assert.equal(iso(nextStepAt(only(monthly(), weekly))), "2026-01-22T09:30:00.000Z");
  assert.equal(nextStepAt(only(monthly({ status: "canceled" }))), null);
  assert.equal(nextStepAt(only()), null);
  const charge = {
    id: "0193a6e4-0000-7000-8000-00000000000c",
    status: "pending" as const,
    expiresAt: at("2026-01-16"),
  };
  assert.equal(iso(nextStepAt({ subscriptions: [weekly], charges: [charge] })), "2026-01-16T00:00:00.000Z");
  assert.equal(
    iso(nextStepAt({ subscriptions: [weekly], charges: [{ ...charge, status: "paid" }] })),
    iso(nextStepOf(weekly)),
  );
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
