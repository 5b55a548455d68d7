import { freePort } from "../support/free_port.ts";

export const BENCH_JWT_SECRET = "bench-secret-0123456789abcdef0123456789";

const root = new URL("../..", import.meta.url).pathname;

/** The V8 flags `deno task start` runs the service with (deno.json), so the bench measures the service as run. */
export const SERVICE_V8_FLAGS: string[] = JSON.parse(await Deno.readTextFile(`${root}deno.json`)).tasks.start
  .split(" ").filter((arg: string) => arg.startsWith("--v8-flags="));

/** The service on a free port against `databaseUrl`, its per-company rate limit off; resolves once it serves. */
export async function startService(databaseUrl: string, env: Record<string, string> = {}) {
  const PORT = freePort();
  const BASE = `http://127.0.0.1:${PORT}`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...SERVICE_V8_FLAGS, "--allow-all", "main.ts"],
    cwd: root,
    // the per-company rate limit off: the bench measures the service's ceiling with one company's token
    env: {
      DATABASE_URL: databaseUrl,
      PORT: String(PORT),
      JWT_SECRET: BENCH_JWT_SECRET,
      LOG_LEVEL: "info",
      RATE_LIMIT_PER_SECOND: "0",
      ...env,
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const state: { exited: Deno.CommandStatus | null } = { exited: null };
  child.status.then((status) => state.exited = status);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !state.exited) {
    try {
      const res = await fetch(`${BASE}/healthz`);
      await res.body?.cancel();
      if (res.ok) return { child, base: BASE };
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (state.exited) {
    throw new Error(`the service exited with code ${state.exited.code} before serving on port ${PORT}`);
  }
  child.kill("SIGKILL");
  throw new Error("service did not start");
}
