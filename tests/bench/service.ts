/**
 * The service as the bench runs it: its configuration, the V8 flags `deno task start` gives it, and a start of the
 * real process. Kept apart so each bench measures the same service.
 */
import { type ServiceProcess, startService as startServiceProcess } from "../support/service_process.ts";
import { type Config, loadConfig } from "../../domain/infra/config.ts";
import { freePort } from "../support/free_port.ts";

export const BENCH_JWT_SECRET = "bench-secret-0123456789abcdef0123456789";

/**
 * The configuration of a bench that runs the service's parts in its own process on `databaseUrl`: loopback receivers
 * allowed, secrets sealed with a fixed key, logs silent unless `env` says otherwise.
 */
export function benchConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    JWT_SECRET: BENCH_JWT_SECRET,
    SECRET_ENCRYPTION_KEY: "5b".repeat(32),
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    LOG_LEVEL: "silent",
    ...env,
  });
}

const root = new URL("../..", import.meta.url).pathname;

/** The V8 flags `deno task start` runs the service with (deno.json), so the bench measures the service as run. */
export const SERVICE_V8_FLAGS: string[] = JSON.parse(await Deno.readTextFile(`${root}deno.json`)).tasks.start
  .split(" ").filter((arg: string) => arg.startsWith("--v8-flags="));

/**
 * The service as `deno task start` runs it (its V8 flags, its defaults, not the tests' settings) on a free port
 * against `databaseUrl`, its per-company rate limit off: the bench measures the service's ceiling with one company's
 * token. Its stderr is the bench's; resolves once it serves (tests/support/service_process.ts).
 */
export function startService(databaseUrl: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return startServiceProcess(databaseUrl, env, {
    baseEnv: { JWT_SECRET: BENCH_JWT_SECRET, LOG_LEVEL: "info", RATE_LIMIT_PER_SECOND: "0", SHUTDOWN_DRAIN_MS: "0" },
    v8Flags: SERVICE_V8_FLAGS,
    stderr: "inherit",
  });
}

/**
 * The floor server (tests/bench/floor_server.ts) on a free port against `databaseUrl`, with the service's V8 flags:
 * resolved once it serves, with its process to measure and stop.
 */
export async function startFloor(databaseUrl: string): Promise<{ base: string; child: Deno.ChildProcess }> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVICE_V8_FLAGS,
      "--allow-all",
      "--config",
      `${root}deno.json`,
      `${root}tests/bench/floor_server.ts`,
    ],
    env: { DATABASE_URL: databaseUrl, PORT: String(port) },
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  for (let seen = ""; !seen.includes("listening");) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the floor server exited before it served");
    seen += value;
  }
  await reader.cancel(); // it prints nothing more
  return { base: `http://127.0.0.1:${port}`, child };
}
