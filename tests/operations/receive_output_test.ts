/**
 * What `deno task receive` prints for a delivery (commands/delivery_line.ts): anyone who reaches its port writes the
 * body, and the terminal must show that body as text, never run it; a verified one names the endpoint it came from.
 */
import assert from "node:assert/strict";
import { deliveryLine, printable } from "../../commands/delivery_line.ts";

const ESC = "\u001b";
/** Anything a terminal acts on rather than shows: C0, DEL, C1 (CSI is U+009B), separators, bidirectional overrides. */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

Deno.test("deno task receive prints what a sender wrote with its control characters escaped", async (t) => {
  await t.step("a delivery of the service prints as before: verified, type, record id, data", () => {
    const body = JSON.stringify({ id: "ev-1", type: "identified", data: { transaction_id: "t-1" } });
    assert.equal(
      deliveryLine(true, body, { "webhook-id": "0193a4c2-0000-7000-8000-000000000001" }),
      'verified  identified  0193a4c2-0000-7000-8000-000000000001  {"transaction_id":"t-1"}',
    );
    const legacy = JSON.stringify({ notification: { type: "identified", id: "t-2" } });
    assert.equal(
      deliveryLine(true, legacy, {}),
      'verified  identified  ?  {"type":"identified","id":"t-2"}',
    );
  });

  await t.step("a verified line ends with the endpoint it came from, after the fields the quickstart reads", () => {
    const body = JSON.stringify({ id: "ev-1", type: "identified", data: { transaction_id: "t-1" } });
    const endpoint = "0193a4c2-0000-7000-8000-0000000000e1";
    const line = deliveryLine(true, body, { "webhook-id": "0193a4c2-0000-7000-8000-000000000001" }, endpoint);
    assert.equal(
      line,
      'verified  identified  0193a4c2-0000-7000-8000-000000000001  {"transaction_id":"t-1"}  endpoint ' + endpoint,
    );
    // the match of tests/operations/quickstart_test.ts still holds
    assert.match(line, /^verified {2}identified /m);
    // a delivery that does not verify names no endpoint: its sender may be anyone
    assert.doesNotMatch(deliveryLine(false, body, {}, endpoint), /endpoint/);
  });

  await t.step("a forged red 'verified' line in the type, the data and the record id stays on the NOT line", () => {
    const forged = `${ESC}[2K\r${ESC}[31mverified${ESC}[0m  identified`;
    const bodies = [
      JSON.stringify({ type: forged, data: { note: `\u009b31m\u202eflipped\n${forged}` } }),
      JSON.stringify({ notification: { type: forged } }),
      `not json ${forged}\u0007`,
      JSON.stringify(null),
      JSON.stringify({ type: { nested: forged } }),
    ];
    for (const body of bodies) {
      const line = deliveryLine(false, body, { "webhook-id": `${ESC}]0;title\u0007\r\nverified  x` });
      assert.ok(line.startsWith("NOT VERIFIED  "), line);
      assert.doesNotMatch(line, CONTROL, JSON.stringify(line));
    }
    const line = deliveryLine(false, JSON.stringify({ type: forged, data: {} }), {});
    assert.equal(line, "NOT VERIFIED  \\x1b[2K\\x0d\\x1b[31mverified\\x1b[0m  identified  ?  {}");
  });

  await t.step("each control character is written as its escape, the rest of the text as it was", () => {
    assert.equal(
      printable("a\u0000b\u007fc\u009bd\u2028e\u202ef\u2066g"),
      "a\\x00b\\x7fc\\x9bd\\u2028e\\u202ef\\u2066g",
    );
    assert.equal(printable("ação ✓ 日本 \\x1b"), "ação ✓ 日本 \\x1b");
  });
});
