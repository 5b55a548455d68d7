/** The filter rules on their own (no database): what is refused and where, what passes, and the cache's bound. */
import assert from "node:assert/strict";
import { renderMetrics } from "../../domain/infra/metrics.ts";
import {
  cachedFilters,
  FILTER_CACHE_SIZE,
  filterProblem,
  passesFilter,
  position,
} from "../../domain/webhooks/filters.ts";

const ISSUE_EXAMPLE = 'data.currency == "BRL" && double(data.value) > 1000.0';

Deno.test("the issue's example is a valid filter and decides on currency and amount", () => {
  assert.equal(filterProblem(ISSUE_EXAMPLE), null);
  assert.equal(passesFilter(ISSUE_EXAMPLE, "identified", { currency: "BRL", value: "1000.01" }), true);
  assert.equal(passesFilter(ISSUE_EXAMPLE, "identified", { currency: "BRL", value: "1000.00" }), false);
  assert.equal(passesFilter(ISSUE_EXAMPLE, "identified", { currency: "MXN", value: "5000" }), false);
});

Deno.test("positions are line and column from 1, as an editor shows them", () => {
  assert.equal(position("abc", 0), "line 1, column 1");
  assert.equal(position("ab\ncd", 4), "line 2, column 2");
  assert.equal(position("ab\n\ncd", 4), "line 3, column 1");
});

Deno.test("what a filter may not be, each with where", () => {
  assert.equal(filterProblem('event_type == "identified" ||'), "line 1, column 30: Unexpected token: EOF");
  assert.equal(filterProblem('"open'), "line 1, column 1: Unterminated string");
  assert.match(filterProblem("payload.x == 1")!, /^line 1, column 1: Unknown variable: payload$/);
  assert.match(filterProblem('data.x.matches("a")')!, /^line 1, column 1: matches\(\) is not allowed/);
  assert.match(filterProblem('event_type == "a" || matches(data.x, "a")')!, /^line 1, column 22: matches\(\)/);
  assert.equal(filterProblem('"text"'), "line 1, column 1: must give a bool (true delivers), not string");
  // one list macro inside another multiplies the lists' sizes: refused where the inner one starts; chained, allowed
  assert.match(filterProblem("data.l.all(a, data.l.exists(b, a == b))")!, /^line 1, column 15: a list macro .* inside/);
  assert.equal(filterProblem("data.l.filter(x, x > 1).exists(y, y == 2)"), null);
  // depth and size are bounded: a filter cannot be made arbitrarily expensive
  assert.notEqual(filterProblem(`${"(".repeat(60)}true${")".repeat(60)}`), null);
  assert.equal(filterProblem("x".repeat(1001)), "is too long (maximum is 1000 characters)");
});

Deno.test("an event passes only when the filter gives exactly true; an error is no delivery", () => {
  const data = { currency: "BRL", value: "1500.00", items: [{ sku: "a" }, { sku: "b" }], flag: "yes" };
  const pass = (filter: string, type = "identified") => passesFilter(filter, type, data);
  assert.equal(pass('event_type == "identified"'), true);
  assert.equal(pass('event_type == "identified"', "wire_created"), false);
  assert.equal(pass('data.missing == "x"'), false, "a missing key is an error: not delivered");
  assert.equal(pass('has(data.missing) && data.missing == "x"'), false);
  assert.equal(pass('!has(data.missing) || data.missing == "x"'), true, "has() guards an optional field");
  assert.equal(pass("data.value > 1000"), false, "a decimal is text: comparing it with a number is an error");
  assert.equal(pass("data.flag"), false, "a value that is not a bool does not deliver");
  assert.equal(pass('data.items.exists(i, i.sku == "b")'), true);
  assert.equal(pass('data.missing == "x" || true'), true, "CEL's || is true when either side is");
});

Deno.test("a filter that fails at evaluation is counted for the operator; one that gives false is not", () => {
  const errors = () => Number(/^webhook_filter_errors_total (\d+)$/m.exec(renderMetrics())?.[1] ?? 0);
  const before = errors();
  assert.equal(passesFilter('data.missing == "x"', "identified", {}), false);
  assert.equal(errors(), before + 1);
  assert.equal(passesFilter('event_type == "wire_created"', "identified", {}), false);
  assert.equal(errors(), before + 1);
});

Deno.test("the compiled filters are cached by text, within a bound", () => {
  for (let i = 0; i < FILTER_CACHE_SIZE + 50; i++) passesFilter(`data.n == ${i}`, "identified", { n: i });
  assert.equal(cachedFilters(), FILTER_CACHE_SIZE);
  // still right after evictions: the first ones were dropped and are compiled again
  assert.equal(passesFilter("data.n == 0", "identified", { n: 0 }), true);
});
