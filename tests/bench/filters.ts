/**
 * `BENCH_ONLY=filters`: what an endpoint's payload filter costs (docs/webhooks.md, "Filters"). The evaluation of a
 * typical filter per event, in process; and `emitEvent`'s fan-out to five endpoints of a company, without filters and
 * with one on each, in alternating rounds so that a pause of the machine falls on both. Every fanned-out event passes
 * the filter, so both write the same records: the difference is what evaluating the filters costs. The evaluation is
 * also timed as it was before the budget (domain/webhooks/outbox/filter_budget.ts): the same filter through a plain
 * `@marcbachmann/cel-js` environment, uncounted, in alternating runs beside the counted one. And the typed check a
 * save adds (domain/webhooks/outbox/filter_types.ts): with the subscribed types' declarations kept, and with a set of
 * types seen for the first time, declared then. Then a company's filter time (filter_time.ts).
 */
import { Environment } from "@marcbachmann/cel-js";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { evaluateFilter, filterProblem, passesFilter } from "../../domain/webhooks/outbox/filters.ts";
import { EVENT_DATA_BOUND } from "../../domain/webhooks/outbox/filter_budget.ts";
import { filterTypeProblem } from "../../domain/webhooks/outbox/filter_types.ts";
import { EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { bankTransactionData } from "../support/rails.ts";
import { type Figures, round } from "./figures.ts";
import { filterTimeFigures } from "./filter_time.ts";

const TYPICAL = 'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0';
const EVALUATIONS = 200_000;
const ENDPOINTS = 5;
const ROUNDS = 10;
const EVENTS_PER_ROUND = 200;

/** A non-identified bank transaction's data, passing TYPICAL or not. */
const eventData = (passes: boolean) => bankTransactionData(passes ? "1500.00" : "80.10", "BRL");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** µs per call of `f` over `n` calls, after a warm-up. */
function microsPerCall(n: number, f: (i: number) => unknown): number {
  for (let i = 0; i < 10_000; i++) f(i);
  const start = performance.now();
  for (let i = 0; i < n; i++) f(i);
  return ((performance.now() - start) * 1000) / n;
}

/**
 * The longest of the accepted filters that do the most work, each on an event as large as the estimate at save assumes
 * (EVENT_DATA_BOUND characters in one list): the median of 20 evaluations each, after a warm-up, without the time
 * budget, so that what is measured is what the budget's MAX_EVAL_MS must cover.
 */
function worstEvaluationMs(): number {
  const items = [];
  while (JSON.stringify(items).length < EVENT_DATA_BOUND - 40) items.push({ a: items.length % 7, c: "BRL" });
  const data = JSON.parse(JSON.stringify({ items, text: "x".repeat(EVENT_DATA_BOUND - 20) }));
  const heaviest = [
    'data.items.exists(i, i.a > 100 && i.c == "MXN")',
    'data.items.map(i, i.c).filter(c, c != "BRL").size() == 0',
    'data.text.upperAscii().contains("Y") || data.text + data.text == "x"',
  ];
  return Math.max(...heaviest.map((text) => {
    if (filterProblem(text) !== null) throw new Error(`${text} is refused at save: the figure measures nothing`);
    const times = Array.from({ length: 22 }, () => {
      const start = performance.now();
      const { error } = evaluateFilter(text, "identified", data, { maxMs: Infinity });
      if (error !== null) throw new Error(`${text}: ${error}`);
      return performance.now() - start;
    });
    return median(times.slice(2));
  }));
}

export async function benchFilters(): Promise<Figures> {
  // the events as fan-out sees them: made beforehand, so that the loop times the evaluation alone
  const events = Array.from({ length: 1000 }, (_, i) => JSON.parse(JSON.stringify(eventData(i % 2 === 1))));
  let passed = 0;
  const counted = (i: number) => {
    if (passesFilter(TYPICAL, "non_identified_bank_transaction", events[i % events.length])) passed++;
  };
  // the evaluation without the budget: what filter_eval_us was before it
  const plainEnv = new Environment({ limits: { maxAstNodes: 200, maxDepth: 32 } })
    .registerVariable("event_type", "string")
    .registerVariable("data", "map<string, dyn>");
  // as passesFilter was: the compiled filter from a cache by text (the least recently used re-inserted), evaluated
  const before = new Map([[TYPICAL, plainEnv.parse(TYPICAL)]]);
  const uncounted = (i: number) => {
    try {
      const filter = before.get(TYPICAL)!;
      before.delete(TYPICAL);
      before.set(TYPICAL, filter);
      if (filter({ event_type: "non_identified_bank_transaction", data: events[i % events.length] }) === true) passed++;
    } catch { /* as passesFilter: no delivery */ }
  };
  // alternating runs, the median of each, so that a pause of the machine falls on both
  const runs = { counted: [] as number[], uncounted: [] as number[] };
  for (let r = 0; r < 6; r++) {
    runs.counted.push(microsPerCall(EVALUATIONS / 4, counted));
    runs.uncounted.push(microsPerCall(EVALUATIONS / 4, uncounted));
  }
  const evalUs = median(runs.counted);
  const uncountedUs = median(runs.uncounted);
  if (passed === 0) throw new Error("the typical filter passed no event: the bench measures nothing");
  // what emitEvent adds in process for an event and 5 filtered endpoints: the data's JSON round trip, 5 evaluations
  const fanoutCpuUs = microsPerCall(20_000, () => {
    const seen = JSON.parse(JSON.stringify(eventData(true)));
    for (let e = 0; e < ENDPOINTS; e++) passesFilter(TYPICAL, "non_identified_bank_transaction", seen);
  });
  const checkUs = microsPerCall(2_000, (i) => filterProblem(`${TYPICAL}${" ".repeat(i % 100)}`));
  const typeCheckUs = typeCheckMicros();
  const worstMs = worstEvaluationMs();

  const ctx = await setup("bench_filters");
  try {
    const plain = await newCompany(ctx);
    const filtered = await newCompany(ctx);
    for (let i = 0; i < ENDPOINTS; i++) {
      for (const [company, filter] of [[plain, null], [filtered, TYPICAL]] as const) {
        const res = await company.post("/api/v2/notifications/endpoints", { url: `http://127.0.0.1:9/e${i}`, filter });
        if (res.status !== 201) throw new Error(`endpoint not created: ${JSON.stringify(res.body)}`);
      }
    }
    const perEvent = { plain: [] as number[], filtered: [] as number[] };
    const emitRound = async (companyId: string) => {
      const start = performance.now();
      for (let i = 0; i < EVENTS_PER_ROUND; i++) {
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "non_identified_bank_transaction", eventData(true)));
      }
      return performance.now() - start;
    };
    await emitRound(plain.id); // warm-up: plans, connections
    await emitRound(filtered.id);
    // ABBA: neither side always runs second, after the other's records
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? ["filtered", "plain"] as const : ["plain", "filtered"] as const;
      for (const side of order) {
        perEvent[side].push((await emitRound(side === "plain" ? plain.id : filtered.id)) * 1000 / EVENTS_PER_ROUND);
      }
    }
    const events = ROUNDS * EVENTS_PER_ROUND;
    const [records] = await ctx.sql<{ plain: number; filtered: number }[]>`
      select count(*) filter (where company_id = ${plain.id})::int as plain,
             count(*) filter (where company_id = ${filtered.id})::int as filtered
      from webhook_deliveries`;
    const plainUs = median(perEvent.plain);
    const filteredUs = median(perEvent.filtered);
    console.log(
      `filters: ${evalUs.toFixed(2)} µs per evaluation (${uncountedUs.toFixed(2)} µs without the budget), ` +
        `${checkUs.toFixed(1)} µs per check, ${typeCheckUs.kept.toFixed(1)} µs per typed check ` +
        `(${typeCheckUs.first.toFixed(0)} µs for types seen the first time), ` +
        `${fanoutCpuUs.toFixed(1)} µs of fan-out work per event for ${ENDPOINTS} filters; emitEvent to ` +
        `${ENDPOINTS} endpoints (median of ${ROUNDS} rounds) ${plainUs.toFixed(0)} µs without filters, ` +
        `${filteredUs.toFixed(0)} µs with ` +
        `(records ${records.plain} and ${records.filtered} for ${events + EVENTS_PER_ROUND} events each)`,
    );
    const filterTime = await filterTimeFigures(ctx);
    return {
      filter_eval_us: round(evalUs, 2),
      filter_eval_without_budget_us: round(uncountedUs, 2),
      filter_budget_overhead_pct: round((100 * (evalUs - uncountedUs)) / uncountedUs),
      filter_evals_per_s: round(1e6 / evalUs, 0),
      filter_check_us: round(checkUs, 1),
      filter_type_check_us: round(typeCheckUs.kept, 1),
      filter_type_check_new_types_us: round(typeCheckUs.first, 0),
      filter_worst_eval_ms: round(worstMs, 2),
      fanout_5_filters_cpu_us: round(fanoutCpuUs, 1),
      fanout_5_endpoints_no_filter_us: round(plainUs, 0),
      fanout_5_endpoints_filtered_us: round(filteredUs, 0),
      fanout_filter_overhead_pct: round((100 * (filteredUs - plainUs)) / plainUs),
      ...filterTime,
    };
  } finally {
    await ctx.close();
  }
}

/**
 * µs per typed check of TYPICAL at save: against one type whose declarations are kept, and against sets of types not
 * seen before (each a different subset of the catalogue with the bank transaction in it), declared at that check.
 */
function typeCheckMicros(): { kept: number; first: number } {
  const bank = ["non_identified_bank_transaction"];
  const kept = microsPerCall(2_000, (i) => {
    if (filterTypeProblem(`${TYPICAL}${" ".repeat(i % 100)}`, bank) !== null) throw new Error("TYPICAL refused");
  });
  const sets = Array.from({ length: 100 }, (_, i) => [...bank, ...EVENT_TYPES.filter((_, b) => ((i + 1) >> b) & 1)]);
  const start = performance.now();
  for (const types of sets) filterTypeProblem(TYPICAL, types);
  return { kept, first: ((performance.now() - start) * 1000) / sets.length };
}
