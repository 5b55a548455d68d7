/**
 * The work pool that bounds password hashes (domain/basics/work_pool.ts): its places, a key's share of them, and the
 * turns waiting keys take, told with work that ends when the test says so.
 */
import assert from "node:assert/strict";
import { PoolFull, ShareFull, WorkPool } from "../../domain/basics/work_pool.ts";

/** Work that runs until `finish` is called; `started` says whether the pool has started it. */
function held(name: string, log: string[]) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => finish = resolve);
  const state = { started: false, finish, work: () => (state.started = true, log.push(name), done.then(() => name)) };
  return state;
}

/** The outcome of `run` once the microtasks of a refusal have run: "refused: <class>" or "placed". */
async function outcome(p: Promise<unknown>): Promise<string> {
  const refused = await Promise.race([p.then(() => null, (err) => err), new Promise((r) => setTimeout(r, 5))]);
  return refused instanceof Error ? `refused: ${refused.constructor.name}` : "placed";
}

Deno.test("one key holds its share of the pool, and every other key still gets a place", async () => {
  const pool = new WorkPool({ concurrency: 1, queue: 4, perKey: 2 });
  const log: string[] = [];
  const flood = Array.from({ length: 6 }, (_, i) => held(`a${i}`, log));
  const running = flood.map((w) => pool.for("203.0.113.66").run(w.work));
  assert.deepEqual(await Promise.all(running.map(outcome)), [
    "placed",
    "placed",
    "refused: ShareFull",
    "refused: ShareFull",
    "refused: ShareFull",
    "refused: ShareFull",
  ]);
  assert.deepEqual(pool.load, { running: 1, waiting: 1 });
  const victim = held("v", log);
  const victimRun = pool.for("192.0.2.10").run(victim.work);
  assert.equal(await outcome(victimRun), "placed");
  // the attacker's places come back as its work ends, not before
  flood[0].finish();
  await running[0];
  assert.equal(await outcome(pool.for("203.0.113.66").run(held("a6", log).work)), "placed");
  assert.equal(await outcome(pool.for("203.0.113.66").run(held("a7", log).work)), "refused: ShareFull");
  assert.ok(new ShareFull() instanceof PoolFull, "whoever handles a full pool handles a full share too");
});

Deno.test("past the queue every key is refused with PoolFull: the pool's own bound still holds", async () => {
  const pool = new WorkPool({ concurrency: 1, queue: 2, perKey: 2 });
  const log: string[] = [];
  const outcomes = [];
  for (const key of ["a", "b", "c", "d"]) outcomes.push(await outcome(pool.for(key).run(held(key, log).work)));
  assert.deepEqual(outcomes, ["placed", "placed", "placed", "refused: PoolFull"]);
});

Deno.test("waiting work starts in turns, one key after the other, not in the order it came", async () => {
  const pool = new WorkPool({ concurrency: 1, queue: 10, perKey: 10 });
  const log: string[] = [];
  const a = Array.from({ length: 5 }, (_, i) => held(`a${i}`, log));
  const runs = a.map((w) => pool.for("a").run(w.work));
  const b = held("b0", log);
  runs.push(pool.for("b").run(b.work));
  const all = [...a, b];
  const finished = new Set<unknown>();
  for (let i = 0; i < all.length; i++) {
    await new Promise((r) => setTimeout(r, 1));
    const running = all.filter((w) => w.started && !finished.has(w));
    assert.equal(running.length, 1, "one at a time");
    finished.add(running[0]);
    running[0].finish();
  }
  await Promise.all(runs);
  // b's one piece of work comes right after a's running one, not behind a's four waiting
  assert.deepEqual(log, ["a0", "a1", "b0", "a2", "a3", "a4"]);
});
