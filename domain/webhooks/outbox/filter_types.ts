/**
 * Typed filters: a filter checked, when it is saved, against the JSON Schemas of the event types its endpoint
 * subscribes to (catalogue.ts), so that `data.bank_transaction.value > 1000` (a decimal written as text compared with
 * a number, which errs at every event and delivers nothing) is refused with its position instead of saved
 * (docs/webhooks.md, "Filters", "Checked against the event types"). A file of its own because it knows the catalogue,
 * which filters.ts (imported by the fan-out the catalogue's events.ts holds) must not.
 *
 * How: `@marcbachmann/cel-js`'s checker, given `data` as a typed object built from the schemas' `data`, refuses an
 * operator between types that have none (string > int) and a field the object lacks. Evaluation stays untyped
 * (filters.ts): this check only decides what is saved, so a filter stored before it runs as it always did.
 */

import { Environment } from "@marcbachmann/cel-js";
import { catalogueEntry, type JsonSchema } from "./catalogue.ts";
import { EVENT_TYPES, type EventType, OPERATIONAL_EVENT_TYPES } from "./events.ts";
import { position } from "./filters.ts";

/** A CEL type (`"string"`, `"dyn"`, `"list<string>"`) or an object's fields, as cel-js declares a variable's schema. */
type CelSchema = string | { [field: string]: CelSchema };

/**
 * The CEL type of a value a JSON Schema describes, as evaluation sees it. Numbers are `dyn`, not `double`: JSON
 * numbers are doubles when evaluated, and `data.attempts == 10` is true at run time on an untyped value, which a
 * declared `double` would refuse (CEL has no `double == int`). A value that may be null is `dyn` too
 * (`data.x == null` is then allowed). An object with its properties listed is an object with those fields only.
 */
export function celSchemaOf(schema: JsonSchema | undefined): CelSchema {
  if (!schema) return "dyn";
  const type = schema.type;
  if (Array.isArray(type)) return type.length === 1 ? celSchemaOf({ ...schema, type: type[0] }) : "dyn";
  if (type === undefined) {
    // `const` and `enum` without a type: a string when every value is one
    const values = "const" in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : null;
    return values && values.length > 0 && values.every((v) => typeof v === "string") ? "string" : "dyn";
  }
  if (type === "string") return "string";
  if (type === "boolean") return "bool";
  if (type === "array") {
    const item = celSchemaOf(schema.items as JsonSchema | undefined);
    return typeof item === "string" && item !== "dyn" ? `list<${item}>` : "list<dyn>";
  }
  if (type === "object") {
    const properties = schema.properties as Record<string, JsonSchema> | undefined;
    if (!properties || schema.additionalProperties !== false) return "map<string, dyn>";
    return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, celSchemaOf(v)]));
  }
  return "dyn";
}

/**
 * One object with the fields of every type's `data`: a field any of them has is known, with its type when they all
 * agree, `dyn` when not. A filter naming a field one subscribed type has is fine; the others' events then need a
 * guard (`event_type == ...` or `has()`), or they count as the endpoint's filter errors (docs/webhooks.md, Filters).
 */
function merge(a: CelSchema | undefined, b: CelSchema): CelSchema {
  if (a === undefined) return b;
  if (typeof a === "string" || typeof b === "string") return a === b ? a : "dyn";
  const out: Record<string, CelSchema> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = merge(out[k], v);
  return out;
}

/** The event types `enabled_events` subscribes to: `*` is every type but the operational ones, which are named. */
export function subscribedTypes(enabledEvents: readonly string[]): EventType[] {
  const operational: readonly string[] = OPERATIONAL_EVENT_TYPES;
  const all = enabledEvents.includes("*");
  return EVENT_TYPES.filter((t) => enabledEvents.includes(t) || (all && !operational.includes(t)));
}

/** `data`'s fields for these subscriptions, as cel-js declares them. */
export function dataSchemaFor(enabledEvents: readonly string[]): Record<string, CelSchema> {
  let out: CelSchema | undefined;
  for (const t of subscribedTypes(enabledEvents)) {
    const body = catalogueEntry(t).schema.properties as Record<string, JsonSchema>;
    out = merge(out, celSchemaOf(body.data));
  }
  return typeof out === "object" ? out : {};
}

type Typed = { env: Environment; data: Record<string, CelSchema> };
/** Environments by subscribed types: few distinct sets exist, and one takes about a millisecond to declare. */
const environments = new Map<string, Typed>();
const MAX_ENVIRONMENTS = 256;

function typedFor(enabledEvents: readonly string[]): Typed {
  const key = subscribedTypes(enabledEvents).join(",");
  const hit = environments.get(key);
  if (hit) return hit;
  const data = dataSchemaFor(enabledEvents);
  // the same limits as evaluation's environment (filters.ts): a filter past them never gets here
  const env = new Environment({ limits: { maxAstNodes: 200, maxDepth: 32 } })
    .registerVariable("event_type", "string")
    .registerVariable({ name: "data", schema: data });
  if (environments.size >= MAX_ENVIRONMENTS) environments.delete(environments.keys().next().value!);
  const typed = { env, data };
  environments.set(key, typed);
  return typed;
}

type AstNode = { op: string; args: unknown; start: number; end: number };

/**
 * The first `has(data.a.b)` whose field no subscribed type has (the checker lets `has()` name any field): its path
 * from `data`, followed through the known objects; a `dyn` or a map on the way ends what can be known.
 */
function unknownHas(node: unknown, data: Record<string, CelSchema>): { at: number; field: string } | null {
  if (Array.isArray(node)) {
    for (const n of node) {
      const found = unknownHas(n, data);
      if (found) return found;
    }
    return null;
  }
  if (!node || typeof node !== "object" || !("op" in node)) return null;
  const { op, args } = node as AstNode;
  if (op === "call" && Array.isArray(args) && args[0] === "has" && Array.isArray(args[1])) {
    const path: { name: string; at: number }[] = [];
    let at: unknown = args[1][0];
    while (at && typeof at === "object" && (at as AstNode).op === ".") {
      const [inner, name] = (at as AstNode).args as [unknown, string];
      // the field's own position: a selection's node starts where its whole chain does
      path.unshift({ name, at: (at as AstNode).end - name.length });
      at = inner;
    }
    if ((at as AstNode | undefined)?.op === "id" && (at as AstNode).args === "data") {
      let schema: CelSchema = data;
      for (const step of path) {
        if (typeof schema === "string") break;
        if (!(step.name in schema)) return { at: step.at, field: step.name };
        schema = schema[step.name];
      }
    }
  }
  return unknownHas(args, data);
}

const NUMBER_VS_TEXT =
  /no such overload: (dyn<)?(string>? (<|<=|>|>=|==|!=) (int|uint|double)|(int|uint|double)>? (<|<=|>|>=|==|!=) string)/;
const TEXT_HINT = " (amounts and other numbers written as text compare as numbers with double(), such as " +
  "double(data.bank_transaction.value) > 1000.0)";

/**
 * Why `text`, a filter filters.ts accepts, does not type-check against the event types `enabledEvents` subscribes
 * to, with the position of the fault ("line 1, column 1: no such overload: string > int ..."), or null when it does.
 */
export function filterTypeProblem(text: string, enabledEvents: readonly string[]): string | null {
  const { env, data } = typedFor(enabledEvents);
  const checked = env.check(text);
  const types = enabledEvents.join(", ");
  if (!checked.valid) {
    const err = checked.error as Error & { range?: { start: number } };
    const summary = err.message.split("\n")[0];
    const at = position(text, err.range?.start ?? 0);
    const key = /^No such key: (.+)$/.exec(summary);
    if (key) return `${at}: no event type the endpoint subscribes to (${types}) has the field ${key[1]} there`;
    return `${at}: ${summary}${NUMBER_VS_TEXT.test(summary) ? TEXT_HINT : ""}`;
  }
  const parsed = env.parse(text) as unknown as { ast: unknown };
  const unknown = unknownHas(parsed.ast, data);
  if (unknown) {
    return `${position(text, unknown.at)}: no event type the endpoint subscribes to (${types}) has the field ` +
      `${unknown.field} there`;
  }
  return null;
}
