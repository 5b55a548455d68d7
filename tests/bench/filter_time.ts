/**
 * `BENCH_ONLY=filters`, a company's filter time (docs/webhooks.md, "What a company's filters may spend";
 * domain/webhooks/outbox/filter_time.ts): what the token bucket's bookkeeping costs the pay-in's fan-out and a fan-out
 * to 50 filtered endpoints, the bucket on (the default settings) against off (FILTER_TIME_MS_PER_SECOND=0), event by
 * event; and the filter time a company with 50 costly filters actually gets while it emits events as fast as it can:
 * at its budget, with a bucket that never binds (the 5 ms slice of one event alone), and as b06cba6 let it (every
 * filter at every event, 50 ms an event at most). docs/performance.md, "Issue 43: what the filter time costs", reads
 * the figures. Its own file: filters.ts measures one filter; this measures a company's filters over time, and switches
 * the process's bucket on and off.
 */
import process from "node:process";
import { emitEvent, type Subscriber, subscribersOf } from "../../domain/webhooks/outbox/events.ts";
import { decideFilters, evaluateFilter } from "../../domain/webhooks/outbox/filters.ts";
import {
  chargeFilterTime,
  configureFilterTime,
  DEFAULT_FILTER_TIME,
  filterTimeWait,
} from "../../domain/webhooks/outbox/filter_time.ts";
import { type Company, newCompany, type TestContext } from "../support/helpers.ts";
import { bankTransactionData } from "../support/rails.ts";
import { type Figures, round } from "./figures.ts";

/** A filter an integrator might put on the pay-in's event (`identified`, `{transaction_id}`): it passes. */
const ON_PAYIN = 'event_type == "identified" && data.transaction_id != ""';
/** The typical filter of filters.ts, on a bank transaction's data: it passes. */
const TYPICAL = 'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0';
/**
 * A filter a save accepts that takes a fraction of a millisecond an evaluation whatever the event (a 2,048-character
 * string split and searched; `filter_time_heavy_eval_ms`) and never gives true: tests/webhooks/filter_time_test.ts's
 * costly filter.
 */
const HEAVY = 'cel.bind(a, "0123456789abcdef", cel.bind(b, a+a+a+a+a+a+a+a, cel.bind(c, b+b+b+b+b+b+b+b, ' +
  'cel.bind(d, c+c, d.split("").exists(x, x == "#")))))';
const FAN_OUT = 50;
const PAYIN_PAIRS = 1500;
const FAN_OUT_PAIRS = 400;
/** How long the company with the costly filters emits, each of the three ways (figures.ts's allowance assumes it). */
const COMPANY_SECONDS = 3;
/** A bucket that never binds: the bookkeeping of the default one, without its refusals. */
const NEVER_BINDS = { perSecondMs: 1e9, burstMs: 1e9 };
const OFF = { perSecondMs: 0, burstMs: DEFAULT_FILTER_TIME.burstMs };
/** b06cba6's bound on one event's filters together (filters.ts then: MAX_EVENT_FILTERS_MS). */
const BEFORE_EVENT_MS = 50;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** A bank transaction's event data that TYPICAL passes (filters.ts's). */
const bankData = () => bankTransactionData("1500.00", "BRL");

/**
 * b06cba6's decision at the fan-out, as its filters.ts made it: every filter evaluated in turn, charged to no one,
 * until the event's filters had taken 50 ms together (the rest were then counted as errors, not delivered); with the
 * time its evaluations took.
 */
function decideAsBefore(endpoints: Subscriber[], type: string, data: Record<string, unknown>) {
  const passing: Subscriber[] = [];
  let ms = 0;
  const deadline = performance.now() + BEFORE_EVENT_MS;
  for (const e of endpoints) {
    if (e.filter === null) {
      passing.push(e);
      continue;
    }
    if (performance.now() > deadline) continue;
    const start = performance.now();
    const { passes } = evaluateFilter(e.filter, type, data);
    ms += performance.now() - start;
    if (passes) passing.push(e);
  }
  return { passing, ms };
}

/** A company of `count` endpoints on loopback (nothing delivers: no worker runs), each with `filter`. */
async function companyWith(ctx: TestContext, count: number, filter: string): Promise<Company> {
  const company = await newCompany(ctx);
  for (let i = 0; i < count; i++) {
    const res = await company.post("/api/v2/notifications/endpoints", { url: `http://127.0.0.1:9/e${i}`, filter });
    if (res.status !== 201) throw new Error(`endpoint not created: ${JSON.stringify(res.body)}`);
  }
  return company;
}

/** The company's delivery records, deferred ones counted apart (written while its filter time was spent). */
async function recordsOf(ctx: TestContext, company: Company) {
  const [row] = await ctx.sql<{ records: number; deferred: number }[]>`
    select count(*)::int as records,
      count(*) filter (
        where exists (select 1 from webhook_filter_deferrals f where f.delivery_id = d.id)
      )::int as deferred
    from webhook_deliveries d where company_id = ${company.id}`;
  return row;
}

/**
 * `emitOne` with the bucket on (its default settings) and off, alternating event by event (on, off, off, on, ...),
 * `pairs` of each after a warm-up: the medians of each side's wall time and of this process's CPU time (user and
 * system, every thread) per event, and the median of the differences within each pair, with their quartiles (the
 * machine's noise). Event by event and medians, so that the collector's pauses and the machine's, which come at their
 * own pace, fall on both sides alike and weigh on neither (rounds of one side each were seen to catch them on one
 * side more). The bucket is left at its default.
 */
async function onAgainstOff(pairs: number, emitOne: () => Promise<unknown>) {
  type Side = { wallUs: number[]; cpuUs: number[] };
  const sides: Record<"on" | "off", Side> = { on: { wallUs: [], cpuUs: [] }, off: { wallUs: [], cpuUs: [] } };
  const once = async (side: "on" | "off") => {
    configureFilterTime(side === "on" ? DEFAULT_FILTER_TIME : OFF);
    const cpu = process.cpuUsage();
    const start = performance.now();
    await emitOne();
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    return { wallUs: wall * 1000, cpuUs: used.user + used.system };
  };
  try {
    for (let i = 0; i < 100; i++) await once(i % 2 ? "off" : "on"); // warm-up: plans, connections, the filter
    for (let i = 0; i < pairs; i++) {
      for (const side of i % 2 ? ["off", "on"] as const : ["on", "off"] as const) {
        const { wallUs, cpuUs } = await once(side);
        sides[side].wallUs.push(wallUs);
        sides[side].cpuUs.push(cpuUs);
      }
    }
  } finally {
    configureFilterTime(DEFAULT_FILTER_TIME);
  }
  const differences = (of: keyof Side) => sides.on[of].map((on, i) => on - sides.off[of][i]).sort((a, b) => a - b);
  const cpuDifferences = differences("cpuUs");
  const at = (share: number) => cpuDifferences[Math.floor(share * cpuDifferences.length)];
  return {
    /** The pairs' CPU differences at their first and third quartiles: the noise around their median. */
    spread: [at(0.25), at(0.75)],
    onCpu: median(sides.on.cpuUs),
    offCpu: median(sides.off.cpuUs),
    cpuDiff: median(cpuDifferences),
    onWall: median(sides.on.wallUs),
    offWall: median(sides.off.wallUs),
    wallDiff: median(differences("wallUs")),
  };
}

/**
 * µs per call of `decideFilters` over 50 endpoints with the typical filter, in process: the bucket on (with a rate
 * that never binds, so every filter is evaluated) and off, and b06cba6's loop, in runs that take turns being first,
 * medians.
 */
function decideMicros(companyId: string) {
  const endpoints = Array.from({ length: FAN_OUT }, () => ({ id: crypto.randomUUID(), filter: TYPICAL }));
  const events = Array.from({ length: 100 }, () => JSON.parse(JSON.stringify(bankData())));
  const type = "non_identified_bank_transaction";
  const calls = 1000;
  const time = (f: (i: number) => unknown) => {
    for (let i = 0; i < 200; i++) f(i);
    const start = performance.now();
    for (let i = 0; i < calls; i++) f(i);
    return ((performance.now() - start) * 1000) / calls;
  };
  // a pause of the machine past the event's 5 ms slice defers the rest of that call: counted, so it is seen
  let cut = 0;
  const decide = (i: number) => {
    if (decideFilters(companyId, endpoints, type, events[i % events.length]).passing.length !== FAN_OUT) cut++;
  };
  const runs = { on: [] as number[], off: [] as number[], before: [] as number[] };
  const sides = {
    on: () => (configureFilterTime(NEVER_BINDS), time(decide)),
    off: () => (configureFilterTime(OFF), time(decide)),
    before: () => time((i) => decideAsBefore(endpoints, type, events[i % events.length])),
  };
  const order = ["on", "off", "before"] as const;
  try {
    // each side first, second and third in turn, so that neither a warming nor a pause favours one
    for (let r = 0; r < 9; r++) {
      for (let k = 0; k < order.length; k++) {
        const side = order[(r + k) % order.length];
        runs[side].push(sides[side]());
      }
    }
  } finally {
    configureFilterTime(DEFAULT_FILTER_TIME);
  }
  return { on: median(runs.on), off: median(runs.off), before: median(runs.before), cut };
}

/**
 * A bucket that never binds in a run and whose charges can be read back: it refills by almost nothing and holds more
 * than a run can spend, so the fan-out evaluates as with the bucket off (the 5 ms slice of one event alone).
 */
const UNBOUND = { perSecondMs: 0.001, burstMs: 1e6 };

/**
 * What the company's bucket was charged since `since` (a `performance.now()`), read through the bucket's own
 * functions: a charge of more than it can hold, then the wait until it holds time again, says its level before that
 * charge (to `perSecondMs` / 1000 ms). Holds while the bucket was not full at any time in between (it starts full and
 * the first event drains it). Leaves the bucket spent: each run has a company of its own.
 */
function chargedSince(companyId: string, settings: { perSecondMs: number; burstMs: number }, since: number) {
  const elapsed = performance.now() - since;
  const push = 2 * settings.burstMs;
  chargeFilterTime(companyId, push);
  const level = push - (filterTimeWait(companyId) * settings.perSecondMs) / 1000;
  return settings.burstMs + (elapsed * settings.perSecondMs) / 1000 - level;
}

/**
 * A company with HEAVY on 50 endpoints emitting `identified` events one after another for COMPANY_SECONDS, one
 * transaction each: with its bucket at the default settings ("budget"), with a bucket that never binds ("unbound"),
 * or deciding as b06cba6 did ("before"). Its filters' time is what its bucket was charged (each evaluation timed by
 * `charged`, filter_time.ts), or for "before" the evaluations timed here; what its fan-outs held the thread for
 * (emitEvent's synchronous part: the filters' decision and the statements built) is timed apart, as a check that no
 * part of the evaluation goes uncharged.
 */
async function companyRun(ctx: TestContext, how: "budget" | "unbound" | "before") {
  const company = await companyWith(ctx, FAN_OUT, HEAVY);
  const settings = how === "unbound" ? UNBOUND : DEFAULT_FILTER_TIME; // "before" charges nothing
  configureFilterTime(settings);
  let events = 0;
  let held = 0;
  let timedBefore = 0;
  const start = performance.now();
  let charged: number;
  try {
    while (performance.now() - start < COMPANY_SECONDS * 1000) {
      await ctx.sql.begin(async (tx) => {
        const data = { transaction_id: crypto.randomUUID() };
        const subscribers = await subscribersOf(tx, company.id, "identified");
        const from = performance.now();
        let emitted: Promise<unknown>;
        if (how === "before") {
          const decided = decideAsBefore(subscribers, "identified", JSON.parse(JSON.stringify(data)));
          timedBefore += decided.ms;
          // HEAVY gives true to no event: the event alone is written, as b06cba6 wrote it
          if (decided.passing.length > 0) throw new Error("the costly filter passed an event");
          emitted = emitEvent(tx, company.id, "identified", data, { subscribers: [] });
        } else emitted = emitEvent(tx, company.id, "identified", data, { subscribers });
        held += performance.now() - from;
        await emitted;
      });
      events++;
    }
    charged = how === "before" ? timedBefore : chargedSince(company.id, settings, start);
  } finally {
    configureFilterTime(DEFAULT_FILTER_TIME);
  }
  const seconds = (performance.now() - start) / 1000;
  const { records, deferred } = await recordsOf(ctx, company);
  if (records !== deferred) throw new Error("the costly filter passed an event");
  return { seconds, events, held, deferred, charged };
}

/** The median time of one HEAVY evaluation (ms), after a warm-up. */
function heavyEvaluationMs(): number {
  const data = { transaction_id: crypto.randomUUID() };
  const times = Array.from({ length: 45 }, () => {
    const start = performance.now();
    const { passes, error } = evaluateFilter(HEAVY, "identified", data);
    if (passes || error !== null) throw new Error(`the costly filter: ${error ?? "passed"}`);
    return performance.now() - start;
  });
  return median(times.slice(5));
}

export async function filterTimeFigures(ctx: TestContext): Promise<Figures> {
  // the pay-in's fan-out: its event to the company's one endpoint, whose filter passes
  const payer = await companyWith(ctx, 1, ON_PAYIN);
  const payin = await onAgainstOff(
    PAYIN_PAIRS,
    () => ctx.sql.begin((tx) => emitEvent(tx, payer.id, "identified", { transaction_id: crypto.randomUUID() })),
  );
  // one filtered fan-out: a bank transaction's event to 50 endpoints, every filter passes
  const fanner = await companyWith(ctx, FAN_OUT, TYPICAL);
  const fanout = await onAgainstOff(
    FAN_OUT_PAIRS,
    () => ctx.sql.begin((tx) => emitEvent(tx, fanner.id, "non_identified_bank_transaction", bankData())),
  );
  const payinRecords = await recordsOf(ctx, payer);
  const fanoutRecords = await recordsOf(ctx, fanner);
  const decide = decideMicros(crypto.randomUUID());

  // a company's filter time per second: with its budget, with a bucket that never binds, as b06cba6
  const evalMs = heavyEvaluationMs();
  const budget = await companyRun(ctx, "budget");
  const unbound = await companyRun(ctx, "unbound");
  const before = await companyRun(ctx, "before");
  const msPerS = (r: typeof budget) => r.charged / r.seconds;
  const heldMsPerS = (r: typeof budget) => r.held / r.seconds;
  const allowed = DEFAULT_FILTER_TIME.perSecondMs + DEFAULT_FILTER_TIME.burstMs / budget.seconds;

  const line = (name: string, r: typeof budget) =>
    `${name}: ${r.events} events in ${r.seconds.toFixed(1)} s, filters ${msPerS(r).toFixed(0)} ms/s, ` +
    `fan-outs held the thread ${heldMsPerS(r).toFixed(0)} ms/s, ${r.deferred} records deferred`;
  console.log(
    `filter time: pay-in (1 endpoint) ${payin.onCpu.toFixed(0)} µs of CPU per event with the bucket, ` +
      `${payin.offCpu.toFixed(0)} without (wall ${payin.onWall.toFixed(0)} and ${payin.offWall.toFixed(0)} µs; ` +
      `the pairs' CPU differences' quartiles ${payin.spread.map((d) => d.toFixed(0)).join(" to ")} µs); ` +
      `${FAN_OUT} endpoints ${fanout.onCpu.toFixed(0)} and ${fanout.offCpu.toFixed(0)} µs of CPU ` +
      `(wall ${fanout.onWall.toFixed(0)} and ${fanout.offWall.toFixed(0)} µs; differences' quartiles ` +
      `${fanout.spread.map((d) => d.toFixed(0)).join(" to ")} µs); records deferred there: ` +
      `${payinRecords.deferred} and ${fanoutRecords.deferred}; deciding ${FAN_OUT} typical filters in process ` +
      `${decide.on.toFixed(1)} µs with the bucket, ${decide.off.toFixed(1)} without, ${decide.before.toFixed(1)} ` +
      `as b06cba6 (${decide.cut} calls cut by the 5 ms slice)`,
  );
  console.log(
    `filter time: the costly filter ${evalMs.toFixed(2)} ms an evaluation, on ${FAN_OUT} endpoints; budget ` +
      `${DEFAULT_FILTER_TIME.perSecondMs} ms/s, burst ${DEFAULT_FILTER_TIME.burstMs} ms: ${allowed.toFixed(0)} ms/s ` +
      `over this run\n  ${line("with the budget", budget)}\n  ${line("a bucket that never binds", unbound)}\n  ` +
      `${line("as b06cba6 (50 ms an event)", before)}`,
  );
  return {
    filter_time_payin_us: round(payin.cpuDiff, 1),
    filter_time_payin_on_us: round(payin.onCpu, 0),
    filter_time_payin_off_us: round(payin.offCpu, 0),
    filter_time_payin_wall_us: round(payin.wallDiff, 0),
    filter_time_fanout_us: round(fanout.cpuDiff, 1),
    filter_time_fanout_on_us: round(fanout.onCpu, 0),
    filter_time_fanout_off_us: round(fanout.offCpu, 0),
    filter_time_fanout_wall_us: round(fanout.wallDiff, 0),
    filter_time_fanout_deferred: payinRecords.deferred + fanoutRecords.deferred,
    filter_time_decide_50_us: round(decide.on, 1),
    filter_time_decide_50_off_us: round(decide.off, 1),
    filter_time_decide_50_before_us: round(decide.before, 1),
    filter_time_heavy_eval_ms: round(evalMs, 2),
    filter_time_company_ms_per_s: round(msPerS(budget), 0),
    filter_time_company_allowed_ms_per_s: round(allowed, 0),
    filter_time_company_held_ms_per_s: round(heldMsPerS(budget), 0),
    filter_time_company_events: budget.events,
    filter_time_company_deferred: budget.deferred,
    filter_time_company_unbound_ms_per_s: round(msPerS(unbound), 0),
    filter_time_company_unbound_held_ms_per_s: round(heldMsPerS(unbound), 0),
    filter_time_company_unbound_deferred: unbound.deferred,
    filter_time_company_before_ms_per_s: round(msPerS(before), 0),
    filter_time_company_before_held_ms_per_s: round(heldMsPerS(before), 0),
  };
}
