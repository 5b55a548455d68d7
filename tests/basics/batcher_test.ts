import assert from "node:assert/strict";
import { Batcher } from "../../domain/basics/batcher.ts";

type Item = { key: string; n: number };

Deno.test("a batcher writes what waits together, one of each key before a second of any", async (t) => {
  await t.step("a quiet caller is written at once, alone", async () => {
    const batches: Item[][] = [];
    const batcher = new Batcher((items: Item[]) => {
      batches.push(items);
      return Promise.resolve(items.map((i) => i.n * 10));
    }, { keyOf: (i) => i.key });
    assert.equal(await batcher.submit({ key: "a", n: 1 }), 10);
    assert.equal(await batcher.submit({ key: "a", n: 2 }), 20);
    assert.deepEqual(batches.map((b) => b.length), [1, 1]);
  });

  await t.step("items that arrive during a write go in the next, round-robin across keys", async () => {
    const batches: string[][] = [];
    const gate = Promise.withResolvers<void>();
    const batcher = new Batcher(async (items: Item[]) => {
      batches.push(items.map((i) => `${i.key}${i.n}`));
      if (batches.length === 1) await gate.promise;
      return items.map((i) => i.n);
    }, { keyOf: (i) => i.key, maxWriters: 1, maxBatch: 3 });
    const first = batcher.submit({ key: "a", n: 0 });
    const rest = [1, 2, 3, 4].map((n) => batcher.submit({ key: "a", n }));
    rest.push(batcher.submit({ key: "b", n: 1 }));
    gate.resolve();
    assert.deepEqual(await Promise.all([first, ...rest]), [0, 1, 2, 3, 4, 1]);
    assert.deepEqual(batches, [["a0"], ["a1", "b1", "a2"], ["a3", "a4"]]);
  });

  await t.step("a write that throws rejects every item of its batch, and the next batch still goes", async () => {
    let calls = 0;
    const batcher = new Batcher((items: Item[]) => {
      if (calls++ === 0) return Promise.reject(new Error("database away"));
      return Promise.resolve(items.map(() => "ok"));
    }, { keyOf: (i) => i.key });
    await assert.rejects(batcher.submit({ key: "a", n: 1 }), /database away/);
    assert.equal(await batcher.submit({ key: "a", n: 2 }), "ok");
  });
});
