/** The real service as a child process (`main.ts`), for the crash and scale-out tests. */
import { signToken } from "../lib/auth.ts";
import { TEST_JWT_SECRET } from "./helpers.ts";

export type ServiceProcess = {
  base: string;
  child: Deno.ChildProcess;
  /** SIGKILL: no shutdown at all, as in a crash. */
  kill: () => Promise<void>;
  /** SIGTERM and wait for the graceful exit. */
  stop: () => Promise<Deno.CommandStatus>;
};

const root = new URL("..", import.meta.url).pathname;

export async function startService(databaseUrl: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "main.ts"],
    cwd: root,
    env: {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      JWT_SECRET: TEST_JWT_SECRET,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_SCHEDULE: "1",
      WEBHOOK_TIMEOUT_MS: "2000",
      WORKER_CONCURRENCY: "8",
      LOG_LEVEL: "error",
      ...env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/readyz`);
      await res.body?.cancel();
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await child.status;
      throw new Error("service did not become ready");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    child,
    kill: async () => {
      child.kill("SIGKILL");
      await child.status;
    },
    stop: async () => {
      child.kill("SIGTERM");
      return await child.status;
    },
  };
}

/** An integrator calling a running service over HTTP. */
export async function httpCompany(companyId = crypto.randomUUID()) {
  const token = await signToken(TEST_JWT_SECRET, companyId);
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
