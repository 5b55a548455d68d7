/**
 * The drainers' queue of woken endpoints (domain/webhooks/engine/wake_queue.ts), without Postgres: each endpoint once however
 * often woken, the first drainer of every endpoint before the second of any, and a drainer given back only to an
 * endpoint with fewer.
 */
import assert from "node:assert/strict";
import { WakeQueue } from "../../domain/webhooks/engine/wake_queue.ts";

Deno.test("the queue of woken endpoints", async (t) => {
  await t.step("an endpoint woken many times waits once", async () => {
    const queue = new WakeQueue();
    for (let i = 0; i < 1_000; i++) queue.wake("busy");
    assert.deepEqual(queue.size, { waiting: 1, running: 0 });
    assert.equal(await queue.take(), "busy");
    assert.deepEqual(queue.size, { waiting: 0, running: 1 });
    queue.done("busy");
    assert.deepEqual(queue.size, { waiting: 0, running: 0 });
  });

  await t.step(
    "an endpoint nobody drains goes before one already drained, whatever the order of wake-ups",
    async () => {
      const queue = new WakeQueue();
      queue.wake("busy");
      assert.equal(await queue.take(), "busy");
      queue.wake("busy"); // its backlog fans out: woken again while one run goes on
      queue.wake("quiet"); // woken after it
      assert.equal(await queue.take(), "quiet", "the first run of quiet before the second of busy");
      assert.equal(await queue.take(), "busy");
    },
  );

  await t.step("among endpoints with as many runs, the longest waiting goes first", async () => {
    const queue = new WakeQueue();
    for (const id of ["a", "b", "c"]) queue.wake(id);
    assert.deepEqual([await queue.take(), await queue.take(), await queue.take()], ["a", "b", "c"]);
  });

  await t.step("a run past its budget yields its drainer only to an endpoint with fewer runs, once", async () => {
    const queue = new WakeQueue();
    for (const id of ["busy", "busy", "quiet"]) {
      queue.wake(id);
      assert.equal(await queue.take(), id);
    }
    // busy has 2 runs, quiet 1; busy is woken again by its own fan-out
    queue.wake("busy");
    assert.equal(queue.yieldTurn("quiet"), false, "the endpoint waiting has more runs: quiet's run goes on");
    assert.equal(queue.yieldTurn("busy"), false, "nothing but busy itself waits");
    queue.wake("new");
    assert.equal(queue.yieldTurn("busy"), true, "a run of busy gives its drainer to new");
    assert.equal(queue.yieldTurn("busy"), false, "and only one: new needs one drainer");
    assert.equal(queue.yieldTurn("quiet"), false, "nor quiet's: new is promised a drainer already");
    queue.done("busy", true);
    assert.equal(await queue.take(), "new");
    assert.equal(queue.yieldTurn("busy"), false, "new has its drainer: busy's last run goes on");
  });

  await t.step("a taker waiting gets the next wake-up at once; closing hands waiting takers null", async () => {
    const queue = new WakeQueue();
    const taken = queue.take();
    queue.wake("late");
    assert.equal(await taken, "late");
    const waiting = queue.take();
    queue.close();
    assert.equal(await waiting, null);
    queue.wake("after");
    assert.equal(await queue.take(), null, "nothing is taken once closed");
  });
});
