/**
 * Sandbox test clocks (docs/sandbox.md, "Test clocks"): a company's clocks, the subscriptions and PIX charges created
 * on them, and the advance that runs every step falling due up to the new time, in order, in one transaction, through
 * the same `payInvoice`, `cancelSubscription` and `expirePixCharge` the sandbox's own calls use (so the events are the
 * real ones). The schedule itself is pure and lives in clock_schedule.ts.
 */
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { notFound, unprocessable, validationFailed } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { isoUtc, isoUtcOrNull } from "../basics/time.ts";
import {
  dueSteps,
  type Interval,
  nextStepAt,
  nextStepOf,
  type Schedule,
  type ScheduledSubscription,
} from "./clock_schedule.ts";
import { cancelSubscription, createSubscription, payInvoice, type SubscriptionRow } from "./subscriptions.ts";
import { createPixCharge, expirePixCharge, type PixChargeInput, type PixChargeRow } from "./pix_charges.ts";

/** Clocks a company may have at once: each is a schedule an advance reads whole. */
export const MAX_CLOCKS_PER_COMPANY = 20;
/** Subscriptions on one clock: an advance locks and schedules them all. */
export const MAX_SUBSCRIPTIONS_PER_CLOCK = 10;
/** PIX charges on one clock, paid or not: the same, for the charges. */
export const MAX_PIX_CHARGES_PER_CLOCK = 10;
/** A PIX charge on a clock expires this long after the clock's time unless told when (as a dynamic PIX pay-in does). */
export const PIX_CHARGE_LIFETIME_MS = 60 * 60 * 1000;
/**
 * Steps one advance may take (an invoice paid, or not): each is a few statements and up to three events in the
 * advance's one transaction, so the figure bounds what a tenant makes the service do in one call. Past it the advance
 * is refused (422 on `frozen_time`) and nothing changes; a client advances in smaller moves.
 */
export const MAX_ADVANCE_STEPS = 100;
/** A clock's time stays within these: far enough for any billing story, near enough that dates stay ordinary. */
export const EARLIEST_TIME = new Date("2000-01-01T00:00:00Z");
export const LATEST_TIME = new Date("2200-01-01T00:00:00Z");

export type TestClockRow = {
  id: string;
  company_id: string;
  name: string;
  frozen_time: Date;
  inserted_at: Date;
  updated_at: Date;
};

type ClockedSubscriptionRow = SubscriptionRow & {
  billing_interval: Interval;
  anchor: Date;
  fail_at_cycle: number | null;
};

type ClockedChargeRow = PixChargeRow & { expires_at: Date };

/** What is on a clock: its subscriptions and PIX charges with their schedules, oldest first. */
export type ClockContents = { subscriptions: ClockedSubscriptionRow[]; charges: ClockedChargeRow[] };

const scheduled = (s: ClockedSubscriptionRow): ScheduledSubscription => ({
  id: s.id,
  status: s.status,
  anchor: s.anchor,
  interval: s.billing_interval,
  cycles: s.cycles,
  paidCycles: s.paid_cycles,
  failAtCycle: s.fail_at_cycle,
});

const scheduleOf = ({ subscriptions, charges }: ClockContents): Schedule => ({
  subscriptions: subscriptions.map(scheduled),
  charges: charges.map((c) => ({ id: c.id, status: c.status, expiresAt: c.expires_at })),
});

/**
 * A clock as the sandbox answers it: its time, when it next has something to do, and the schedules of what is on it.
 */
export function presentTestClock(clock: TestClockRow, contents: ClockContents) {
  return {
    id: clock.id,
    name: clock.name,
    frozen_time: isoUtc(clock.frozen_time),
    next_step_at: isoUtcOrNull(nextStepAt(scheduleOf(contents))),
    subscriptions: contents.subscriptions.map((s) => ({
      id: s.id,
      status: s.status,
      interval: s.billing_interval,
      cycles: s.cycles,
      paid_cycles: s.paid_cycles,
      fail_at_cycle: s.fail_at_cycle,
      next_invoice_at: isoUtcOrNull(nextStepOf(scheduled(s))),
    })),
    pix_charges: contents.charges.map((c) => ({
      id: c.id,
      transaction_id: c.id,
      status: c.status,
      value: c.value,
      expires_at: isoUtc(c.expires_at),
    })),
    inserted_at: isoUtc(clock.inserted_at),
    updated_at: isoUtc(clock.updated_at),
  };
}

function checkTime(field: string, at: Date) {
  if (at.getTime() < EARLIEST_TIME.getTime() || at.getTime() >= LATEST_TIME.getTime()) {
    throw validationFailed({
      [field]: [`must be from ${isoUtc(EARLIEST_TIME)} and before ${isoUtc(LATEST_TIME)}`],
    }, 422);
  }
}

/** A new clock, frozen at `frozen_time` (default: now). */
export async function createTestClock(
  tx: TransactionSql,
  companyId: string,
  input: { name?: string | null; frozen_time?: Date | null },
): Promise<TestClockRow> {
  const frozenTime = input.frozen_time ?? new Date();
  checkTime("frozen_time", frozenTime);
  // one creation at a time per company, so two at once cannot both pass the count
  await tx`select pg_advisory_xact_lock(hashtextextended(${`test_clocks:${companyId}`}, 0))`;
  const [{ count }] = await tx<{ count: number }[]>`
    select count(*)::int as count from test_clocks where company_id = ${companyId}`;
  if (count >= MAX_CLOCKS_PER_COMPANY) {
    throw unprocessable(`a company may have at most ${MAX_CLOCKS_PER_COMPANY} test clocks; delete one first`);
  }
  const [row] = await tx<TestClockRow[]>`
    insert into test_clocks ${
    tx({ id: newId(), company_id: companyId, name: input.name ?? "", frozen_time: frozenTime })
  }
    returning *`;
  return row;
}

async function lockClock(tx: TransactionSql, companyId: string, id: string) {
  const [row] = await tx<TestClockRow[]>`
    select * from test_clocks where company_id = ${companyId} and id = ${id} for update`;
  if (!row) throw notFound();
  return row;
}

/**
 * What is on the clocks named, oldest first, with the clock each is on; locked when `forUpdate` (an advance, which
 * reads only the charges still pending: the others have no step left).
 */
async function contentsOf(sql: SqlOrTransaction, companyId: string, clockIds: string[], forUpdate = false) {
  const subscriptions = await sql<(ClockedSubscriptionRow & { test_clock_id: string })[]>`
    select s.*, t.test_clock_id, t.billing_interval, t.anchor, t.fail_at_cycle
    from test_clock_subscriptions t join subscriptions s on s.company_id = t.company_id and s.id = t.subscription_id
    where t.company_id = ${companyId} and t.test_clock_id = any(${clockIds}::uuid[])
    order by s.id
    ${forUpdate ? sql`for update of s` : sql``}`;
  const charges = await sql<(ClockedChargeRow & { test_clock_id: string })[]>`
    select c.*, t.test_clock_id, t.expires_at
    from test_clock_pix_charges t join pix_charges c on c.company_id = t.company_id and c.id = t.pix_charge_id
    where t.company_id = ${companyId} and t.test_clock_id = any(${clockIds}::uuid[])
      ${forUpdate ? sql`and c.status = 'pending'` : sql``}
    order by c.id
    ${forUpdate ? sql`for update of c` : sql``}`;
  return (clockId: string): ClockContents => ({
    subscriptions: subscriptions.filter((s) => s.test_clock_id === clockId),
    charges: charges.filter((c) => c.test_clock_id === clockId),
  });
}

/** One clock of the company with what is on it. */
export async function getTestClock(sql: SqlOrTransaction, companyId: string, id: string) {
  const [clock] = await sql<TestClockRow[]>`
    select * from test_clocks where company_id = ${companyId} and id = ${id}`;
  if (!clock) throw notFound();
  return { clock, contents: (await contentsOf(sql, companyId, [id]))(id) };
}

/** Every clock of the company (at most MAX_CLOCKS_PER_COMPANY), oldest first, with what is on it. */
export async function listTestClocks(sql: SqlOrTransaction, companyId: string) {
  const clocks = await sql<TestClockRow[]>`
    select * from test_clocks where company_id = ${companyId} order by id limit ${MAX_CLOCKS_PER_COMPANY}`;
  if (clocks.length === 0) return [];
  const on = await contentsOf(sql, companyId, clocks.map((c) => c.id));
  return clocks.map((clock) => ({ clock, contents: on(clock.id) }));
}

/**
 * Deletes the clock. Its subscriptions and charges stay as they are, with their invoices and events, but leave the
 * clock: nothing charges or expires them on time any more (the sandbox's own calls still work on them).
 */
export async function deleteTestClock(tx: TransactionSql, companyId: string, id: string) {
  await lockClock(tx, companyId, id);
  await tx`delete from test_clocks where company_id = ${companyId} and id = ${id}`;
  return { id, deleted: true as const };
}

export type SubscriptionInput = {
  subject_id: string;
  cycles: number;
  test_clock_id?: string | null;
  interval?: Interval | null;
  fail_at_cycle?: number | null;
};

/**
 * A sandbox subscription, on a clock when `test_clock_id` is given: created as any other
 * (subscription_qr_code_generated), at the clock's time, which is the anchor its cycles fall due from: cycle n, n
 * intervals later (monthly by default). `interval` and `fail_at_cycle` mean something only on a clock, so without one
 * they are refused rather than ignored. `clock` is what the answer adds for a subscription on a clock (nothing
 * otherwise, so the answer of a plain subscription is as it was).
 */
export async function createSubscriptionOnClock(tx: TransactionSql, companyId: string, input: SubscriptionInput) {
  const { test_clock_id, interval, fail_at_cycle, ...plain } = input;
  if (!test_clock_id) {
    const onlyOnAClock = ["can only be given with test_clock_id"];
    if (interval != null || fail_at_cycle != null) {
      throw validationFailed({
        ...(interval != null ? { interval: onlyOnAClock } : {}),
        ...(fail_at_cycle != null ? { fail_at_cycle: onlyOnAClock } : {}),
      }, 422);
    }
    return { subscription: await createSubscription(tx, companyId, plain), clock: {} };
  }
  const clock = await lockClock(tx, companyId, test_clock_id);
  if (fail_at_cycle != null && fail_at_cycle > input.cycles) {
    throw validationFailed({ fail_at_cycle: [`must be less than or equal to cycles (${input.cycles})`] }, 422);
  }
  const [{ count }] = await tx<{ count: number }[]>`
    select count(*)::int as count from test_clock_subscriptions
    where company_id = ${companyId} and test_clock_id = ${clock.id}`;
  if (count >= MAX_SUBSCRIPTIONS_PER_CLOCK) {
    throw validationFailed({
      test_clock_id: [`has ${MAX_SUBSCRIPTIONS_PER_CLOCK} subscriptions already, the most a clock may have`],
    }, 422);
  }
  const subscription = await createSubscription(tx, companyId, plain);
  const onClock = { test_clock_id: clock.id, interval: interval ?? "month", fail_at_cycle: fail_at_cycle ?? null };
  await tx`
    insert into test_clock_subscriptions ${
    tx({
      subscription_id: subscription.id,
      company_id: companyId,
      test_clock_id: clock.id,
      billing_interval: onClock.interval,
      anchor: clock.frozen_time,
      fail_at_cycle: onClock.fail_at_cycle,
    })
  }`;
  return { subscription, clock: onClock };
}

export type PixChargeOnClockInput = PixChargeInput & { test_clock_id?: string | null; expires_at?: Date | null };

/**
 * A sandbox PIX charge, on a clock when `test_clock_id` is given: issued as any other (pending, no event), and expiring
 * unpaid at `expires_at` on the clock's time (default an hour after the clock's time), when an advance reaches it
 * (payment_expired). `expires_at` means something only on a clock, so without one it is refused rather than ignored.
 * `clock` is what the answer adds for a charge on a clock.
 */
export async function createPixChargeOnClock(tx: TransactionSql, companyId: string, input: PixChargeOnClockInput) {
  const { test_clock_id, expires_at, ...plain } = input;
  if (!test_clock_id) {
    if (expires_at != null) throw validationFailed({ expires_at: ["can only be given with test_clock_id"] }, 422);
    return { charge: await createPixCharge(tx, companyId, plain), clock: {} };
  }
  const clock = await lockClock(tx, companyId, test_clock_id);
  const expiresAt = expires_at ?? new Date(clock.frozen_time.getTime() + PIX_CHARGE_LIFETIME_MS);
  checkTime("expires_at", expiresAt);
  if (expiresAt.getTime() <= clock.frozen_time.getTime()) {
    throw validationFailed({
      expires_at: [`must be after the clock's frozen_time, ${isoUtc(clock.frozen_time)}`],
    }, 422);
  }
  const [{ count }] = await tx<{ count: number }[]>`
    select count(*)::int as count from test_clock_pix_charges
    where company_id = ${companyId} and test_clock_id = ${clock.id}`;
  if (count >= MAX_PIX_CHARGES_PER_CLOCK) {
    throw validationFailed({
      test_clock_id: [`has ${MAX_PIX_CHARGES_PER_CLOCK} PIX charges already, the most a clock may have`],
    }, 422);
  }
  const charge = await createPixCharge(tx, companyId, plain);
  await tx`
    insert into test_clock_pix_charges ${
    tx({ pix_charge_id: charge.id, company_id: companyId, test_clock_id: clock.id, expires_at: expiresAt })
  }`;
  return { charge, clock: { test_clock_id: clock.id, expires_at: isoUtc(expiresAt) } };
}

/** What one step of an advance did, with the event types it emitted in their order. */
export type TakenStep =
  | {
    at: string;
    kind: "invoice";
    subscription_id: string;
    cycle: number;
    outcome: "paid" | "failed";
    events: string[];
  }
  | { at: string; kind: "pix_charge_expiry"; transaction_id: string; outcome: "expired"; events: string[] };

/**
 * Moves the clock to `to` and runs every step that falls due on the way, in time order, each through the sandbox's
 * own calls: a paid invoice is `payInvoice` (invoice_paid, then subscription_activated for the first,
 * subscription_completed for the last), an unpaid one cancels the subscription (subscription_canceled, by the
 * merchant, saying which cycle went unpaid), a PIX charge still pending at its expiry is `expirePixCharge`
 * (payment_expired). All in the caller's transaction: the clock moves with every event it caused, or not at all. More
 * than MAX_ADVANCE_STEPS steps is refused before anything runs.
 */
export async function advanceTestClock(tx: TransactionSql, companyId: string, id: string, to: Date) {
  const clock = await lockClock(tx, companyId, id);
  checkTime("frozen_time", to);
  if (to.getTime() <= clock.frozen_time.getTime()) {
    throw validationFailed({
      frozen_time: [`must be after the clock's frozen_time, ${isoUtc(clock.frozen_time)}`],
    }, 422);
  }
  const contents = (await contentsOf(tx, companyId, [id], true))(id);
  const { steps, more } = dueSteps(scheduleOf(contents), to, MAX_ADVANCE_STEPS);
  if (more) {
    const stop = steps[steps.length - 1].at;
    throw validationFailed({
      frozen_time: [
        `would take more than ${MAX_ADVANCE_STEPS} steps in one advance; advance to ${isoUtc(stop)} or earlier first`,
      ],
    }, 422);
  }
  const statusOf = new Map(contents.subscriptions.map((s) => [s.id, s.status]));
  const taken: TakenStep[] = [];
  for (const step of steps) {
    const at = isoUtc(step.at);
    if (step.kind === "pix_charge_expiry") {
      await expirePixCharge(tx, companyId, step.chargeId);
      taken.push({
        at,
        kind: step.kind,
        transaction_id: step.chargeId,
        outcome: step.outcome,
        events: ["payment_expired"],
      });
      continue;
    }
    const { subscriptionId, cycle } = step;
    let events: string[];
    if (step.outcome === "paid") {
      const before = statusOf.get(subscriptionId);
      const { subscription, invoice } = await payInvoice(tx, companyId, subscriptionId);
      // the schedule was read under the same locks: a cycle other than the one planned is a bug, not a state
      if (invoice.cycle !== cycle) throw new Error(`clock ${id} planned cycle ${cycle}, paid ${invoice.cycle}`);
      events = [
        "invoice_paid",
        ...(before === "pending" ? ["subscription_activated"] : []),
        ...(subscription.status === "completed" ? ["subscription_completed"] : []),
      ];
      statusOf.set(subscriptionId, subscription.status);
    } else {
      await cancelSubscription(tx, companyId, subscriptionId, {
        by_payer: false,
        reason: `invoice of cycle ${cycle} was not paid`,
      });
      events = ["subscription_canceled"];
    }
    taken.push({ at, kind: step.kind, subscription_id: subscriptionId, cycle, outcome: step.outcome, events });
  }
  const [moved] = await tx<TestClockRow[]>`
    update test_clocks set frozen_time = ${to}, updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  return { clock: moved, contents: (await contentsOf(tx, companyId, [id]))(id), steps: taken };
}
