/**
 * The shapes of the sandbox's test clocks (docs/sandbox.md, "Test clocks"): the bodies that create and advance a clock,
 * the clock fields a subscription or PIX charge body may carry, and the answers. Apart from schemas.ts so the clock's shapes read in
 * one place.
 */

import { z } from "@hono/zod-openapi";
import { INTERVALS } from "../../domain/rails/clock_schedule.ts";
import { optionalText, uuid } from "../openapi/schemas.ts";

const INSTANT_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const INSTANT_FORMAT = "has invalid format: expected an ISO 8601 date and time, e.g. 2026-01-01T00:00:00Z";

/** The instant a date and time names (UTC when it names no zone; a bare date is its midnight), or null. */
export function parseInstant(text: string): Date | null {
  const m = INSTANT_RE.exec(text);
  if (!m) return null;
  const [y, mo, d, h = "00", mi = "00", s = "00", fraction = "", zone = "Z"] = m.slice(1);
  const daysInMonth = new Date(Date.UTC(+y, +mo, 0)).getUTCDate();
  if (+mo < 1 || +mo > 12 || +d < 1 || +d > daysInMonth || +h > 23 || +mi > 59 || +s > 59) return null;
  const offset = zone.toUpperCase().replace(/^([+-]\d{2})(\d{2})$/, "$1:$2");
  const at = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${fraction.slice(0, 4)}${offset}`);
  return Number.isNaN(at.getTime()) ? null : at;
}

/** An instant in ISO 8601 (`2026-01-01T00:00:00Z`, an offset, no zone for UTC, or a bare date for its midnight). */
const instant = z.string().trim().min(1).transform((text, ctx) => {
  const at = parseInstant(text);
  if (at === null) {
    ctx.addIssue({ code: "custom", message: INSTANT_FORMAT });
    return z.NEVER;
  }
  return at;
}).openapi({ type: "string", format: "date-time", example: "2026-01-01T00:00:00Z" });

export const TestClockBody = z.object({
  name: optionalText(100).openapi({ description: "A label of the integrator's own" }),
  frozen_time: instant.nullish().openapi({
    type: ["string", "null"],
    format: "date-time",
    description: "Where the clock starts; absent: now",
  }),
}).openapi("SandboxTestClock");

export const AdvanceTestClockBody = z.object({
  frozen_time: instant.openapi({ description: "The clock's new time: later than its frozen_time" }),
}).openapi("SandboxTestClockAdvance");

/** What a subscription body may add to be created on a clock (`SubscriptionBody` of schemas.ts spreads it). */
export const CLOCKED_SUBSCRIPTION_FIELDS = {
  test_clock_id: uuid.nullish().openapi({
    type: ["string", "null"],
    format: "uuid",
    description: "Create the subscription on this test clock: its cycles fall due on the clock's time",
  }),
  interval: z.string().trim().pipe(z.enum(INTERVALS)).nullish().openapi({
    type: ["string", "null"],
    enum: [...INTERVALS, null],
    description: "On a test clock: the time between cycles (default month)",
  }),
  fail_at_cycle: z.number().int().min(1).max(1200).nullish().openapi({
    description: "On a test clock: the invoice of this cycle is not paid, and the subscription is canceled",
  }),
};

/** What a PIX charge body may add to be created on a clock (`PixChargeBody` of schemas.ts spreads it). */
export const CLOCKED_PIX_CHARGE_FIELDS = {
  test_clock_id: uuid.nullish().openapi({
    type: ["string", "null"],
    format: "uuid",
    description: "Create the charge on this test clock: it expires unpaid when the clock reaches expires_at",
  }),
  expires_at: instant.nullish().openapi({
    type: ["string", "null"],
    format: "date-time",
    description: "On a test clock: when the charge expires, on the clock's time (default an hour after it)",
  }),
};

const time = z.string().openapi({ format: "date-time", example: "2026-01-01T00:00:00.000Z" });
const timeOrNull = z.string().nullable().openapi({ format: "date-time" });

export const TestClock = z.object({
  id: z.string().uuid(),
  name: z.string(),
  frozen_time: time,
  next_step_at: timeOrNull.openapi({ description: "When the clock next has a step to take; null: none" }),
  subscriptions: z.array(z.object({
    id: z.string().uuid(),
    status: z.enum(["pending", "active", "canceled", "completed"]),
    interval: z.enum(INTERVALS),
    cycles: z.number().int(),
    paid_cycles: z.number().int(),
    fail_at_cycle: z.number().int().nullable(),
    next_invoice_at: timeOrNull,
  })),
  pix_charges: z.array(z.object({
    id: z.string().uuid(),
    transaction_id: z.string().uuid(),
    status: z.enum(["pending", "paid", "refunded", "expired"]),
    value: z.string(),
    expires_at: time,
  })),
  inserted_at: time,
  updated_at: time,
}).openapi("SandboxTestClockRecord");

const invoiceStep = z.object({
  at: time,
  kind: z.literal("invoice"),
  subscription_id: z.string().uuid(),
  cycle: z.number().int(),
  outcome: z.enum(["paid", "failed"]),
  events: z.array(z.string()).openapi({ description: "The event types the step emitted, in order" }),
});
const expiryStep = z.object({
  at: time,
  kind: z.literal("pix_charge_expiry"),
  transaction_id: z.string().uuid(),
  outcome: z.literal("expired"),
  events: z.array(z.string()).openapi({ description: "The event types the step emitted, in order" }),
});

export const TestClockAdvanced = TestClock.extend({
  steps: z.array(z.discriminatedUnion("kind", [invoiceStep, expiryStep]))
    .openapi({ description: "What the advance did, in the order it happened" }),
}).openapi("SandboxTestClockAdvanced");

export const TEST_CLOCK_EXAMPLES = {
  create: { name: "Monthly plan, first quarter", frozen_time: "2026-01-01T00:00:00Z" },
  advance: { frozen_time: "2026-04-01T00:00:00Z" },
} satisfies {
  create: z.input<typeof TestClockBody>;
  advance: z.input<typeof AdvanceTestClockBody>;
};
