/**
 * The logger of domain/basics/log.ts seen from outside a process, as an operator reads its stdout: lines are written
 * in batches, so these check that every line still arrives, whole and in order, whichever way the process ends.
 */
import assert from "node:assert/strict";

const LOG_MODULE = new URL("../../domain/basics/log.ts", import.meta.url).href;
const LINES = 500;

/** Runs a process that logs `count` lines in one tick, then `ending`; its stdout's lines, its stderr and its code. */
async function logThenEnd(ending: string, count = LINES) {
  const script = `
    import { log } from ${JSON.stringify(LOG_MODULE)};
    for (let i = 0; i < ${count}; i++) log.info("line", { i, text: "a \\"quoted\\" value\\n" });
    ${ending}
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--no-check", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  return {
    code: out.code,
    lines: stdout.split("\n").filter((l) => l !== ""),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

function assertAllLines(lines: string[], count = LINES) {
  assert.equal(lines.length, count);
  lines.forEach((text, i) => {
    const line = JSON.parse(text);
    assert.deepEqual(Object.keys(line), ["time", "level", "msg", "i", "text"]);
    assert.equal(line.level, "info");
    assert.equal(line.msg, "line");
    assert.equal(line.i, i);
    assert.equal(line.text, 'a "quoted" value\n');
    assert.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
}

Deno.test("every line logged arrives, in order, however the process ends", async (t) => {
  await t.step("when it runs out of work", async () => {
    const run = await logThenEnd("");
    assert.equal(run.code, 0);
    assertAllLines(run.lines);
  });

  await t.step("when it calls Deno.exit in the same tick (as main.ts does at shutdown)", async () => {
    const run = await logThenEnd("Deno.exit(3);");
    assert.equal(run.code, 3);
    assertAllLines(run.lines);
  });

  await t.step("when an uncaught rejection ends it: the lines before the report", async () => {
    // a few lines, logged in less than a timer's millisecond: the rejection is reported before the batch's timer runs
    const run = await logThenEnd('Promise.reject(new Error("the crash"));', 5);
    assert.equal(run.code, 1);
    assertAllLines(run.lines, 5);
    assert.match(run.stderr, /the crash/);
  });

  await t.step("an error line is written at once, after the lines before it", async () => {
    const run = await logThenEnd(
      'log.error("failed", { why: "x" }); Deno.stdout.writeSync(new TextEncoder().encode("mark\\n")); Deno.exit(0);',
    );
    assert.equal(run.code, 0);
    assertAllLines(run.lines.slice(0, LINES));
    assert.deepEqual(JSON.parse(run.lines[LINES]).msg, "failed");
    assert.equal(run.lines[LINES + 1], "mark");
  });
});

Deno.test("a line's fields are its own keys after time, level and msg, and may not replace them unseen", async () => {
  const run = await logThenEnd('log.warn("override", { msg: "other", extra: undefined, n: 1 }); log.info("bare");');
  const [override, bare] = run.lines.slice(LINES).map((l) => JSON.parse(l));
  // a field named like one of the three replaces it in place, as a spread object always did
  assert.deepEqual(Object.keys(override), ["time", "level", "msg", "n"]);
  assert.equal(override.msg, "other");
  assert.deepEqual(Object.keys(bare), ["time", "level", "msg"]);
  assert.equal(bare.msg, "bare");
});
