/**
 * Payload filters: an endpoint's CEL expression over an event, evaluated once per event and endpoint at fan-out
 * (`emitEvent`, events.ts); docs/webhooks.md, "Filters", is the integrator's view.
 *
 * CEL (cel.dev) because it is made for this: no loops but the macros over a list the event itself carries, no
 * recursion, no I/O, no clock, no variable but the two given here. With no list macro nested in another (refused
 * below), the number of operations is bounded by the expression's size times the event's; the size of what they build
 * is not (`a + a` doubles a value), which is what filter_budget.ts bounds, when the filter is saved and again at every
 * evaluation. `@marcbachmann/cel-js` evaluates it (zero dependencies, a type checker that names positions, about 1 µs
 * per evaluation of a typical filter here; the bench's `filter_eval_us`). Its `matches()` runs on JavaScript's
 * backtracking RegExp (a pattern can take exponential time): filters may not call it.
 */

import { Environment, EvaluationError, ParseError } from "@marcbachmann/cel-js";
import type { ErrorBag } from "../../basics/errors.ts";
import { metrics } from "../../infra/metrics.ts";
import {
  assignRoles,
  estimateFilter,
  FilterBudgetExceeded,
  Meter,
  metered,
  meterEvaluations,
} from "./filter_budget.ts";
import { charged, FILTER_SLICE_MS, hasFilterTime } from "./filter_time.ts";

/** Longest filter accepted, in characters; with MAX_AST_NODES, what bounds an evaluation's work. */
export const MAX_FILTER_LENGTH = 1000;
const MAX_AST_NODES = 200;
const MAX_DEPTH = 32;
/** Compiled filters kept, by text: more distinct filters than this only costs a parse (about 4 µs) again. */
export const FILTER_CACHE_SIZE = 1000;

/**
 * `event_type`, not `type`: in CEL `type` is the name of the type of types, and no variable may take it.
 * `data` is the event's data as the snapshot body carries it, whatever the endpoint's body settings.
 */
const ENV = new Environment({ limits: { maxAstNodes: MAX_AST_NODES, maxDepth: MAX_DEPTH } })
  .registerVariable("event_type", "string")
  .registerVariable("data", "map<string, dyn>");
// every evaluation through ENV is counted against the budget (filter_budget.ts)
meterEvaluations(ENV);

/** Functions a filter may not call, and why (the message the integrator reads). */
const REFUSED_CALLS: Record<string, string> = {
  matches: "matches() is not allowed in a filter (its regular expressions can take unbounded time); use " +
    "startsWith(), endsWith() or contains()",
};

type Evaluate = (vars: { event_type: string; data: Record<string, unknown> }) => unknown;
/** A filter as evaluations use it: the compiled expression and its nodes' roles, or why it is not evaluated. */
type Compiled = { evaluate: Evaluate; problem: null } | { problem: string };
type AstNode = { op: string; args: unknown; start: number };

const cache = new Map<string, Compiled>();

/** "line L, column C" of a character offset, both from 1, as an editor shows them. */
export function position(text: string, offset: number): string {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const line = before.split("\n").length;
  return `line ${line}, column ${offset - before.lastIndexOf("\n")}`;
}

/** A library error's first line (the rest is a source excerpt with a caret, which the position replaces). */
const summaryOf = (err: Error) => err.message.split("\n")[0];

/** The macros that iterate over a list; one inside another's body multiplies the lists' sizes. */
const LIST_MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);
const NESTED_MACRO = "a list macro (all, exists, exists_one, map, filter) inside another is not allowed (its work " +
  "grows with the product of the lists)";

/**
 * The first call a filter may not make, where it starts: a refused function, or a list macro in the body of another
 * (`inMacro`), so that an evaluation's work stays linear in the event's size.
 */
function refusedCall(node: unknown, inMacro = false): { at: number; message: string } | null {
  if (Array.isArray(node)) {
    for (const n of node) {
      const found = refusedCall(n, inMacro);
      if (found) return found;
    }
    return null;
  }
  if (!node || typeof node !== "object" || !("op" in node)) return null;
  const { op, args, start } = node as AstNode;
  if ((op === "call" || op === "rcall") && Array.isArray(args) && typeof args[0] === "string") {
    const message = REFUSED_CALLS[args[0]];
    if (message) return { at: start, message };
    if (op === "rcall" && LIST_MACROS.has(args[0])) {
      if (inMacro) return { at: start, message: NESTED_MACRO };
      // the receiver is evaluated once (chaining is linear); the body once per element
      return refusedCall(args[1], inMacro) ?? refusedCall(args[2], true);
    }
  }
  return refusedCall(args, inMacro);
}

/**
 * Why `text` cannot be a filter, with the position of the fault ("line 1, column 26: Unexpected token: EOF"), or
 * null when it can. A filter must parse, type-check against `event_type` and `data`, give a bool, and stay within
 * the limits above.
 */
export function filterProblem(text: string): string | null {
  if (text.trim() === "") return "must not be blank (null removes the filter)";
  if (text.length > MAX_FILTER_LENGTH) return `is too long (maximum is ${MAX_FILTER_LENGTH} characters)`;
  let parsed: { ast: unknown };
  try {
    parsed = ENV.parse(text) as unknown as { ast: unknown };
  } catch (err) {
    if (err instanceof ParseError || err instanceof EvaluationError) {
      const at = (err as { range?: { start: number } }).range?.start ?? 0;
      return `${position(text, at)}: ${summaryOf(err)}`;
    }
    throw err;
  }
  const refused = refusedCall(parsed.ast);
  if (refused) return `${position(text, refused.at)}: ${refused.message}`;
  const checked = ENV.check(text);
  if (!checked.valid) {
    const err = checked.error as Error & { range?: { start: number } };
    return `${position(text, err.range?.start ?? 0)}: ${summaryOf(err)}`;
  }
  const type = String(checked.type);
  if (type !== "bool" && type !== "dyn") return `line 1, column 1: must give a bool (true delivers), not ${type}`;
  const { fault } = estimateFilter(parsed.ast);
  if (fault) return `${position(text, fault.at)}: ${fault.message}`;
  return null;
}

/** Adds the filter's problem to `errors` under `filter`; a string only (null clears, absent keeps). */
export function checkFilter(errors: ErrorBag, text: unknown) {
  if (typeof text !== "string") return;
  const problem = filterProblem(text);
  if (problem) errors.add("filter", problem);
}

/**
 * The compiled filter, from the cache or compiled now; the least recently used one goes when it is full. A filter that
 * today's rules refuse (stored before a rule was added, such as the budget) is never evaluated: its problem is its
 * error at every event, at no cost.
 */
function compiled(text: string): Compiled {
  const hit = cache.get(text);
  if (hit) {
    // re-inserted: a Map iterates in insertion order, so the first key is the least recently used
    cache.delete(text);
    cache.set(text, hit);
    return hit;
  }
  let entry: Compiled;
  try {
    const problem = filterProblem(text);
    if (problem !== null) entry = { problem: `not evaluated: ${problem}` };
    else {
      const evaluate = ENV.parse(text) as unknown as Evaluate & { ast: unknown };
      assignRoles(estimateFilter(evaluate.ast).roles);
      entry = { evaluate, problem: null };
    }
  } catch (err) {
    entry = { problem: `not evaluated: ${err instanceof Error ? summaryOf(err) : String(err)}` };
  }
  if (cache.size >= FILTER_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(text, entry);
  return entry;
}

/** What a filter made of an event: whether it delivers, or why it could not say (the message the endpoint shows). */
export type FilterOutcome = { passes: boolean; error: string | null };

/**
 * Evaluates a filter on an event within its budget (filter_budget.ts): passes only when the expression gives `true`.
 * An error (a key the event lacks, a value of another type, the budget, a filter today's rules refuse) or any other
 * value means no delivery: a filter is a condition the integrator asked to see true (docs/webhooks.md, "Filters").
 * Errors are counted in `webhook_filter_errors_total`.
 */
export function evaluateFilter(
  text: string,
  eventType: string,
  data: Record<string, unknown>,
  budget: { maxMs?: number } = {},
): FilterOutcome {
  const filter = compiled(text);
  let error: string;
  if (filter.problem !== null) error = filter.problem;
  else {
    const meter = new Meter(text, position, budget.maxMs);
    try {
      return { passes: metered(meter, () => filter.evaluate({ event_type: eventType, data })) === true, error: null };
    } catch (err) {
      error = describe(text, err);
    }
  }
  // counted, so that an operator sees filters that never deliver for want of a field (GET /metrics)
  metrics.filterErrors.inc();
  return { passes: false, error };
}

/** An evaluation's error as the endpoint's stats show it: where, and the library's first line. */
function describe(text: string, err: unknown): string {
  if (err instanceof FilterBudgetExceeded) return err.message;
  if (err instanceof Error) {
    const at = (err as { range?: { start: number } }).range?.start;
    const summary = (err as { summary?: string }).summary ?? summaryOf(err);
    return at === undefined ? summary : `${position(text, at)}: ${summary}`;
  }
  return String(err);
}

/** `evaluateFilter`'s answer alone (replay decides again what the fan-out decided, events.ts). */
export function passesFilter(text: string, eventType: string, data: Record<string, unknown>): boolean {
  return evaluateFilter(text, eventType, data).passes;
}

/**
 * The fan-out's decision for one event (events.ts): the endpoints whose filter passes or that have none, the errors of
 * those whose filter could not say, by endpoint, and the endpoints whose filter was not evaluated for want of time:
 * the company's filter time was spent (filter_time.ts), or this event's filters took their slice (`FILTER_SLICE_MS`)
 * already. Those `deferred` still get their records, decided before their first attempt (docs/webhooks.md, "What a
 * company's filters may spend").
 */
export function decideFilters<E extends { id: string; filter: string | null }>(
  companyId: string,
  endpoints: E[],
  eventType: string,
  data: Record<string, unknown>,
): { passing: E[]; errors: { endpointId: string; message: string }[]; deferred: E[] } {
  const passing: E[] = [];
  const deferred: E[] = [];
  const errors: { endpointId: string; message: string }[] = [];
  const deadline = performance.now() + FILTER_SLICE_MS;
  for (const e of endpoints) {
    if (e.filter === null) {
      passing.push(e);
      continue;
    }
    if (performance.now() > deadline || !hasFilterTime(companyId)) {
      deferred.push(e);
      continue;
    }
    const filter = e.filter;
    const outcome = charged(companyId, () => evaluateFilter(filter, eventType, data));
    if (outcome.passes) passing.push(e);
    else if (outcome.error !== null) errors.push({ endpointId: e.id, message: outcome.error });
  }
  return { passing, errors, deferred };
}

/** How many compiled filters are cached (tests check the bound). */
export const cachedFilters = () => cache.size;
