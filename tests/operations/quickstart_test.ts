/**
 * The README's quickstart, run as written: its shell block is taken from README.md and run with bash on a fresh
 * database, and it must end with `deno task receive` printing a verified webhook that names its endpoint. Only the
 * ports change (the README's 4000 and 4001 may be taken on this machine), so a quickstart that breaks fails here. It
 * must run quietly: nothing on stderr that looks like an error while it waits for the receiver (curl's `(7)` and `(22)`),
 * and no `Task ...` line of Deno's. A copy with its person step broken must then stop at that step, showing the
 * service's error.
 */
import assert from "node:assert/strict";
import { freePort } from "../support/free_port.ts";
import { dropDatabase, perTestDatabaseUrl } from "../support/databases.ts";

const root = new URL("../..", import.meta.url).pathname;

/** The quickstart's shell block: the README block under "## Quickstart" that starts the service. */
export function quickstartBlock(readme: string): string {
  const section = readme.split(/\n(?=## )/).find((s) => s.startsWith("## Quickstart"));
  assert.ok(section, "README.md has no Quickstart section");
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => /^deno task (--quiet )?start &/m.test(b));
  assert.ok(block, "the Quickstart has no shell block that starts the service");
  return block;
}

/** `text` with every `from` replaced, failing when there is none: the test must know every address it moves. */
function moved(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `the quickstart no longer has ${from}`);
  return text.replaceAll(from, to);
}

Deno.test("the README quickstart, run as written, ends with a webhook the receiver verified", async (t) => {
  const block = quickstartBlock(await Deno.readTextFile(`${root}README.md`));
  assert.ok(block.trim().split("\n").filter((l) => !/^\s/.test(l)).length <= 9, "more than 9 commands");
  const servicePort = freePort();
  const receiverPort = freePort();
  let script = moved(block, "127.0.0.1:4000", `127.0.0.1:${servicePort}`);
  script = moved(script, "127.0.0.1:4001", `127.0.0.1:${receiverPort}`);
  script = moved(script, "deno task --quiet receive &", `deno task --quiet receive --port ${receiverPort} &`);

  const databaseUrl = perTestDatabaseUrl("quickstart");
  // what a newcomer's shell has, and no more: no test settings, the service's defaults (development)
  const env: Record<string, string> = { DATABASE_URL: databaseUrl, PORT: String(servicePort) };
  for (const name of ["PATH", "HOME", "DENO_DIR", "TMPDIR", "USER", "PGUSER"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  const started = performance.now();
  // a session of its own, so the service and the receiver the block leaves running are stopped with it
  const child = new Deno.Command("setsid", {
    args: ["bash", "-c", `set -eo pipefail\n${script}\necho QUICKSTART-DONE\nwait`],
    cwd: root,
    clearEnv: true,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let stdout = "";
  let stderr = "";
  const decoder = new TextDecoder();
  const errDecoder = new TextDecoder();
  const stderrDone = child.stderr.pipeTo(new WritableStream({ write: (c) => void (stderr += errDecoder.decode(c)) }));
  let verifiedAt: number | null = null;
  let grace: ReturnType<typeof setTimeout> | undefined;
  const verified = new Promise<void>((resolve) => {
    child.stdout.pipeTo(
      new WritableStream({
        write: (chunk) => {
          stdout += decoder.decode(chunk);
          if (verifiedAt === null && /^verified {2}identified /m.test(stdout)) {
            verifiedAt = performance.now();
            resolve();
          }
          // the block ran to its end: the webhook has 30 seconds more to arrive
          if (stdout.includes("QUICKSTART-DONE") && grace === undefined) grace = setTimeout(resolve, 30_000);
        },
      }),
    ).catch(() => {}).finally(() => resolve());
  });
  let exited = false;
  const status = child.status.finally(() => exited = true);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => deadline = setTimeout(resolve, 180_000));
  try {
    await Promise.race([verified, timeout, status.then(() => new Promise((r) => timer = setTimeout(r, 2000)))]);
    const seconds = verifiedAt === null ? null : (verifiedAt - started) / 1000;
    const said = `stdout:\n${stdout.slice(-6000)}\nstderr:\n${stderr.slice(-3000)}`;
    assert.ok(seconds !== null, `no verified webhook\n${said}`);
    console.log(`quickstart: ${seconds.toFixed(1)} s from the first command to the verified webhook`);
    assert.ok(stdout.includes("QUICKSTART-DONE"), `the block did not run to its end\n${said}`);
    assert.doesNotMatch(stdout, /NOT VERIFIED/, said);
    // a quiet start: no installer noise, and one line naming the Postgres used, without a password
    assert.doesNotMatch(stderr, /Initialize|Ignored build scripts|Warning/, said);
    // nothing a newcomer would take for an error while the block waits, and only the values of the tasks it reads
    assert.doesNotMatch(stderr, /curl: \(/, said);
    assert.doesNotMatch(stderr, /Task\b[^\n]*deno install/, said);
    const postgresLines = stdout.split("\n").filter((l) => l.includes('"msg":"postgres"'));
    assert.equal(postgresLines.length, 1, said);
    assert.match(postgresLines[0], /"server":"DATABASE_URL","url":"postgres:\/\/[^"@]+\/payments_test_quickstart_/);
    // the delivery's line names the endpoint it came from: the one the receiver subscribed
    const subscribed = /^receiver: endpoint ([0-9a-f-]{36}) of company /m.exec(stdout)?.[1];
    assert.ok(subscribed, said);
    assert.match(stdout, new RegExp(`^verified {2}identified .*  endpoint ${subscribed}$`, "m"), said);

    // The service and the receiver of the block still run: a copy of the block without its two background commands
    // (they would find their ports taken), with an invalid CPF, must stop at the person call with its error shown.
    const broken = moved(
      script.split("\n").filter((line) => !/^deno task (--quiet )?(start|receive)\b.*&/.test(line)).join("\n"),
      '"52998224725"',
      '"52998224700"',
    );
    const run = async (prelude: string) => {
      const out = await new Deno.Command("bash", {
        args: ["-c", `${prelude}${broken}\necho BROKEN-DONE`],
        cwd: root,
        clearEnv: true,
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).output();
      const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
      return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
    };
    const refusedPerson = /curl: \(22\)[^\n]*422[\s\S]*\{"errors":\{[^\n]*"document_number"/;
    const payinAnswer = /"data"|"errors"|Malformed/;

    await t.step(
      "as this test runs the block (set -eo pipefail): the person step stops it, its error shown",
      async () => {
        const out = await run("set -eo pipefail\n");
        const told = `exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`;
        assert.notEqual(out.code, 0, told);
        assert.doesNotMatch(out.stdout, /BROKEN-DONE/, told);
        assert.match(out.stderr, refusedPerson, told);
        assert.doesNotMatch(out.stdout, payinAnswer, told);
        assert.doesNotMatch(out.stderr, /Malformed/, told);
        assert.doesNotMatch(out.stderr, /no subject/, "it stopped before the pay-in line");
      },
    );

    await t.step("pasted into a shell without set -e: the pay-in refuses to run without a subject", async () => {
      const out = await run("");
      const told = `exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`;
      assert.notEqual(out.code, 0, told);
      assert.doesNotMatch(out.stdout, /BROKEN-DONE/, told);
      assert.match(out.stderr, refusedPerson, told);
      assert.match(out.stderr, /SUBJECT: no subject: see the answer above/, told);
      assert.doesNotMatch(out.stdout, payinAnswer, told);
      assert.doesNotMatch(out.stderr, /Malformed/, told);
    });
  } finally {
    clearTimeout(timer);
    clearTimeout(deadline);
    clearTimeout(grace);
    if (!exited) {
      try {
        Deno.kill(-child.pid, "SIGTERM");
      } catch { /* already gone */ }
    }
    const killer = setTimeout(() => {
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch { /* already gone */ }
    }, 15_000);
    await status;
    await Promise.all([verified, stderrDone.catch(() => {})]);
    clearTimeout(killer);
    await dropDatabase(databaseUrl);
  }
});
