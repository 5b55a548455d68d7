/**
 * What the commands of `deno task cluster` (README, "A Postgres HA cluster") share about this machine: the cluster's
 * directory and layout, free ports, the postgres OS user, the members' Patroni agents, and waiting for a condition.
 */
import postgres from "postgres";
import { ClusterError, type Layout, parseLayout, pathsOf } from "./config.ts";
import type { AgentAnswer } from "./status.ts";

/** Where a command reports progress, one line at a time. */
export type Say = (line: string) => void;

/** The OS user Postgres runs as when this runs as root (Postgres refuses to run as root). */
export const PG_USER = "postgres";
/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Whether a file or folder is at `path`. */
export const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** `count` distinct loopback ports nothing listens on now. */
export function freePorts(count: number): number[] {
  // all open at once, so the kernel hands out distinct ports; ephemeral ports are never 5432
  const listeners = Array.from({ length: count }, () => Deno.listen({ hostname: "127.0.0.1", port: 0 }));
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

/** Whether nothing listens on `port` on loopback. */
export function portIsFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

/** The uid and gid of an OS user. */
export async function idOf(user: string): Promise<{ uid: number; gid: number }> {
  const out = await new Deno.Command("id", { args: ["-u", user], stdout: "piped", stderr: "null" }).output();
  const gid = await new Deno.Command("id", { args: ["-g", user], stdout: "piped", stderr: "null" }).output();
  if (!out.success || !gid.success) throw new ClusterError(`no ${user} OS user (the postgresql-15 package makes it)`);
  const n = (b: Uint8Array) => Number(new TextDecoder().decode(b).trim());
  return { uid: n(out.stdout), gid: n(gid.stdout) };
}

/** As root, Postgres runs as the postgres user, which must be able to enter every folder above the cluster's. */
export async function assertReachableByPostgres(dir: string, option = "--dir") {
  if (Deno.uid() !== 0) return;
  for (let at = dir.slice(0, dir.lastIndexOf("/")) || "/"; at !== "/"; at = at.slice(0, at.lastIndexOf("/")) || "/") {
    const { mode } = await Deno.stat(at);
    if (mode !== null && (mode & 0o001) === 0) {
      throw new ClusterError(
        `Postgres runs as the ${PG_USER} user, which cannot enter ${at}: choose another ${option}`,
      );
    }
  }
}

/** The directory as an absolute path; `deno task` runs in the repository, so a relative one is the caller's. */
export function resolveDir(dir: string): string {
  const base = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  const absolute = dir.startsWith("/") ? dir : `${base}/${dir}`;
  const parts: string[] = [];
  for (const part of absolute.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

/** The layout `start` wrote in `dir`, or null when there is none. */
export async function readLayout(dir: string): Promise<Layout | null> {
  const text = await Deno.readTextFile(pathsOf(dir).layout).catch(() => null);
  return text === null ? null : parseLayout(text);
}

/** The cluster in `dirArg` (resolved) and its layout; a command that needs one says so when there is none. */
export async function existingCluster(dirArg: string): Promise<{ dir: string; layout: Layout }> {
  const dir = resolveDir(dirArg);
  const layout = await readLayout(dir);
  if (!layout) throw new ClusterError(`no cluster in ${dir} (no cluster.json)`);
  return { dir, layout };
}

/**
 * `check` on a connection of its own to `url`, given up after 3 s: false when it says no, fails or takes longer (a
 * member on its way up or down answers any of these ways), and the connection closed whatever happened.
 */
export async function probe(url: string, check: (sql: postgres.Sql) => Promise<boolean>): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, idle_timeout: 1, onnotice: () => {} });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), 3000));
  try {
    return await Promise.race([check(sql), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

/** What a member's Patroni agent answers to `GET /patroni`, or null when it does not answer within 1 s. */
export async function agentAnswer(apiPort: number): Promise<AgentAnswer> {
  try {
    // 200 on the primary, 503 on a replica: both carry the member's JSON
    const res = await fetch(`http://127.0.0.1:${apiPort}/patroni`, { signal: AbortSignal.timeout(1000) });
    return await res.json();
  } catch {
    return null;
  }
}

/** Polls `check` every 200 ms until it is true; a ClusterError naming `what` (and the log to read) at the timeout. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>, log?: string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(200);
  }
  throw new ClusterError(`${what} within ${timeoutMs / 1000} s${log ? `; see ${log}` : ""}`);
}

/** The command prefix that runs a program as the postgres OS user when this runs as root (nothing otherwise). */
export function asPostgres(): string[] {
  return Deno.uid() === 0 ? ["setpriv", `--reuid=${PG_USER}`, `--regid=${PG_USER}`, "--init-groups"] : [];
}
