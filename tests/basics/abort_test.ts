/** The waits an AbortSignal cuts short (domain/basics/abort.ts): a pause, and a promise raced against the signal. */
import assert from "node:assert/strict";
import { pause, raceAbort } from "../../domain/basics/abort.ts";

Deno.test("a pause ends on its time, or at once when its signal fires or has fired", async (t) => {
  await t.step("no signal: after its time", async () => {
    const started = performance.now();
    await pause(30);
    assert.ok(performance.now() - started >= 25);
  });
  await t.step("a signal that fires ends it early, and leaves no timer behind", async () => {
    const stop = new AbortController();
    const started = performance.now();
    setTimeout(() => stop.abort(), 10);
    await pause(10_000, stop.signal);
    assert.ok(performance.now() - started < 1_000);
  });
  await t.step("a signal that has fired: at once", async () => {
    const started = performance.now();
    await pause(10_000, AbortSignal.abort());
    assert.ok(performance.now() - started < 100);
  });
});

Deno.test("a promise raced against a signal: its outcome, or the abort's reason", async (t) => {
  await t.step("the work ends first: its value, or its error", async () => {
    const stop = new AbortController();
    assert.equal(await raceAbort(Promise.resolve(7), stop.signal), 7);
    await assert.rejects(raceAbort(Promise.reject(new Error("refused")), stop.signal), /refused/);
  });
  await t.step("the signal fires first: the signal's reason, or the one the caller makes of it", async () => {
    const stop = new AbortController();
    const never = new Promise<number>(() => {});
    const raced = raceAbort(never, stop.signal);
    stop.abort(new Error("stopping"));
    await assert.rejects(raced, /stopping/);
    await assert.rejects(raceAbort(never, stop.signal, () => new Error("the broker did not answer")), /did not answer/);
  });
});
