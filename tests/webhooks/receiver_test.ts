/**
 * The tests' own receiver (tests/support/webhook_receiver.ts) refuses every body the catalogue does not describe, so a
 * story that receives a wrong body fails.
 */
import assert from "node:assert/strict";
import { catalogueEntry } from "../../domain/webhooks/outbox/catalogue.ts";
import { bodyViolation, EXAMPLE, seqId, seqOf, startReceiver } from "../support/webhook_receiver.ts";

const { example } = catalogueEntry("document_required");
const { id, type, data } = example;

Deno.test("the tests' receiver refuses every body the catalogue does not describe", async (t) => {
  await t.step("each format the service sends passes when its data is the catalogue's", () => {
    const secret = "s".repeat(64);
    for (
      const body of [
        example,
        { ...example, secret },
        { id, type },
        { id, type, secret },
        { notification: { type, ...data } },
        { notification: { type, ...data, secret } },
        { notification: { type, id } },
        { notification: { type, id, secret } },
        { id, type: "documents_needed", data },
        { notification: { type: "documents_needed", ...data, secret } },
      ]
    ) assert.equal(bodyViolation(body), null, JSON.stringify(body));
  });

  await t.step("made-up, missing, extra or mistyped data is a violation in every format", () => {
    for (
      const body of [
        { id, type, data: { seq: 1 } },
        { id, type, data: { ...data, extra: 1 } },
        { id: "d1", type, data },
        { id, type: "identified", data },
        { id, type, data, other: 1 },
        { id, type: "documents_needed", data: { seq: 1 } },
        { notification: { type, seq: 1 } },
        { notification: { type, id: "d1" } },
        { notification: { type, ...data }, extra: 1 },
        { id, type: 7 },
        [example],
        null,
      ]
    ) assert.notEqual(bodyViolation(body), null, JSON.stringify(body));
  });

  await t.step("close() fails the test that received an invalid body, naming the path and the body", async () => {
    const rx = startReceiver();
    for (const [path, body] of [["/good", EXAMPLE], ["/bad", JSON.stringify({ id, type, data: { seq: 1 } })]]) {
      const res = await fetch(`${rx.url}${path}`, { method: "POST", body });
      assert.equal(await res.text(), "ok", "the answer stays the one the test chose");
    }
    assert.equal(rx.violations.length, 1);
    await assert.rejects(rx.close(), (e: Error) => e.message.includes("/bad: snapshot of document_required"));
  });

  await t.step("seqId carries a number in a uuid and seqOf reads it back", () => {
    assert.equal(bodyViolation({ id, type: "identified", data: { transaction_id: seqId(42) } }), null);
    assert.equal(seqOf(seqId(42)), 42);
  });
});
