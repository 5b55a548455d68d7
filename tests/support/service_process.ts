/** The real service as a child process (`main.ts`), for the tests of the whole process: start-up, crash, scale-out. */
import { signToken, type TokenSettings } from "../../domain/integrators/tokens.ts";
import { freePort } from "./free_port.ts";
import { HIGH_LIMITS, TEST_JWT_SECRET, TEST_TOKENS } from "./helpers.ts";

export type ServiceProcess = {
  base: string;
  child: Deno.ChildProcess;
  /** SIGKILL: no shutdown at all, as in a crash. */
  kill: () => Promise<void>;
  /** SIGTERM and wait for the graceful exit. */
  stop: () => Promise<Deno.CommandStatus>;
  /** The log lines written so far, parsed (only with `logs: true`; stdout is discarded otherwise). */
  logs: () => Record<string, unknown>[];
  /** The last 4,000 characters the service wrote on stderr (a crash's stack trace); none with `stderr: "inherit"`. */
  stderr: () => string;
};

const root = new URL("../..", import.meta.url).pathname;

/** What the service runs with in tests, under what each test's `env` sets. */
const TEST_SERVICE_ENV: Record<string, string> = {
  JWT_SECRET: TEST_JWT_SECRET,
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_RETRY_SCHEDULE: "1",
  WEBHOOK_TIMEOUT_MS: "2000",
  WORKER_CONCURRENCY: "4", // keeps several services within max_connections
  LOG_LEVEL: "error",
  SHUTDOWN_DRAIN_MS: "0", // a test's stop need not wait for a load balancer; the upgrade story sets its own
  ...HIGH_LIMITS,
};

/** A key set to `undefined` in `env` is left unset, so the service uses its default. */
function serviceEnv(
  databaseUrl: string,
  port: number,
  env: Record<string, string | undefined>,
  baseEnv = TEST_SERVICE_ENV,
): Record<string, string> {
  const all: Record<string, string | undefined> = { DATABASE_URL: databaseUrl, PORT: String(port), ...baseEnv, ...env };
  return Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * The service on a free port against `databaseUrl`, resolved once `/readyz` answers 200. `cwd` other than the
 * repository: where the embedded Postgres keeps its `.data` (the embedded-postgres test). The bench
 * (tests/bench/service.ts) gives its own `baseEnv` in place of the tests' settings, `v8Flags` and `stderr: "inherit"`.
 */
export async function startService(
  databaseUrl: string,
  env: Record<string, string | undefined> = {},
  opts: {
    cwd?: string;
    readyTimeoutMs?: number;
    logs?: boolean;
    baseEnv?: Record<string, string>;
    v8Flags?: string[];
    stderr?: "inherit";
    /** Another release's tree (tests/support/releases.ts): its own main.ts, deno.json and packages. */
    release?: string;
    /** The port of an instance that stopped, so its clients find the new one where they left it (a restart). */
    port?: number;
  } = {},
): Promise<ServiceProcess> {
  const port = opts.port ?? freePort();
  const tree = opts.release ?? root;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...opts.v8Flags ?? [], "--allow-all", "--config", `${tree}deno.json`, `${tree}main.ts`],
    cwd: opts.cwd ?? tree,
    env: serviceEnv(databaseUrl, port, env, opts.baseEnv),
    stdin: "null",
    stdout: opts.logs ? "piped" : "null",
    stderr: opts.stderr ?? "piped",
  }).spawn();
  // keep what the child says on stderr: it explains a start that fails
  let stderr = "";
  let exited = false;
  const decoder = new TextDecoder();
  const stderrDrained = opts.stderr === "inherit" ? Promise.resolve() : child.stderr.pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + decoder.decode(chunk)).slice(-4000)) }),
  ).catch(() => {});
  let stdout = "";
  const stdoutDecoder = new TextDecoder();
  const stdoutDrained = opts.logs
    ? child.stdout.pipeTo(new WritableStream({ write: (chunk) => void (stdout += stdoutDecoder.decode(chunk)) }))
      .catch(() => {})
    : Promise.resolve();
  const drained = Promise.all([stderrDrained, stdoutDrained]);
  // complete lines only: the last one may still be being written
  const logs = () => stdout.split("\n").slice(0, -1).map((line) => JSON.parse(line));
  child.status.then(() => exited = true);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000);
  for (;;) {
    try {
      const res = await fetch(`${base}/readyz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill("SIGKILL");
      await child.status;
      await drained;
      throw new Error(`service did not become ready:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    child,
    kill: async () => {
      if (!exited) child.kill("SIGKILL");
      await child.status;
      await drained;
    },
    stop: async () => {
      if (!exited) child.kill("SIGTERM");
      const status = await child.status;
      await drained;
      return status;
    },
    logs,
    stderr: () => stderr,
  };
}

/** A start that is expected to fail: runs the service on `port` to its exit (SIGKILL after `timeoutMs`). */
export async function runServiceToExit(
  databaseUrl: string,
  port: number,
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--config", `${root}deno.json`, `${root}main.ts`],
    cwd: root,
    env: serviceEnv(databaseUrl, port, env),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  try {
    const out = await child.output();
    const decoder = new TextDecoder();
    return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

/** An integrator calling a running service over HTTP (with tokens signed as `settings` say: the test secret). */
export async function httpCompany(companyId = crypto.randomUUID(), settings: TokenSettings = TEST_TOKENS) {
  const token = await signToken(settings, companyId);
  const call = async (base: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return { id: companyId, token, call };
}

/**
 * `deno task <task> <args>` against `databaseUrl`, as an operator runs it, with `env` over the test settings (a key set
 * to `undefined` is not given); its exit code, stdout as written and in lines, and stderr.
 */
export async function runTask(databaseUrl: string, args: string[], env: Record<string, string | undefined> = {}) {
  const all: Record<string, string | undefined> = {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "error",
    JWT_SECRET: TEST_JWT_SECRET,
    ...env,
  };
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", ...args],
    cwd: root,
    env: Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined)),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  return {
    code: out.code,
    stdout,
    lines: stdout.trimEnd().split("\n"),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
