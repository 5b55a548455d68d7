/**
 * Hostile payload filters (docs/webhooks.md, "What a filter may spend"): short expressions whose values grow
 * geometrically. The first three are the ones a security review reproduced against the running service (issue 32,
 * finding 1); the others are variants of the same idea through lists, maps and string functions. Each must be refused
 * when saved, and stopped by its run-time budget if it is ever evaluated. Used by tests/webhooks/filter_rules_test.ts
 * and tests/webhooks/filters_test.ts.
 */

const EIGHT = (v: string) => `cel.bind(${String.fromCharCode(v.charCodeAt(0) + 1)}, ${Array(8).fill(v).join("+")}, `;

/**
 * The review's first: each `cel.bind` makes a string 8 times the one before (29 s per evaluation, the event loop
 * blocked for every tenant), written out:
 * `cel.bind(a, event_type + event_type, cel.bind(b, a+a+a+a+a+a+a+a, ... cel.bind(i, h+...+h, i.contains("never"))...)`.
 */
export const BIND_CHAIN = "cel.bind(a, event_type + event_type, " +
  "cel.bind(b, a+a+a+a+a+a+a+a, " +
  "cel.bind(c, b+b+b+b+b+b+b+b, " +
  "cel.bind(d, c+c+c+c+c+c+c+c, " +
  "cel.bind(e, d+d+d+d+d+d+d+d, " +
  "cel.bind(f, e+e+e+e+e+e+e+e, " +
  "cel.bind(g, f+f+f+f+f+f+f+f, " +
  "cel.bind(h, g+g+g+g+g+g+g+g, " +
  "cel.bind(i, h+h+h+h+h+h+h+h, " +
  'i.contains("never"))))))))))';

/** The review's second: the same chain ending in `lowerAscii().upperAscii()`, which ran the process out of memory. */
export const BIND_OUT_OF_MEMORY = "cel.bind(a, event_type + event_type, " +
  "cel.bind(b, a+a+a+a+a+a+a+a, " +
  "cel.bind(c, b+b+b+b+b+b+b+b, " +
  "cel.bind(d, c+c+c+c+c+c+c+c, " +
  "cel.bind(e, d+d+d+d+d+d+d+d, " +
  "cel.bind(f, e+e+e+e+e+e+e+e, " +
  "cel.bind(g, f+f+f+f+f+f+f+f, " +
  "cel.bind(h, g+g+g+g+g+g+g+g, " +
  "cel.bind(i, h+h+h+h+h+h+h+h, " +
  'i.lowerAscii().upperAscii() == "")))))))))';

/** The review's third: no `cel.bind`, a linear chain of `map` calls, each element 8 times the one before (5.6 s). */
export const MAP_CHAIN = '["ab"]' +
  ".map(x, x+x+x+x+x+x+x+x)".repeat(8) +
  ".exists(x, size(x) == 1)";

/** A list 8 times longer at each step (its elements copied each time). */
export const LIST_GROWTH = "cel.bind(a, [event_type, event_type], " + EIGHT("a") + EIGHT("b") + EIGHT("c") +
  EIGHT("d") + "size(e) == 0)))))";

/** Maps nested 4 wide: small in memory (shared), exponential to compare. */
export const MAP_GROWTH = "cel.bind(a, {'k': event_type, 'l': event_type, 'm': event_type, 'n': event_type}, " +
  "cel.bind(b, {'k': a, 'l': a, 'm': a, 'n': a}, " +
  "cel.bind(c, {'k': b, 'l': b, 'm': b, 'n': b}, " +
  "cel.bind(d, {'k': c, 'l': c, 'm': c, 'n': c}, " +
  "cel.bind(e, {'k': d, 'l': d, 'm': d, 'n': d}, " +
  "cel.bind(f, {'k': e, 'l': e, 'm': e, 'n': e}, " +
  "cel.bind(g, {'k': f, 'l': f, 'm': f, 'n': f}, " +
  "cel.bind(h, {'k': g, 'l': g, 'm': g, 'n': g}, " +
  "h == {'k': g}))))))))";

/** `join` with the string itself as separator: 15 times larger at each step, in one call. */
export const JOIN_GROWTH = "cel.bind(s, event_type + event_type, " +
  "cel.bind(t, [s, s, s, s, s, s, s, s].join(s), " +
  "cel.bind(u, [t, t, t, t, t, t, t, t].join(t), " +
  "cel.bind(v, [u, u, u, u, u, u, u, u].join(u), " +
  'v.upperAscii().contains("x")))))';

/** `bytes().hex()` nested: twice as long at each of 14 levels, no operator at all. */
export const HEX_GROWTH = "size(" + "bytes(".repeat(14) + "event_type" + ").hex()".repeat(14) + ") == 0";

/** A search for one field of the event in another: JavaScript's search takes the product of their lengths. */
export const SEARCH_PRODUCT = "data.text.contains(data.pattern)";

/** Every one of them, by name. */
export const HOSTILE_FILTERS: Record<string, string> = {
  BIND_CHAIN,
  BIND_OUT_OF_MEMORY,
  MAP_CHAIN,
  LIST_GROWTH,
  MAP_GROWTH,
  JOIN_GROWTH,
  HEX_GROWTH,
  SEARCH_PRODUCT,
};

/** Data on which SEARCH_PRODUCT takes long without its budget (0.3 s here for one search). */
export const SEARCH_DATA = { text: "a".repeat(64 * 1024), pattern: "a".repeat(32 * 1024) + "b" };
