/**
 * What the commands of `deno task cluster` (docs/operations.md, "A Postgres HA cluster") share about this machine: the
 * cluster's directory (refused unless only its caller can change it), its layout and passwords, files written without
 * following links, free ports, the postgres OS user, the members' Patroni agents, and waiting for a condition.
 */
import postgres from "postgres";
import {
  ClusterError,
  type Layout,
  newPasswords,
  parseLayout,
  parsePasswords,
  type Passwords,
  pathsOf,
} from "./config.ts";
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

const parentOf = (path: string) => path.slice(0, path.lastIndexOf("/")) || "/";
const octal = (mode: number | null) => ((mode ?? 0) & 0o7777).toString(8).padStart(4, "0");

/**
 * Refuses a directory that anyone but the caller could change, before anything is written or run in it
 * (docs/operations.md, "A Postgres HA cluster"): the tool runs as root, and a directory another user owns or can write
 * to is one where that user plants links (root then writes through them) or files the tool would trust (pid files,
 * cluster.json). So `dir` must be a real directory (not a link) owned by the caller and not writable by its group or
 * others, and every folder above it must belong to root or the caller and be writable by no one else unless it is
 * sticky (`/tmp`), where no one else can rename what the caller made. A link above `dir` must belong to root or the
 * caller too.
 */
export async function assertPrivateDir(dir: string, option = "--dir"): Promise<void> {
  const uid = Deno.uid();
  const trusted = (owner: number | null) => owner === 0 || owner === uid;
  const info = await Deno.lstat(dir).catch(() => null);
  if (!info) throw new ClusterError(`${dir} does not exist`);
  if (info.isSymlink) throw new ClusterError(`${dir} is a symbolic link: give ${option} the directory itself`);
  if (!info.isDirectory) throw new ClusterError(`${dir} is not a directory`);
  if (info.uid !== uid) {
    throw new ClusterError(
      `${dir} belongs to uid ${info.uid}, not to this user (uid ${uid}): give ${option} a directory of your own`,
    );
  }
  if (((info.mode ?? 0) & 0o022) !== 0) {
    throw new ClusterError(
      `${dir} can be written by its group or others (mode ${octal(info.mode)}): \`chmod go-w\` it, or give ${option} ` +
        "a private directory",
    );
  }
  // the path as given: a link on the way must be root's or the caller's (another user could point it elsewhere)
  for (let at = parentOf(dir); at !== "/"; at = parentOf(at)) {
    const link = await Deno.lstat(at);
    if (link.isSymlink && !trusted(link.uid)) {
      throw new ClusterError(`${at}, above ${dir}, is a link owned by uid ${link.uid}: give ${option} another path`);
    }
  }
  // the folders it really lies in
  for (let at = await Deno.realPath(parentOf(dir));; at = parentOf(at)) {
    const above = await Deno.lstat(at);
    const mode = above.mode ?? 0;
    if (!trusted(above.uid)) {
      throw new ClusterError(
        `${at}, above ${dir}, belongs to uid ${above.uid}: give ${option} a path only you control`,
      );
    }
    if ((mode & 0o022) !== 0 && (mode & 0o1000) === 0) {
      throw new ClusterError(
        `${at}, above ${dir}, can be written by others and is not sticky (mode ${octal(mode)}): give ${option} a ` +
          "path only you control",
      );
    }
    if (at === "/") break;
  }
}

/** Makes `dir` when it is missing (0700; missing folders above it with the default mode), then `assertPrivateDir`. */
export async function ensurePrivateDir(dir: string, option = "--dir"): Promise<void> {
  await Deno.mkdir(parentOf(dir), { recursive: true });
  await Deno.mkdir(dir, { mode: 0o700 }).catch((err) => {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  });
  await assertPrivateDir(dir, option);
}

/**
 * Writes `path` afresh in a folder only the caller can change: whatever is there, a link included, is removed (the
 * link, never what it points to) and the file is created anew, exclusively (O_EXCL), so no write follows a link.
 */
export async function writeNewFile(path: string, content: string, mode = 0o644): Promise<void> {
  await Deno.remove(path).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
  await Deno.writeTextFile(path, content, { createNew: true, mode });
  await Deno.chmod(path, mode); // the umask may have taken bits away
}

/**
 * Writes `path` (0600) in a folder the postgres OS user owns, as that user when this runs as root: that user can put a
 * link there, and a write as root through it would change any file of the machine; as itself, it reaches only what it
 * could write anyway. Without root, everything is the caller's and `writeNewFile` does it.
 */
export async function writePostgresFile(path: string, content: string): Promise<void> {
  if (Deno.uid() !== 0) return await writeNewFile(path, content, 0o600);
  const [cmd, ...args] = [
    ...asPostgres(),
    "sh",
    "-c",
    'umask 077 && rm -f -- "$1" && set -C && cat > "$1"',
    "sh",
    path,
  ];
  const child = new Deno.Command(cmd, { args, cwd: parentOf(path), stdin: "piped", stdout: "null", stderr: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(content));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new ClusterError(`could not write ${path} as ${PG_USER}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/**
 * Creates `path` as a folder (mode `mode`) that the postgres OS user owns when this runs as root, inside a folder only
 * the caller can change: a link or anything else already there is refused rather than followed (chown follows links).
 */
export async function postgresFolder(path: string, mode: number): Promise<void> {
  await Deno.mkdir(path, { mode }).catch((err) => {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  });
  const info = await Deno.lstat(path);
  if (!info.isDirectory) throw new ClusterError(`${path} is not a directory (a link?): remove it`);
  if (Deno.uid() === 0) {
    const { uid, gid } = await idOf(PG_USER);
    await Deno.chown(path, uid, gid);
  }
  await Deno.chmod(path, mode);
}

/** The layout `start` wrote in `dir`, or null when there is none. */
export async function readLayout(dir: string): Promise<Layout | null> {
  const text = await Deno.readTextFile(pathsOf(dir).layout).catch(() => null);
  return text === null ? null : parseLayout(text);
}

/**
 * The cluster's passwords, generated into `<dir>/passwords.json` (0600) by the first `start` (`create`). A cluster
 * made by an earlier version has none: its members trusted loopback and their roles have other passwords.
 */
export async function clusterPasswords(dir: string, options: { create: boolean }): Promise<Passwords> {
  const path = pathsOf(dir).passwords;
  const info = await Deno.lstat(path).catch(() => null);
  if (!info && options.create) {
    const passwords = newPasswords();
    await Deno.writeTextFile(path, JSON.stringify(passwords, null, 2) + "\n", { createNew: true, mode: 0o600 });
    return passwords;
  }
  if (!info) {
    throw new ClusterError(
      `${path} is missing: a cluster made by an earlier deno task cluster, which trusted every local connection; ` +
        "`stop` it and `start` a new one in a new directory",
    );
  }
  if (!info.isFile || info.uid !== Deno.uid() || ((info.mode ?? 0) & 0o077) !== 0) {
    throw new ClusterError(`${path} must be a file of yours that only you can read (mode 0600)`);
  }
  return parsePasswords(await Deno.readTextFile(path));
}

/**
 * The cluster in `dirArg` (resolved, `assertPrivateDir`), its layout and passwords; a command that needs one says so
 * when there is none.
 */
export async function existingCluster(dirArg: string): Promise<{ dir: string; layout: Layout; passwords: Passwords }> {
  const dir = resolveDir(dirArg);
  await assertPrivateDir(dir);
  const layout = await readLayout(dir);
  if (!layout) throw new ClusterError(`no cluster in ${dir} (no cluster.json)`);
  return { dir, layout, passwords: await clusterPasswords(dir, { create: false }) };
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
