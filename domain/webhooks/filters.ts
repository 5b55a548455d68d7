import { Environment, EvaluationError, ParseError } from "@marcbachmann/cel-js";
import type { ErrorBag } from "../basics/errors.ts";
import { metrics } from "../infra/metrics.ts";

/**
 * Payload filters: an endpoint's CEL expression over an event, evaluated once per event and endpoint at fan-out
 * (`emitEvent`, events.ts); docs/webhooks.md, "Filters", is the integrator's view.
 *
 * CEL (cel.dev) because it is made for this: no loops but the macros over a list the event itself carries, no
 * recursion, no I/O, no clock, no variable but the two given here. With no list macro nested in another (refused
 * below), an evaluation's work is bounded by the expression's size times the event's. `@marcbachmann/cel-js` evaluates
 * it (zero dependencies, a type checker that names positions, about 1 µs per evaluation of a typical filter here; the
 * bench's `filter_eval_us`). The one unbounded thing it has is `matches()`, run on JavaScript's backtracking RegExp (a
 * pattern can take exponential time): filters may not call it.
 */

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

/** Functions a filter may not call, and why (the message the integrator reads). */
const REFUSED_CALLS: Record<string, string> = {
  matches: "matches() is not allowed in a filter (its regular expressions can take unbounded time); use " +
    "startsWith(), endsWith() or contains()",
};

type Compiled = (vars: { event_type: string; data: Record<string, unknown> }) => unknown;
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
  return null;
}

/** Adds the filter's problem to `errors` under `filter`; a string only (null clears, absent keeps). */
export function checkFilter(errors: ErrorBag, text: unknown) {
  if (typeof text !== "string") return;
  const problem = filterProblem(text);
  if (problem) errors.add("filter", problem);
}

/** The compiled filter, from the cache or parsed now; the least recently used one goes when it is full. */
function compiled(text: string): Compiled {
  const hit = cache.get(text);
  if (hit) {
    // re-inserted: a Map iterates in insertion order, so the first key is the least recently used
    cache.delete(text);
    cache.set(text, hit);
    return hit;
  }
  const fn = ENV.parse(text) as unknown as Compiled;
  if (cache.size >= FILTER_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(text, fn);
  return fn;
}

/**
 * Whether an event passes a filter: only when the expression gives `true`. An error (a key the event lacks, a
 * value of another type, a filter stored before a rule here changed) or any other value means no delivery: a
 * filter is a condition the integrator asked to see true (docs/webhooks.md, "Filters"). Errors are counted in
 * `webhook_filter_errors_total`.
 */
export function passesFilter(text: string, eventType: string, data: Record<string, unknown>): boolean {
  try {
    return compiled(text)({ event_type: eventType, data }) === true;
  } catch {
    // counted, so that an operator sees filters that never deliver for want of a field (GET /metrics)
    metrics.filterErrors.inc();
    return false;
  }
}

/** How many compiled filters are cached (tests check the bound). */
export const cachedFilters = () => cache.size;
