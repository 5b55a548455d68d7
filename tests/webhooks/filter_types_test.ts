/**
 * The typed check of filters on its own (no database): a filter against the JSON Schemas of the event types its
 * endpoint subscribes to (docs/webhooks.md, "Filters", "Checked against the event types"): what is refused and
 * where, what passes, and how several types and `*` combine. The story over HTTP is typed_filters_test.ts.
 */
import assert from "node:assert/strict";
import { celSchemaOf, dataSchemaFor, filterTypeProblem } from "../../domain/webhooks/outbox/filter_types.ts";
import { filterProblem } from "../../domain/webhooks/outbox/filters.ts";
import { CATALOGUE } from "../../domain/webhooks/outbox/catalogue.ts";

const BANK = ["non_identified_bank_transaction"];

Deno.test("the issue's filter, a decimal as text compared with a number, is refused where it starts", () => {
  const problem = filterTypeProblem("data.bank_transaction.value > 1000", BANK);
  assert.match(
    problem!,
    /^line 1, column 1: no such overload: string > int \(amounts and other numbers written as text compare/,
  );
  assert.match(problem!, /double\(data\.bank_transaction\.value\) > 1000\.0/, "it says how to write it");
  // on any line: the position is the comparison's
  assert.match(
    filterTypeProblem(
      'event_type == "non_identified_bank_transaction" &&\n  data.bank_transaction.value >= 5000',
      BANK,
    )!,
    /^line 2, column 3: no such overload: string >= int/,
  );
  assert.match(
    filterTypeProblem("1000 < data.bank_transaction.value", BANK)!,
    /^line 1, column 1: no such overload: int < string/,
  );
  // the same under `*`, which takes the bank transaction in
  assert.match(filterTypeProblem("data.bank_transaction.value > 1000", ["*"])!, /no such overload: string > int/);
});

Deno.test("a decimal as text is compared as a number with double(), or as text", () => {
  for (
    const text of [
      "double(data.bank_transaction.value) > 1000.0",
      "double(data.bank_transaction.value) >= 5000.0",
      'data.bank_transaction.value == "5000.00"',
      'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0',
    ]
  ) assert.equal(filterTypeProblem(text, BANK), null, text);
});

Deno.test("a field no subscribed type has is refused, naming the field where it is written", () => {
  assert.equal(
    filterTypeProblem('data.bank_transaction.valeu == "1"', BANK),
    "line 1, column 23: no event type the endpoint subscribes to (non_identified_bank_transaction) has the field " +
      "valeu there",
  );
  assert.match(
    filterTypeProblem('data.currency == "BRL"', ["*"])!,
    /^line 1, column 6: .* \(\*\) has the field currency/,
  );
  // has() names a field too
  assert.equal(
    filterTypeProblem("has(data.bank_transaction.spei)", BANK),
    "line 1, column 27: no event type the endpoint subscribes to (non_identified_bank_transaction) has the field " +
      "spei there",
  );
  assert.equal(filterTypeProblem("has(data.bank_transaction.spei_concepto_de_pago)", BANK), null);
  // a type without the field: `identified` carries only transaction_id
  assert.match(filterTypeProblem('data.bank_transaction.value == "1"', ["identified"])!, /field bank_transaction/);
});

Deno.test("several types: a field one of them has is known; a field none has is refused", () => {
  const two = ["identified", "non_identified_bank_transaction"];
  assert.equal(filterTypeProblem('data.transaction_id.startsWith("0193")', two), null);
  assert.equal(filterTypeProblem("double(data.bank_transaction.value) > 10.0", two), null);
  assert.match(
    filterTypeProblem('data.wire_id == "x"', two)!,
    /\(identified, non_identified_bank_transaction\) has the field wire_id/,
  );
  // subscription's fields over its four types, each adding its own
  const subs = ["subscription_qr_code_generated", "subscription_canceled"];
  assert.equal(filterTypeProblem('data.subscription.qr_code != "" || data.subscription.canceled_by_payer', subs), null);
  assert.match(
    filterTypeProblem('data.subscription.canceled_by_payer == "yes"', subs)!,
    /no such overload: bool == string/,
  );
});

Deno.test("`*` is every type but the operational ones, which an endpoint names to get", () => {
  assert.match(filterTypeProblem("data.consecutive_failures > 3", ["*"])!, /field consecutive_failures/);
  assert.equal(filterTypeProblem("data.consecutive_failures > 3", ["endpoint.failing"]), null);
  assert.equal(filterTypeProblem("data.consecutive_failures > 3", ["*", "endpoint.failing"]), null);
});

Deno.test("what evaluation accepts stays accepted: numbers, nulls, lists, event_type", () => {
  // a JSON number is a double when evaluated, and `== 10` holds on it: numbers are checked as dyn
  assert.equal(filterTypeProblem("data.consecutive_failures == 10", ["endpoint.failing"]), null);
  assert.equal(filterTypeProblem("data.attempts >= 3.0", ["delivery.exhausted"]), null);
  // a field that may be null may be compared with null
  assert.equal(filterTypeProblem("data.bank_transaction.subject.bank_account.branch_number == null", BANK), null);
  assert.equal(filterTypeProblem('data.transaction_ids.exists(id, id.startsWith("0193"))', ["*"]), null);
  assert.equal(filterTypeProblem('"proof_of_address" in data.required_documents', ["document_required"]), null);
  assert.equal(filterTypeProblem('event_type in ["subject_approved", "subject_reproved"]', ["*"]), null);
  // a list of text is one: its elements are strings
  assert.match(filterTypeProblem("data.transaction_ids.exists(id, id > 3)", ["*"])!, /no such overload: string > int/);
});

Deno.test("the filters docs/webhooks.md shows pass both checks against `*`", () => {
  for (
    const text of [
      'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0',
      'event_type in ["subject_approved", "subject_reproved"]',
      'data.bank_transaction.subject.document_type == "cnpj"',
      "has(data.bank_transaction.spei_concepto_de_pago)",
      'data.transaction_ids.exists(id, id.startsWith("0193"))',
    ]
  ) {
    assert.equal(filterProblem(text), null, text);
    assert.equal(filterTypeProblem(text, ["*"]), null, text);
  }
});

Deno.test("JSON Schema to CEL: as evaluation sees JSON values", () => {
  assert.equal(celSchemaOf({ type: "string", pattern: "^x$" }), "string");
  assert.equal(celSchemaOf({ const: "paid" }), "string");
  assert.equal(celSchemaOf({ enum: ["manual", "gone"] }), "string");
  assert.equal(celSchemaOf({ enum: ["a", 1] }), "dyn");
  assert.equal(celSchemaOf({ type: ["string", "null"] }), "dyn");
  assert.equal(celSchemaOf({ type: "integer" }), "dyn");
  assert.equal(celSchemaOf({ type: "number" }), "dyn");
  assert.equal(celSchemaOf({ type: "boolean" }), "bool");
  assert.equal(celSchemaOf({ type: "array", items: { type: "string" } }), "list<string>");
  assert.equal(celSchemaOf({ type: "array", items: { type: "object" } }), "list<map<string, dyn>>");
  // a list of objects with known fields: cel-js declares no list of objects, so its elements are dyn
  const item = { type: "object", properties: { a: { type: "string" } }, additionalProperties: false };
  assert.equal(celSchemaOf({ type: "array", items: item }), "list<dyn>");
  assert.equal(celSchemaOf({ type: "object" }), "map<string, dyn>");
  assert.deepEqual(
    celSchemaOf({ type: "object", properties: { a: { type: "boolean" } }, additionalProperties: false }),
    { a: "bool" },
  );
  // two types with a field of different kinds: known, unchecked
  const merged = dataSchemaFor(["subject_reproved", "endpoint.disabled"]);
  assert.equal(merged.reason, "string");
  assert.equal(merged.subject_id, "string");
});

/** `data.<path> == <value>` (or `in` for a list's element) for every value of an example's data. */
function equalities(data: unknown, path = "data"): string[] {
  if (data === null) return [`${path} == null`];
  if (Array.isArray(data)) return data.length ? [`${JSON.stringify(data[0])} in ${path}`] : [];
  if (typeof data === "object") {
    return Object.entries(data as Record<string, unknown>).flatMap(([k, v]) => [
      `has(${path}.${k})`,
      ...equalities(v, `${path}.${k}`),
    ]);
  }
  return [`${path} == ${JSON.stringify(data)}`];
}

Deno.test("every field of every catalogue example type-checks as its value, alone, with others and under *", () => {
  for (const entry of CATALOGUE) {
    const filters = equalities(entry.example.data);
    assert.ok(filters.length > 0, entry.type);
    for (const types of [[entry.type], [entry.type, "identified"], ["*", entry.type]]) {
      for (const text of filters) assert.equal(filterTypeProblem(text, types), null, `${types}: ${text}`);
    }
  }
});
