/**
 * The processes of a local cluster: started detached (their own session, so they outlive `deno task cluster start`
 * and a Ctrl-C in its terminal), recognised by their command line or working directory inside the cluster's
 * directory (a pid file alone could name a recycled PID), and stopped by PID. Linux only: it reads /proc.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts `argv` in a session of its own with stdin closed and stdout and stderr appended to `log`, and returns its
 * PID. The shell writes its own PID to `pidFile` and then execs the program, so the PID written is the program's.
 * `as` (host.ts, `asPostgres`) runs the shell itself as another user: pid and log files in a folder that user owns
 * are then opened as that user, so a link it planted there cannot steer a write of root's.
 */
export async function spawnDetached(
  argv: string[],
  options: { log: string; pidFile: string; cwd: string; env?: Record<string, string>; as?: string[] },
): Promise<number> {
  await Deno.remove(options.pidFile).catch(() => {});
  const script = 'echo $$ > "$PID_FILE" && exec "$@" >> "$LOG_FILE" 2>&1 < /dev/null';
  const { success } = await new Deno.Command("setsid", {
    args: ["--fork", ...options.as ?? [], "sh", "-c", script, "sh", ...argv],
    cwd: options.cwd,
    env: { ...options.env, PID_FILE: options.pidFile, LOG_FILE: options.log },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  if (!success) throw new Error(`could not start ${argv.join(" ")}`);
  for (let waited = 0; waited < 5000; waited += 20) {
    const pid = await readPid(options.pidFile);
    if (pid) return pid;
    await sleep(20);
  }
  throw new Error(`${argv[0]} did not start (no ${options.pidFile}); see ${options.log}`);
}

/** The first line of a pid file (Postgres' `postmaster.pid` too) as a PID, or null. */
export function parsePid(text: string): number | null {
  const first = text.split("\n", 1)[0].trim();
  return /^[1-9][0-9]*$/.test(first) ? Number(first) : null;
}

export async function readPid(path: string): Promise<number | null> {
  try {
    return parsePid(await Deno.readTextFile(path));
  } catch {
    return null;
  }
}

async function commandLine(pid: number): Promise<string[]> {
  try {
    const raw = await Deno.readTextFile(`/proc/${pid}/cmdline`);
    return raw.split("\0").filter((arg) => arg !== "");
  } catch {
    return []; // gone, or a zombie: it has no command line
  }
}

/** True when `pid` runs and an argument of its command line contains `marker` (a path only that process has). */
export async function runs(pid: number | null, marker: string): Promise<boolean> {
  if (!pid) return false;
  return (await commandLine(pid)).some((arg) => arg.includes(marker));
}

/** The PID in `pidFile` when that process still runs with `marker` in its command line, else null. */
export async function livePid(pidFile: string, marker: string): Promise<number | null> {
  const pid = await readPid(pidFile);
  return pid && await runs(pid, marker) ? pid : null;
}

function parentOf(stat: string): number {
  // /proc/PID/stat: "pid (comm) state ppid ...", and comm may hold spaces or parentheses
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

async function ancestorsOfThisProcess(): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let pid = Deno.pid; pid > 1 && !seen.has(pid);) {
    seen.add(pid);
    try {
      pid = parentOf(await Deno.readTextFile(`/proc/${pid}/stat`));
    } catch {
      break;
    }
  }
  return seen;
}

/** A process found by `processesOf`: its PID, its name (`comm`) and its command line. */
export type Found = { pid: number; name: string; args: string[] };

/**
 * Every live process of the cluster in `dir`: its working directory is inside `dir` (the postmaster and all its
 * children work in their data directory) or an argument names a path inside it (agents, etcd, HAProxy). This
 * process and its parents (`deno task cluster ... --dir <dir>`) are left out.
 */
export async function processesOf(dir: string): Promise<Found[]> {
  const inside = (path: string) => path === dir || path.startsWith(`${dir}/`);
  const mine = await ancestorsOfThisProcess();
  const found: Found[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^[0-9]+$/.test(entry.name)) continue;
    const pid = Number(entry.name);
    if (mine.has(pid)) continue;
    const args = await commandLine(pid);
    if (!args.length) continue;
    let cwd = "";
    try {
      cwd = await Deno.readLink(`/proc/${pid}/cwd`);
    } catch { /* gone, or not ours to read */ }
    if (!inside(cwd) && !args.some((arg) => arg.startsWith(`${dir}/`) || arg.includes(`=${dir}/`))) continue;
    const name = await Deno.readTextFile(`/proc/${pid}/comm`).then((s) => s.trim(), () => "");
    found.push({ pid, name, args });
  }
  return found;
}

function signal(pid: number, sig: Deno.Signal): boolean {
  try {
    Deno.kill(pid, sig);
    return true;
  } catch {
    return false; // already gone
  }
}

/**
 * Sends `signals` one after another to `pid` (while it still runs with `marker`), waiting up to `waitMs` after
 * each; resolves true once it is gone.
 */
export async function terminate(
  pid: number,
  marker: string,
  signals: Deno.Signal[] = ["SIGTERM", "SIGKILL"],
  waitMs = 10_000,
): Promise<boolean> {
  for (const sig of signals) {
    if (!await runs(pid, marker)) return true;
    signal(pid, sig);
    for (let waited = 0; waited < waitMs; waited += 50) {
      if (!await runs(pid, marker)) return true;
      await sleep(50);
    }
  }
  return !await runs(pid, marker);
}

/** SIGKILL to each process found, then waits (up to `waitMs`) until none of them is left. */
export async function killAll(found: Found[], waitMs = 5000): Promise<Found[]> {
  for (const p of found) signal(p.pid, "SIGKILL");
  let left = found;
  for (let waited = 0; waited <= waitMs && left.length; waited += 50) {
    await sleep(50);
    const still: Found[] = [];
    for (const p of left) if ((await commandLine(p.pid)).length) still.push(p);
    left = still;
  }
  return left;
}
