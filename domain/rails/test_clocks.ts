/**
 * Sandbox test clocks (docs/sandbox.md, "Test clocks"): a company's clocks, the subscriptions created on them, and the
 * advance that runs every step falling due up to the new time, in order, in one transaction, through the same
 * `payInvoice` and `cancelSubscription` the sandbox's own calls use (so the events are the real ones). The schedule
 * itself is pure and lives in clock_schedule.ts.
 */
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { notFound, unprocessable, validationFailed } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { isoUtc, isoUtcOrNull } from "../basics/time.ts";
import { dueSteps, type Interval, nextStepAt, nextStepOf, type ScheduledSubscription } from "./clock_schedule.ts";
import { cancelSubscription, createSubscription, payInvoice, type SubscriptionRow } from "./subscriptions.ts";

/** Clocks a company may have at once: each is a schedule an advance reads whole. */
export const MAX_CLOCKS_PER_COMPANY = 20;
/** Subscriptions on one clock: an advance locks and schedules them all. */
export const MAX_SUBSCRIPTIONS_PER_CLOCK = 10;
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

const scheduled = (s: ClockedSubscriptionRow): ScheduledSubscription => ({
  id: s.id,
  status: s.status,
  anchor: s.anchor,
  interval: s.billing_interval,
  cycles: s.cycles,
  paidCycles: s.paid_cycles,
  failAtCycle: s.fail_at_cycle,
});

/** A clock as the sandbox answers it: its time, when it next has something to do, and its subscriptions' schedules. */
export function presentTestClock(clock: TestClockRow, subscriptions: ClockedSubscriptionRow[]) {
  return {
    id: clock.id,
    name: clock.name,
    frozen_time: isoUtc(clock.frozen_time),
    next_step_at: isoUtcOrNull(nextStepAt(subscriptions.map(scheduled))),
    subscriptions: subscriptions.map((s) => ({
      id: s.id,
      status: s.status,
      interval: s.billing_interval,
      cycles: s.cycles,
      paid_cycles: s.paid_cycles,
      fail_at_cycle: s.fail_at_cycle,
      next_invoice_at: isoUtcOrNull(nextStepOf(scheduled(s))),
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

/** The subscriptions on a clock with their schedules, oldest first; locked when `forUpdate` (an advance). */
function subscriptionsOn(sql: SqlOrTransaction, companyId: string, clockId: string, forUpdate = false) {
  return sql<ClockedSubscriptionRow[]>`
    select s.*, t.billing_interval, t.anchor, t.fail_at_cycle
    from test_clock_subscriptions t join subscriptions s on s.company_id = t.company_id and s.id = t.subscription_id
    where t.company_id = ${companyId} and t.test_clock_id = ${clockId}
    order by s.id
    ${forUpdate ? sql`for update of s` : sql``}`;
}

/** One clock of the company with its subscriptions. */
export async function getTestClock(sql: SqlOrTransaction, companyId: string, id: string) {
  const [clock] = await sql<TestClockRow[]>`
    select * from test_clocks where company_id = ${companyId} and id = ${id}`;
  if (!clock) throw notFound();
  return { clock, subscriptions: await subscriptionsOn(sql, companyId, id) };
}

/** Every clock of the company (at most MAX_CLOCKS_PER_COMPANY), oldest first, with its subscriptions. */
export async function listTestClocks(sql: SqlOrTransaction, companyId: string) {
  const clocks = await sql<TestClockRow[]>`
    select * from test_clocks where company_id = ${companyId} order by id limit ${MAX_CLOCKS_PER_COMPANY}`;
  const subscriptions = clocks.length === 0 ? [] : await sql<(ClockedSubscriptionRow & { test_clock_id: string })[]>`
    select s.*, t.test_clock_id, t.billing_interval, t.anchor, t.fail_at_cycle
    from test_clock_subscriptions t join subscriptions s on s.company_id = t.company_id and s.id = t.subscription_id
    where t.company_id = ${companyId} and t.test_clock_id = any(${clocks.map((c) => c.id)}::uuid[])
    order by s.id`;
  return clocks.map((clock) => ({
    clock,
    subscriptions: subscriptions.filter((s) => s.test_clock_id === clock.id),
  }));
}

/**
 * Deletes the clock. Its subscriptions stay as they are, with their invoices and events, but leave the clock: nothing
 * charges them on time any more (pay_invoice and cancel still work).
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

/** What one step of an advance did, in the order the events were emitted. */
export type TakenStep = {
  at: string;
  subscription_id: string;
  cycle: number;
  outcome: "paid" | "failed";
  events: string[];
};

/**
 * Moves the clock to `to` and runs every step that falls due on the way, in time order, each through the sandbox's
 * own calls: a paid invoice is `payInvoice` (invoice_paid, then subscription_activated for the first,
 * subscription_completed for the last), an unpaid one cancels the subscription (subscription_canceled, by the
 * merchant, saying which cycle went unpaid). All in the caller's transaction: the clock moves with every event it
 * caused, or not at all. More than MAX_ADVANCE_STEPS steps is refused before anything runs.
 */
export async function advanceTestClock(tx: TransactionSql, companyId: string, id: string, to: Date) {
  const clock = await lockClock(tx, companyId, id);
  checkTime("frozen_time", to);
  if (to.getTime() <= clock.frozen_time.getTime()) {
    throw validationFailed({
      frozen_time: [`must be after the clock's frozen_time, ${isoUtc(clock.frozen_time)}`],
    }, 422);
  }
  const subscriptions = await subscriptionsOn(tx, companyId, id, true);
  const { steps, more } = dueSteps(subscriptions.map(scheduled), to, MAX_ADVANCE_STEPS);
  if (more) {
    const stop = steps[steps.length - 1].at;
    throw validationFailed({
      frozen_time: [
        `would take more than ${MAX_ADVANCE_STEPS} steps in one advance; advance to ${isoUtc(stop)} or earlier first`,
      ],
    }, 422);
  }
  const statusOf = new Map(subscriptions.map((s) => [s.id, s.status]));
  const taken: TakenStep[] = [];
  for (const step of steps) {
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
    taken.push({ at: isoUtc(step.at), subscription_id: subscriptionId, cycle, outcome: step.outcome, events });
  }
  const [moved] = await tx<TestClockRow[]>`
    update test_clocks set frozen_time = ${to}, updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  return { clock: moved, subscriptions: await subscriptionsOn(tx, companyId, id), steps: taken };
}
