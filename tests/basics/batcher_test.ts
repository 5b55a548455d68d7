/**
 * The `Batcher` of domain/basics/batcher.ts on its own, no database: who is written together and in what order, and
 * what a failed write does to its batch. The webhook recorder relies on these rules; here they are seen alone.
 */
import assert from "node:assert/strict";
import { Batcher } from "../../domain/basics/batcher.ts";

type Item = { key: string; n: number };

/** `promise`'s value, or "still waiting" after a second (the writes here take no time: none should wait that long). */
function soon<T>(promise: Promise<T>): Promise<T | "still waiting"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"still waiting">((resolve) => timer = setTimeout(() => resolve("still waiting"), 1_000));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

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
    // b1 has nothing else pending: written at once, beside a0 (the next step); b2 and b3 take turns with a's
    rest.push(...[1, 2, 3].map((n) => batcher.submit({ key: "b", n })));
    assert.equal(await soon(rest[4]), 1, "b1 was written while a0's write was held");
    gate.resolve();
    assert.deepEqual(await Promise.all([first, ...rest]), [0, 1, 2, 3, 4, 1, 2, 3]);
    assert.deepEqual(batches, [["a0"], ["b1"], ["a1", "b2", "a2"], ["b3", "a3", "a4"]]);
  });

  await t.step(
    "a key with nothing else pending is written at once, beside the writes of another key's backlog",
    async () => {
      const batches: string[][] = [];
      const gate = Promise.withResolvers<void>();
      const batcher = new Batcher(async (items: Item[]) => {
        batches.push(items.map((i) => `${i.key}${i.n}`));
        if (items.some((i) => i.key === "busy")) await gate.promise;
        return items.map((i) => i.n);
      }, { keyOf: (i) => i.key, maxWriters: 1 });
      const backlog = [0, 1, 2].map((n) => batcher.submit({ key: "busy", n }));
      // the one writer holds busy0 until the gate opens; busy1 and busy2 wait for it
      assert.equal(await soon(batcher.submit({ key: "lone", n: 7 })), 7, "the lone key did not wait for the backlog");
      assert.equal(await soon(batcher.submit({ key: "lone", n: 8 })), 8, "nor did its next item");
      gate.resolve();
      assert.deepEqual(await Promise.all(backlog), [0, 1, 2]);
      assert.deepEqual(batches, [["busy0"], ["lone7"], ["lone8"], ["busy1", "busy2"]]);
    },
  );

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
