/**
 * What most tests share: `setup` (a database of its own with the app on it, with or without a worker), `newCompany`,
 * `eventually` and the suite's secrets and limits, so no test copies them.
 */
import { createApp } from "../../routes/app.ts";
import { taskList, upkeep } from "../../jobs/index.ts";
import { signToken, type TokenSettings } from "../../domain/integrators/tokens.ts";
import { type Config, loadConfig } from "../../domain/infra/config.ts";
import { connect, ensureDatabase, type Sql } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import { migrate } from "../../domain/infra/migrate.ts";
import { startWorker, stopWorker, type Worker } from "../../domain/infra/worker.ts";
import { cloneDatabase, dropDatabase, perTestDatabaseUrl, TEMPLATE_DATABASE, testDatabaseUrl } from "./databases.ts";

/** 32 bytes or more, as the service requires of any JWT_SECRET. */
export const TEST_JWT_SECRET = "test-secret-for-the-suite-0123456789abcdef";
/** What tests seal webhook signing secrets with (32 bytes as hex). */
export const TEST_ENCRYPTION_KEY = "7e".repeat(32);

/** What tests sign bearer tokens with: the test secret and the service's default issuer, audience and lifetime. */
export const TEST_TOKENS: TokenSettings = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });

/** Limits out of the way of tests that are not about them; the tests of each limit set it low. */
export const HIGH_LIMITS = {
  RATE_LIMIT_PER_SECOND: "1000000",
  RATE_LIMIT_BURST: "1000000",
  SANDBOX_RATE_LIMIT_PER_SECOND: "1000000",
  SANDBOX_RATE_LIMIT_BURST: "1000000",
  WEBHOOK_ENDPOINTS_PER_COMPANY: "1000",
  WEBHOOK_CONCURRENCY_PER_COMPANY: "100000",
};

export { dropDatabase, testDatabaseUrl };

/** Creates a database of its own for one test, so files run in parallel without sharing state. */
export async function freshDatabase(name: string): Promise<string> {
  const url = perTestDatabaseUrl(name);
  await ensureDatabase(url);
  return url;
}

/**
 * A database of its own for one test with the migrations applied: a copy of the runner's migrated template when
 * there is one (`migrate` then finds nothing to do), otherwise an empty one the caller migrates.
 */
export async function migratedDatabase(name: string): Promise<string> {
  if (!TEMPLATE_DATABASE) return await freshDatabase(name);
  const url = perTestDatabaseUrl(name);
  await cloneDatabase(url, TEMPLATE_DATABASE);
  return url;
}

export type TestContext = {
  url: string;
  sql: Sql;
  config: Config;
  deps: Deps;
  app: ReturnType<typeof createApp>;
  worker: Worker | null;
  close: () => Promise<void>;
};

/**
 * A migrated database of its own and the app on it. With `worker: true` the graphile-worker runner runs too,
 * using `env` (for example a short WEBHOOK_RETRY_SCHEDULE).
 */
export async function setup(
  name: string,
  opts: { worker?: boolean; env?: Record<string, string> } = {},
): Promise<TestContext> {
  setLogLevel("silent");
  const url = await migratedDatabase(name);
  const config = loadConfig({
    DATABASE_URL: url,
    JWT_SECRET: TEST_JWT_SECRET,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_RETRY_SCHEDULE: "1",
    WEBHOOK_TIMEOUT_MS: "2000",
    WORKER_CONCURRENCY: "8",
    LOG_LEVEL: "silent",
    ...HIGH_LIMITS,
    ...opts.env,
  });
  const sql = connect(url, { max: 5 });
  await migrate(sql, url);
  let worker: Worker | null = null;
  const deps: Deps = { sql, config, processId: crypto.randomUUID(), workerRunning: () => worker !== null };
  if (opts.worker) {
    worker = await startWorker(url, config.workerConcurrency, taskList(deps), upkeep(deps));
  }
  const app = createApp(deps);
  return {
    url,
    sql,
    config,
    deps,
    app,
    get worker() {
      return worker;
    },
    close: async () => {
      if (worker) await stopWorker(worker);
      worker = null;
      await sql.end({ timeout: 2 });
      await dropDatabase(url);
    },
  };
}

// deno-lint-ignore no-explicit-any
export type Reply = { status: number; body: any; headers: Headers };

/** An integrator: a company with its token, calling the app as HTTP would. */
export async function newCompany(
  ctx: { app: { request: (path: string, init?: RequestInit) => Response | Promise<Response> } },
) {
  const id = crypto.randomUUID();
  const token = await signToken(TEST_TOKENS, id);
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> => {
    const res = await ctx.app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch { /* not JSON: keep the text */ }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    id,
    token,
    call,
    get: (path: string) => call("GET", path),
    post: (path: string, body?: unknown) => call("POST", path, body),
    put: (path: string, body?: unknown) => call("PUT", path, body),
    delete: (path: string) => call("DELETE", path),
  };
}

export type Company = Awaited<ReturnType<typeof newCompany>>;

/** Waits until `check` returns a truthy value, polling; fails after `timeoutMs` with `what` in the message. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<Exclude<T, false | 0 | "" | null | undefined>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last as Exclude<T, false | 0 | "" | null | undefined>;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what} (last value: ${JSON.stringify(last)})`);
}
