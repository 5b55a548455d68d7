/**
 * The schedule of a sandbox test clock (docs/sandbox.md, "Test clocks"), pure: when each cycle of a subscription on a
 * clock falls due and when a PIX charge on it expires, which steps an advance to a given time takes and in which order,
 * and whether that is more than one advance may take. Kept apart from test_clocks.ts (the rows and the SQL) so the unit tests run it without a database.
 */

export const INTERVALS = ["day", "week", "month", "year"] as const;
export type Interval = typeof INTERVALS[number];

/** What the schedule needs of a subscription on a clock. */
export type ScheduledSubscription = {
  id: string;
  status: "pending" | "active" | "canceled" | "completed";
  /** The clock's frozen_time when the subscription was created on it: cycle n falls due n intervals after it. */
  anchor: Date;
  interval: Interval;
  cycles: number;
  paidCycles: number;
  /** The sandbox outcome: the invoice of this cycle is not paid (null: every invoice is paid). */
  failAtCycle: number | null;
};

/** What the schedule needs of a pending PIX charge on a clock: it expires unpaid at `expiresAt`. */
export type ScheduledCharge = {
  id: string;
  status: "pending" | "paid" | "refunded" | "expired";
  expiresAt: Date;
};

/** Everything on one clock that time moves. */
export type Schedule = {
  subscriptions: readonly ScheduledSubscription[];
  charges: readonly ScheduledCharge[];
};

/**
 * One thing that happens at one instant of the clock: an invoice of a cycle is paid, or is not; a PIX charge expires
 * unpaid.
 */
export type Step =
  | { kind: "invoice"; at: Date; subscriptionId: string; cycle: number; outcome: "paid" | "failed" }
  | { kind: "pix_charge_expiry"; at: Date; chargeId: string; outcome: "expired" };

const DAY_MS = 86_400_000;

/**
 * `anchor` plus `n` intervals, in UTC. Months and years keep the anchor's day of the month, or take the month's last
 * day when it is shorter (31 January + 1 month = 28 or 29 February; + 2 months = 31 March), as a billing date does.
 */
export function addIntervals(anchor: Date, interval: Interval, n: number): Date {
  if (interval === "day") return new Date(anchor.getTime() + n * DAY_MS);
  if (interval === "week") return new Date(anchor.getTime() + 7 * n * DAY_MS);
  const months = interval === "month" ? n : 12 * n;
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const day = Math.min(anchor.getUTCDate(), lastDay);
  const at = new Date(anchor.getTime());
  at.setUTCFullYear(year, month, day);
  return at;
}

/** The cycle a subscription charges next, or null when nothing is left to charge (ended, or every cycle paid). */
function nextCycle(s: ScheduledSubscription): number | null {
  if (s.status === "canceled" || s.status === "completed") return null;
  const cycle = s.paidCycles + 1;
  return cycle <= s.cycles ? cycle : null;
}

/**
 * The steps an advance of the clock to `until` takes, in the order they happen: by time, then by what they happen to
 * (ids are time-ordered, so the older subscription or charge first), then by cycle. A subscription's steps stop at its
 * failing cycle (it is canceled there) and at its last; a charge has one step, its expiry, while it is pending. At most
 * `limit` steps: `more` is true when the advance would take more, and then `steps` is not to be run. No more than
 * `limit + 1` steps of any one subscription are computed, so the work is bounded by the limit and the number of
 * things on the clock, whatever `until` is.
 */
export function dueSteps(schedule: Schedule, until: Date, limit: number): { steps: Step[]; more: boolean } {
  const steps: Step[] = [];
  for (const s of schedule.subscriptions) {
    const first = nextCycle(s);
    if (first === null) continue;
    for (let cycle = first, taken = 0; cycle <= s.cycles && taken <= limit; cycle++, taken++) {
      const at = addIntervals(s.anchor, s.interval, cycle);
      if (at.getTime() > until.getTime()) break;
      const failed = s.failAtCycle === cycle;
      steps.push({ kind: "invoice", at, subscriptionId: s.id, cycle, outcome: failed ? "failed" : "paid" });
      if (failed) break;
    }
  }
  for (const c of schedule.charges) {
    if (c.status !== "pending" || c.expiresAt.getTime() > until.getTime()) continue;
    steps.push({ kind: "pix_charge_expiry", at: c.expiresAt, chargeId: c.id, outcome: "expired" });
  }
  steps.sort((a, b) => a.at.getTime() - b.at.getTime() || compare(ownerOf(a), ownerOf(b)) || cycleOf(a) - cycleOf(b));
  return steps.length > limit ? { steps: steps.slice(0, limit), more: true } : { steps, more: false };
}

const ownerOf = (s: Step) => s.kind === "invoice" ? s.subscriptionId : s.chargeId;
const cycleOf = (s: Step) => s.kind === "invoice" ? s.cycle : 0;
const compare = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0;

/** When a subscription's next step happens, or null when it has none left. */
export function nextStepOf(s: ScheduledSubscription): Date | null {
  const cycle = nextCycle(s);
  return cycle === null ? null : addIntervals(s.anchor, s.interval, cycle);
}

/** The earliest next step of anything on the clock, or null: where an advance must go to see something happen. */
export function nextStepAt(schedule: Schedule): Date | null {
  const times = [
    ...schedule.subscriptions.map(nextStepOf),
    ...schedule.charges.map((c) => c.status === "pending" ? c.expiresAt : null),
  ].filter((d): d is Date => d !== null).map((d) => d.getTime());
  return times.length ? new Date(Math.min(...times)) : null;
}
