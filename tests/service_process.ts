/** The real service as a child process (`main.ts`), for the crash and scale-out tests. */
import { signToken } from "../domain/platform/tokens.ts";
import { HIGH_LIMITS, TEST_JWT_SECRET } from "./helpers.ts";

export type ServiceProcess = {
  base: string;
  child: Deno.ChildProcess;
  /** SIGKILL: no shutdown at all, as in a crash. */
  kill: () => Promise<void>;
  /** SIGTERM and wait for the graceful exit. */
  stop: () => Promise<Deno.CommandStatus>;
};

const root = new URL("..", import.meta.url).pathname;

/** A port nothing listens on right now (the kernel's choice), for the child to take. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** `cwd` other than the repository: where the embedded Postgres keeps its `.data` (the embedded-postgres test). */
export async function startService(
  databaseUrl: string,
  env: Record<string, string> = {},
  opts: { cwd?: string; readyTimeoutMs?: number } = {},
): Promise<ServiceProcess> {
  const port = freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--config", `${root}deno.json`, `${root}main.ts`],
    cwd: opts.cwd ?? root,
    env: {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      JWT_SECRET: TEST_JWT_SECRET,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_SCHEDULE: "1",
      WEBHOOK_TIMEOUT_MS: "2000",
      WORKER_CONCURRENCY: "4", // keeps several services within max_connections
      LOG_LEVEL: "error",
      ...HIGH_LIMITS,
      ...env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // keep what the child says on stderr: it explains a start that fails
  let stderr = "";
  let exited = false;
  const decoder = new TextDecoder();
  const drained = child.stderr.pipeTo(
    new WritableStream({ write: (chunk) => void (stderr = (stderr + decoder.decode(chunk)).slice(-4000)) }),
  ).catch(() => {});
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
