/**
 * The budget of an endpoint's payload filter (docs/webhooks.md, "Filters", "What a filter may spend"): a bound on the
 * size of every value a filter builds and on the work of one evaluation, estimated from the parsed expression when the
 * filter is saved (`estimateFilter`, which filters.ts turns into a 422), and counted again during every evaluation
 * (`meterEvaluations`), which stops one that goes past it. Kept apart from filters.ts because it knows the shape of
 * `@marcbachmann/cel-js`'s syntax tree and evaluator, which the rest of the service never sees.
 *
 * Why both. Counting the operations is not enough: CEL has no loops, but `a + a` doubles a value, so a short chain of
 * such steps builds strings or lists of gigabytes (a 305-character chain of `map` calls took 5.6 s, and a `cel.bind`
 * chain ending in `lowerAscii()` ran the process out of memory). The estimate, modelled on cel-go's cost estimator,
 * bounds each value's size from the sizes of what it is built of, given a bound on the event's data, and refuses a
 * filter whose values or work can pass the limits. The count at run time catches what the estimate cannot promise: a
 * filter stored before these rules, an event larger than the bound the estimate assumes, and time lost elsewhere.
 *
 * Units: a value's size is its characters (a string's length, a list's elements plus theirs, a map's entries plus its
 * keys' and values'); a step is one node of the expression evaluated once.
 */

import process from "node:process";

/**
 * The data of an event, as JSON characters, that the estimate assumes: the catalogue's events carry a few hundred, an
 * exchange of a hundred transactions about 4 KiB (a larger event is counted at run time, against the same limits).
 */
export const EVENT_DATA_BOUND = 4 * 1024;
/** Longest event type name the estimate assumes (the catalogue's longest is 32). */
const EVENT_TYPE_BOUND = 64;
/** The largest value a filter may build (a string, a list, a map). */
export const MAX_VALUE_CHARS = 64 * 1024;
/** Steps one evaluation may take: every node evaluated, each element of a list macro counted. */
export const MAX_STEPS = 40_000;
/** Characters one evaluation may build and compare, all values together. */
export const MAX_CHARS = 256 * 1024;
/**
 * Character pairs one `contains`, `indexOf` or `lastIndexOf` may compare: JavaScript's search takes up to the text's
 * length times the pattern's (a 64 KiB text and a 32 KiB pattern took 0.3 s here), so that product is what is bounded.
 */
export const MAX_SEARCH_PAIRS = 4 * 1024 * 1024;
/** A search's pairs count for this many characters in `MAX_CHARS` (one pair costs a sixteenth of a built character). */
const PAIRS_PER_CHAR = 16;
/**
 * Time one evaluation may take, checked every `TIME_CHECK_STEPS` steps from the first check on: the backstop behind
 * the counts.
 */
export const MAX_EVAL_MS = 20;
const TIME_CHECK_STEPS = 256;

/** The macros that iterate over a list. */
const LIST_MACROS = new Set(["all", "exists", "exists_one", "map", "filter"]);

/** Functions whose result is a number, a bool, a type or a time, whatever the size of their arguments. */
const SCALAR_CALLS = new Set(["size", "int", "uint", "double", "bool", "type", "timestamp", "duration"]);
/** Methods giving a number or a bool (each reads its receiver and arguments once), or a time's field. */
const SCALAR_METHODS = new Set([
  "size",
  "startsWith",
  "endsWith",
  "at",
  "getDate",
  "getDayOfMonth",
  "getDayOfWeek",
  "getDayOfYear",
  "getFullYear",
  "getHours",
  "getMilliseconds",
  "getMinutes",
  "getMonth",
  "getSeconds",
]);
/** Methods that search their receiver for their first argument. */
const SEARCH_METHODS = new Set(["contains", "indexOf", "lastIndexOf"]);
/** Methods building a value at most `k` times their receiver's size (plus a little: hex and base64 of bytes). */
const GROWING_METHODS: Record<string, number> = {
  lowerAscii: 1,
  upperAscii: 1,
  trim: 1,
  substring: 1,
  string: 1,
  json: 1,
  hex: 2,
  base64: 2,
};

/**
 * At most `a·|x| + b`, where |x| is the size of the iteration variable of the list macro being estimated (at most one:
 * a list macro in another's body is refused, filters.ts). Outside a macro's body `a` is 0. Summed over the elements of a
 * list of size S and N elements, such a bound is at most `a·S + b·N`: this is what keeps `data.l.map(x, x.id)` linear.
 */
type Lin = { a: number; b: number };
const lin = (b: number, a = 0): Lin => ({ a, b });
const sum = (...ls: Lin[]): Lin => ({ a: ls.reduce((s, l) => s + l.a, 0), b: ls.reduce((s, l) => s + l.b, 0) });
const times = (l: Lin, k: number): Lin => ({ a: l.a * k, b: l.b * k });
const larger = (x: Lin, y: Lin): Lin => ({ a: Math.max(x.a, y.a), b: Math.max(x.b, y.b) });

/** What the estimate knows of a value: its size and how many elements (or entries) it has, at most. */
type Shape = { size: Lin; count: Lin };
const SCALAR: Shape = { size: lin(1), count: lin(0) };

/** What a node is to the run-time count (below): a value it builds, a value another node reads, a search, a join. */
export type Role = {
  builds?: boolean;
  read?: boolean;
  /** The search or join this node is the receiver (`recv`) or the argument (`arg`) of. */
  pairOf?: { node: object; as: "recv" | "arg"; kind: "search" | "join" };
};

type Node = { op: string; args: unknown; start: number };
type Scope = { vars: Map<string, Shape>; elem: number; inBody: boolean };
type Work = { steps: Lin; chars: Lin };

/** Why a filter is over its budget, and where (a character offset). */
export type Fault = { at: number; message: string };

/** The estimate of a filter: its fault (null when within budget), its work, and the roles the run-time count uses. */
export type Estimate = { fault: Fault | null; steps: number; chars: number; roles: Map<object, Role> };

/** "1,234,567", or "~1.2e+21" past what a reader compares digit by digit. */
export const amount = (n: number) => n < 1e15 ? Math.ceil(n).toLocaleString("en-US") : n.toExponential(1);

class Estimator {
  readonly roles = new Map<object, Role>();
  fault: Fault | null = null;

  /** The largest a bound can be where it is evaluated: at the largest element, in a body. */
  max(l: Lin, scope: Scope) {
    return l.a * scope.elem + l.b;
  }

  fail(at: number, message: string) {
    this.fault ??= { at, message };
  }

  role(node: unknown, role: Role) {
    if (node && typeof node === "object") this.roles.set(node, { ...this.roles.get(node), ...role });
  }

  /** A value the node builds: within `MAX_VALUE_CHARS`, and its characters counted as work. */
  built(node: Node, shape: Shape, scope: Scope, work: Work): Shape {
    this.role(node, { builds: true });
    const most = this.max(shape.size, scope);
    if (most > MAX_VALUE_CHARS) {
      this.fail(
        node.start,
        `this expression's result can grow to ~${amount(most)} characters, more than the ` +
          `${MAX_VALUE_CHARS / 1024} KiB a filter may build`,
      );
    }
    work.chars = sum(work.chars, shape.size);
    return shape;
  }

  /** Values an operation reads whole (a comparison, a concatenation, a function's arguments): counted as work. */
  read(nodes: unknown[], shapes: Shape[], work: Work) {
    for (const n of nodes) this.role(n, { read: true });
    work.chars = sum(work.chars, ...shapes.map((s) => s.size));
  }

  /** `x·y` as a bound: linear when either is a constant, else the product of their largest values. */
  product(x: Lin, y: Lin, scope: Scope): Lin {
    if (x.a === 0) return times(y, x.b);
    if (y.a === 0) return times(x, y.b);
    return lin(this.max(x, scope) * this.max(y, scope));
  }

  /** The whole filter's work so far past a limit: the fault is where it crossed it (a macro, or the end). */
  totals(node: Node, work: Work) {
    if (work.steps.b > MAX_STEPS) {
      this.fail(
        node.start,
        `from here this filter can take ~${amount(work.steps.b)} steps on one event, more than the ` +
          `${amount(MAX_STEPS)} a filter may`,
      );
    }
    if (work.chars.b > MAX_CHARS) {
      this.fail(
        node.start,
        `from here this filter can build and read ~${amount(work.chars.b)} characters on one event, more than ` +
          `the ${MAX_CHARS / 1024} KiB a filter may`,
      );
    }
  }

  walkAll(nodes: unknown[], scope: Scope, work: Work): Shape[] {
    return nodes.map((n) => this.walk(n as Node, scope, work));
  }

  walk(node: Node, scope: Scope, work: Work): Shape {
    work.steps = sum(work.steps, lin(1));
    const args = node.args as unknown[];
    switch (node.op) {
      case "value": {
        const v = node.args as unknown;
        if (typeof v === "string" || v instanceof Uint8Array) return { size: lin(v.length), count: lin(0) };
        return SCALAR;
      }
      case "id":
        return scope.vars.get(node.args as string) ?? SCALAR;
      case ".":
        return this.walk(args[0] as Node, scope, work);
      case "[]": {
        const [left] = this.walkAll(args, scope, work);
        return left;
      }
      case "?:": {
        const [, yes, no] = this.walkAll(args, scope, work);
        return { size: larger(yes.size, no.size), count: larger(yes.count, no.count) };
      }
      case "||":
      case "&&":
      case "!_":
        this.walkAll(Array.isArray(args) ? args : [args], scope, work);
        return SCALAR;
      case "-_":
        this.walk(node.args as Node, scope, work);
        return SCALAR;
      case "==":
      case "!=":
      case "<":
      case "<=":
      case ">":
      case ">=":
      case "in":
      case "-":
      case "*":
      case "/":
      case "%":
        this.read(args, this.walkAll(args, scope, work), work);
        return SCALAR;
      case "+": {
        const [l, r] = this.walkAll(args, scope, work);
        this.read(args, [l, r], work);
        return this.built(node, { size: sum(l.size, r.size), count: sum(l.count, r.count) }, scope, work);
      }
      case "list": {
        const elems = this.walkAll(args, scope, work);
        return this.built(
          node,
          { size: sum(lin(args.length), ...elems.map((e) => e.size)), count: lin(args.length) },
          scope,
          work,
        );
      }
      case "map": {
        const entries = (args as unknown[][]).flatMap((kv) => this.walkAll(kv, scope, work));
        return this.built(
          node,
          { size: sum(lin(args.length), ...entries.map((e) => e.size)), count: lin(args.length) },
          scope,
          work,
        );
      }
      case "call":
        return this.call(node, args[0] as string, args[1] as Node[], scope, work);
      case "rcall":
        return this.method(node, args[0] as string, args[1] as Node, args[2] as Node[], scope, work);
      default:
        this.fail(node.start, `${node.op} is not allowed in a filter (its cost cannot be bounded)`);
        return SCALAR;
    }
  }

  call(node: Node, name: string, argNodes: Node[], scope: Scope, work: Work): Shape {
    const shapes = this.walkAll(argNodes, scope, work);
    if (name === "has") return SCALAR; // a field's presence: nothing read whole
    if (name === "dyn") return shapes[0] ?? SCALAR;
    this.read(argNodes, shapes, work);
    if (SCALAR_CALLS.has(name)) return SCALAR;
    const [arg] = shapes;
    if (name === "string" && arg) {
      return this.built(node, { size: larger(arg.size, lin(32)), count: lin(0) }, scope, work);
    }
    if (name === "bytes" && arg) return this.built(node, { size: times(arg.size, 3), count: lin(0) }, scope, work);
    this.fail(node.start, `${name}() is not allowed in a filter (its cost cannot be bounded)`);
    return SCALAR;
  }

  method(node: Node, name: string, recvNode: Node, argNodes: Node[], scope: Scope, work: Work): Shape {
    if (LIST_MACROS.has(name)) return this.macro(node, name, recvNode, argNodes, scope, work);
    if (name === "bind" && recvNode.op === "id" && recvNode.args === "cel") {
      const [variable, init, body] = argNodes;
      const bound = this.walk(init, scope, work);
      const vars = new Map(scope.vars).set(variable.args as string, bound);
      return this.walk(body, { ...scope, vars }, work);
    }
    const recv = this.walk(recvNode, scope, work);
    const shapes = this.walkAll(argNodes, scope, work);
    this.read([recvNode, ...argNodes], [recv, ...shapes], work);
    if (SCALAR_METHODS.has(name)) return SCALAR;
    if (SEARCH_METHODS.has(name) && shapes[0]) {
      const pairs = this.product(recv.size, shapes[0].size, scope);
      const most = this.max(pairs, scope);
      if (most > MAX_SEARCH_PAIRS) {
        this.fail(
          node.start,
          `${name}() here can compare ~${amount(this.max(recv.size, scope))} characters with a pattern of ` +
            `~${amount(this.max(shapes[0].size, scope))}, more than a filter may (${amount(MAX_SEARCH_PAIRS)} ` +
            "pairs): search for a shorter text, such as one written in the filter",
        );
      }
      work.chars = sum(work.chars, times(pairs, 1 / PAIRS_PER_CHAR));
      this.role(recvNode, { pairOf: { node, as: "recv", kind: "search" } });
      this.role(argNodes[0], { pairOf: { node, as: "arg", kind: "search" } });
      return SCALAR;
    }
    if (name in GROWING_METHODS) {
      const k = GROWING_METHODS[name];
      return this.built(node, { size: sum(times(recv.size, k), lin(k > 1 ? 4 : 0)), count: lin(0) }, scope, work);
    }
    if (name === "split") {
      // each element it makes is a value of its own: a step each, as a macro's element is (8,192 one-character
      // strings took a millisecond here)
      work.steps = sum(work.steps, recv.size);
      return this.built(node, { size: sum(times(recv.size, 2), lin(1)), count: sum(recv.size, lin(1)) }, scope, work);
    }
    if (name === "join") {
      const sep = shapes[0];
      const size = sep ? sum(recv.size, this.product(recv.count, sep.size, scope)) : recv.size;
      if (sep) {
        this.role(recvNode, { pairOf: { node, as: "recv", kind: "join" } });
        this.role(argNodes[0], { pairOf: { node, as: "arg", kind: "join" } });
      }
      return this.built(node, { size, count: lin(0) }, scope, work);
    }
    this.fail(node.start, `${name}() is not allowed in a filter (its cost cannot be bounded)`);
    return SCALAR;
  }

  /** A list macro: its body's work once per element, summed over the receiver's elements. */
  macro(node: Node, name: string, recvNode: Node, argNodes: Node[], scope: Scope, work: Work): Shape {
    const recv = this.walk(recvNode, scope, work);
    if (scope.inBody) {
      this.fail(node.start, "a list macro inside another is not allowed");
      return SCALAR;
    }
    const S = this.max(recv.size, scope);
    const N = this.max(recv.count, scope);
    const [variable, ...rest] = argNodes;
    const element: Shape = { size: lin(0, 1), count: lin(0, 1) };
    const body: Scope = { vars: new Map(scope.vars).set(variable.args as string, element), elem: S, inBody: true };
    const each: Work = { steps: lin(4), chars: lin(0) }; // 4: the macro's own steps per element (accumulate, test)
    const shapes = rest.map((n) => this.walk(n, body, each));
    const over = (l: Lin) => l.a * S + l.b * N;
    work.steps = sum(work.steps, lin(over(each.steps) + 3));
    work.chars = sum(work.chars, lin(over(each.chars)));
    this.totals(node, work);
    if (name === "filter") return this.built(node, recv, scope, work);
    if (name !== "map") return SCALAR;
    const out = shapes[shapes.length - 1];
    return this.built(node, { size: lin(over(out.size) + N), count: lin(N) }, scope, work);
  }
}

/**
 * The budget estimate of a parsed filter (the tree `Environment.parse` gives, whose nodes evaluation then runs):
 * the first fault found, the steps and characters one evaluation can take at most when `data` is within
 * `EVENT_DATA_BOUND`, and each node's role for the run-time count.
 */
export function estimateFilter(ast: unknown): Estimate {
  const e = new Estimator();
  const vars = new Map<string, Shape>([
    // a JSON list holds at most one element per two characters ("1,")
    ["data", { size: lin(EVENT_DATA_BOUND), count: lin(EVENT_DATA_BOUND / 2) }],
    ["event_type", { size: lin(EVENT_TYPE_BOUND), count: lin(0) }],
  ]);
  const work: Work = { steps: lin(0), chars: lin(0) };
  e.walk(ast as Node, { vars, elem: 0, inBody: false }, work);
  e.totals(ast as Node, work);
  return { fault: e.fault, steps: work.steps.b, chars: work.chars.b, roles: e.roles };
}

/** An evaluation stopped by its budget: never absorbed as a value, whatever `||` or a macro does with errors. */
export class FilterBudgetExceeded extends Error {
  override name = "FilterBudgetExceeded";
}

/** The size of a value as the budget counts it; lists and maps remembered, so a value shared many times is read once. */
const sizes = new WeakMap<object, number>();
function sizeOf(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (typeof v !== "object" || v === null) return 1;
  const known = sizes.get(v);
  if (known !== undefined) return known;
  let n = 0;
  if (Array.isArray(v)) {
    n = v.length;
    for (const e of v) n += sizeOf(e);
  } else if (v instanceof Uint8Array) n = v.length;
  else if (v instanceof Map) {
    n = v.size;
    for (const [k, e] of v) n += sizeOf(k) + sizeOf(e);
  } else if (v.constructor === Object || v.constructor === undefined) {
    for (const [k, e] of Object.entries(v)) n += 1 + k.length + sizeOf(e);
  } else return 1; // a timestamp, a duration, a type
  // an empty list is not remembered: a macro's result starts as one and grows
  if (n > 0) sizes.set(v, n);
  return n;
}

/** The process's CPU time (user and system), in ms: about 2 µs a read here, so read rarely. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** One evaluation's count: its steps and characters so far, its deadline, and the first budget it went past. */
export class Meter {
  steps = 0;
  chars = 0;
  exceeded: FilterBudgetExceeded | null = null;
  private pairs: Map<object, { recv?: number; arg?: number }> | null = null;
  /** Set at the first time check: an evaluation of fewer steps takes microseconds, and reads no clock. */
  private deadline = 0;
  /** The process's CPU time at the first check, read again only once the clock passes the deadline. */
  private cpuStart = 0;

  /**
   * `position(text, offset)` names where a stop happened ("line 1, column 40"). `maxMs`: the time an evaluation may
   * take, MAX_EVAL_MS but where a caller measures the other budgets alone (a test: time is the bench's figure).
   */
  constructor(
    readonly text: string,
    readonly position: (text: string, at: number) => string,
    readonly maxMs = MAX_EVAL_MS,
  ) {}

  stop(node: Node, message: string): never {
    this.exceeded ??= new FilterBudgetExceeded(`stopped at ${this.position(this.text, node.start)}: ${message}`);
    throw this.exceeded;
  }

  /** Before a node runs. Once stopped, every node throws, so that nothing absorbs the stop and goes on. */
  step(node: Node) {
    if (this.exceeded) throw this.exceeded;
    if (++this.steps > MAX_STEPS) this.stop(node, `more than the ${amount(MAX_STEPS)} steps a filter may take`);
    if (this.steps % TIME_CHECK_STEPS === 0) {
      // the clock starts at the first check: the steps before it are within what a few microseconds allow
      if (this.deadline === 0) {
        this.deadline = performance.now() + this.maxMs;
        this.cpuStart = cpuMs();
      } else if (performance.now() > this.deadline) {
        // the clock also runs while the process waits for a core: only the process's own time stops an evaluation,
        // so a busy machine never turns a filter's answer into an error (tests/webhooks/filter_time_test.ts)
        const spent = cpuMs() - this.cpuStart;
        if (spent > this.maxMs) this.stop(node, `more than the ${this.maxMs} ms an evaluation may take`);
        this.deadline = performance.now() + this.maxMs - spent;
      }
    }
  }

  /** After a node gave `value`. */
  account(node: Node, role: Role, value: unknown) {
    if (role.builds) {
      const size = sizeOf(value);
      if (size > MAX_VALUE_CHARS) {
        this.stop(
          node,
          `a value reached ${amount(size)} characters, more than the ${MAX_VALUE_CHARS / 1024} KiB a filter may build`,
        );
      }
      this.chars += size;
    }
    if (role.read) this.chars += sizeOf(value);
    if (role.pairOf) this.pair(role.pairOf, sizeOf(value));
    if (this.chars > MAX_CHARS) {
      this.stop(node, `more than the ${MAX_CHARS / 1024} KiB of characters a filter may build and read`);
    }
  }

  /**
   * A search or a join, checked before it runs: its two operands are evaluated first, each noted here, and the check
   * made with the latest of the other (the evaluator takes a call's arguments last to first, the receiver last).
   */
  private pair(of: NonNullable<Role["pairOf"]>, size: number) {
    this.pairs ??= new Map();
    const seen = this.pairs.get(of.node) ?? {};
    seen[of.as] = size;
    this.pairs.set(of.node, seen);
    if (seen.recv === undefined || seen.arg === undefined) return;
    const node = of.node as Node;
    if (of.kind === "search") {
      const pairs = seen.recv * seen.arg;
      if (pairs > MAX_SEARCH_PAIRS) {
        this.stop(node, `a search of ${amount(pairs)} character pairs, more than a filter may`);
      }
      this.chars += pairs / PAIRS_PER_CHAR;
    } else if (seen.recv * (1 + seen.arg) > MAX_VALUE_CHARS) {
      // a join makes its list's size plus one separator per element: at most this, checked before it is made
      this.stop(node, `a join could build ${amount(seen.recv * (1 + seen.arg))} characters, more than a filter may`);
    }
  }
}

type Evaluator = { run: (ast: Node & Evaluable, ctx: unknown) => unknown };
type Evaluable = { evaluate: (ev: Evaluator, ast: Node, ctx: unknown) => unknown; [ROLE]?: Role };
/** Where a node of a compiled filter keeps its role (`assignRoles`): read at every step, so on the node itself. */
const ROLE = Symbol("filter budget role");

/** Marks the nodes of a compiled filter with their roles, for the run-time count. */
export function assignRoles(roles: Map<object, Role>) {
  for (const [node, role] of roles) (node as Evaluable)[ROLE] = role;
}
type Evaluating = ((vars: unknown) => unknown) & { ast: { evaluate: unknown } };

/** The evaluation being counted (evaluations are synchronous: one at a time), or null. */
let current: Meter | null = null;

/**
 * Makes every node evaluated through `env` go through the count: wraps the evaluator's `run`, by which the evaluator
 * evaluates each node of the tree but the root. The evaluator is private to the environment; it is the first argument
 * a root node's `evaluate` gets, so a probe expression hands it over once. Throws when the library no longer evaluates
 * this way: the service must not run filters it cannot count (tests/webhooks/filter_rules_test.ts would say so too).
 */
export function meterEvaluations(env: { parse: (text: string) => unknown }) {
  const probe = env.parse("true") as Evaluating;
  const root = probe.ast as { evaluate: (ev: Evaluator, ast: unknown, ctx: unknown) => unknown };
  const original = root.evaluate;
  let evaluator: Evaluator | null = null;
  root.evaluate = function (ev, ast, ctx) {
    evaluator = ev;
    return original.call(this, ev, ast, ctx);
  };
  probe({ event_type: "", data: {} });
  const ev = evaluator as Evaluator | null;
  if (!ev || typeof ev.run !== "function") throw new Error("cel-js changed: filter evaluations cannot be counted");
  ev.run = function (ast: Node & Evaluable, ctx: unknown) {
    const meter = current;
    if (meter === null) return ast.evaluate(this, ast, ctx);
    meter.step(ast);
    const value = ast.evaluate(this, ast, ctx);
    const role = ast[ROLE];
    if (role !== undefined) meter.account(ast, role, value);
    return value;
  };
}

/** `evaluate()` counted by `meter`: its value, or the budget's error even when the expression absorbed it. */
export function metered<T>(meter: Meter, evaluate: () => T): T {
  const outer = current;
  current = meter;
  try {
    const value = evaluate();
    if (meter.exceeded) throw meter.exceeded;
    return value;
  } catch (err) {
    throw meter.exceeded ?? err;
  } finally {
    current = outer;
  }
}
