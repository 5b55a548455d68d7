/**
 * `deno task test` itself (tests/run.ts): which Postgres it picks, that a failing test fails the run, and that the
 * databases a run leaves behind are dropped.
 */
import assert from "node:assert/strict";
import { databaseExists, DEFAULT_TEST_DATABASE_URL } from "../support/databases.ts";
import { accepts, freePort } from "../support/free_port.ts";

const root = new URL("../..", import.meta.url).pathname;
const PROBE = "tests/operations/test_runner_probe.ts";
const RUN_TIMEOUT_MS = 180_000;

type Report = { url: string; database: string; dataDirectory: string; port: number };
type Run = { code: number; stderr: string; report: Report | null };

/**
 * `deno task test` on the probe alone, as a developer runs it: the environment of this process without what the
 * outer run set, plus `env`.
 */
async function runRunner(env: Record<string, string>): Promise<Run> {
  const report = await Deno.makeTempFile({ prefix: "runner-probe-", suffix: ".json" });
  const inherited = Deno.env.toObject();
  delete inherited.TEST_DATABASE_URL;
  delete inherited.TEST_RUN_ID;
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "tests/run.ts", "--no-check", PROBE],
      cwd: root,
      clearEnv: true,
      env: { ...inherited, NO_COLOR: "1", PROBE_REPORT: report, ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    const out = await child.output();
    clearTimeout(timer);
    const text = await Deno.readTextFile(report);
    return {
      code: out.code,
      stderr: new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout),
      report: text ? JSON.parse(text) : null,
    };
  } finally {
    await Deno.remove(report);
  }
}

Deno.test("deno task test picks its Postgres server and cleans up after itself", async (t) => {
  await t.step("with nothing at the default address, the suite runs on an embedded server of its own", async () => {
    const nobodyPort = freePort();
    const run = await runRunner({ TEST_DEFAULT_DATABASE_URL: `postgres://127.0.0.1:${nobodyPort}/payments_test` });
    assert.equal(run.code, 0, run.stderr);
    const announced = /embedded Postgres for this run on port (\d+), data in (\S+)/.exec(run.stderr);
    assert.ok(announced, run.stderr);
    const [port, dir] = [Number(announced[1]), announced[2]];
    const report = run.report!;
    // the tests ran against that server, on neither the default port nor the one of `deno task start`
    assert.equal(report.port, port);
    assert.equal(new URL(report.url).port, String(port));
    assert.notEqual(port, nobodyPort);
    assert.notEqual(port, 5432);
    assert.notEqual(port, 54329);
    assert.ok(report.dataDirectory.startsWith(`${dir}/`), report.dataDirectory);
    assert.ok(!report.dataDirectory.includes(".data/postgres"), report.dataDirectory);
    // stopped and removed at the end
    assert.equal(await accepts(port), false, "the embedded server still accepts connections");
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
  });

  const server = Deno.env.get("TEST_DATABASE_URL") || DEFAULT_TEST_DATABASE_URL;

  await t.step("a failing test fails the run, and the databases it left behind are dropped", async () => {
    const run = await runRunner({ TEST_DATABASE_URL: server, PROBE_FAIL: "1" });
    assert.equal(run.code, 1, run.stderr);
    const report = run.report!;
    assert.match(report.database, /^payments_test_runner_probe_/);
    assert.match(run.stderr, new RegExp(`dropped 1 database\\(s\\) left by failed tests: ${report.database}`));
    assert.equal(await databaseExists(server, report.database), false);
  });

  await t.step("a TEST_DATABASE_URL that does not answer is an error naming it, with no fallback", async () => {
    const missing = `postgres://probe:hidden@127.0.0.1:${freePort()}/payments_test`;
    const run = await runRunner({ TEST_DATABASE_URL: missing });
    assert.equal(run.code, 2, run.stderr);
    assert.ok(run.stderr.includes(missing.replace("hidden", "***")), run.stderr);
    assert.ok(!run.stderr.includes("hidden"), "the password is not printed");
    assert.ok(!run.stderr.includes("embedded"), run.stderr);
    assert.equal(run.report, null, "no test ran");
  });
});
