/**
 * A batch's body (domain/webhooks/engine/batches.ts): the array of the bodies its records would have one by one, and
 * the 1 MB bound that stops a batch growing before its array would pass it (docs/webhooks.md, "Batches").
 */
import assert from "node:assert/strict";
import { batchBody, fittingCount, MAX_BATCH_BYTES } from "../../domain/webhooks/engine/batches.ts";

Deno.test("a batch's body and its size bound", async (t) => {
  await t.step("the array holds each body as sent alone, in order", () => {
    const bodies = [JSON.stringify({ id: "a", type: "identified" }), JSON.stringify({ id: "b", type: "identified" })];
    const body = batchBody(bodies);
    assert.deepEqual(JSON.parse(body), bodies.map((b) => JSON.parse(b)));
    assert.equal(new TextEncoder().encode(body).length, 2 + bodies[0].length + 1 + bodies[1].length);
  });

  await t.step("a batch stops before its array would pass 1 MB, counted in bytes", () => {
    // 4 bodies of 300,000 bytes: three make 900,004 bytes with brackets and commas, four would pass 1,048,576
    const big = JSON.stringify({ id: "x", pad: "é".repeat(150_000 - 10) });
    const bytes = new TextEncoder().encode(big).length;
    assert.ok(bytes > 299_000 && bytes < 300_001, `${bytes}`);
    const count = fittingCount([big, big, big, big]);
    assert.equal(count, 3);
    assert.ok(new TextEncoder().encode(batchBody([big, big, big])).length <= MAX_BATCH_BYTES);
    // exactly at the bound fits; one byte more does not
    const exact = "x".repeat(MAX_BATCH_BYTES - 2);
    assert.equal(fittingCount([exact, "y"]), 1);
    assert.equal(fittingCount([exact]), 1);
    assert.equal(fittingCount(["x".repeat(MAX_BATCH_BYTES - 4), "y"]), 2);
  });

  await t.step("a body larger than the bound goes alone", () => {
    assert.equal(fittingCount(["x".repeat(MAX_BATCH_BYTES + 10), "y"]), 1);
  });
});
