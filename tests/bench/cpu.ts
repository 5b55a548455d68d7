/**
 * CPU time spent per request during a load phase, by the service's process and by Postgres (its server processes
 * that serve the bench's database, and those that serve no database, such as the WAL writer and the checkpointer; not
 * the sessions of other databases, so a test run beside the bench does not land in its figure), read from /proc.
 * Throughput on a shared 2-core machine moves from run to run; what a request costs each side moves much less, and
 * says where a ratio's missing share goes (docs/performance.md, "Why the goals are out of reach"). Also the CPU each
 * side used over a phase (`cpuDuring`), for phases without requests to divide by. Linux only: elsewhere the figures
 * are null.
 */

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

async function ticksOf(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  // the command may contain spaces and parentheses: fields are counted from the last ')'
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** A client session's title names its database and ends with its client's address (`127.0.0.1(5432)`, `[local]`). */
const CLIENT_SESSION = /(\(\d+\)|\[local\])( |$)/;

async function postgresTicks(database: string | undefined): Promise<number> {
  let total = 0;
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const comm = (await Deno.readTextFile(`/proc/${entry.name}/comm`)).trim();
      if (comm !== "postgres") continue;
      const title = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`)).replaceAll("\0", " ").trim();
      const ours = !database || !CLIENT_SESSION.test(title) || title.split(" ").includes(database);
      if (ours) total += await ticksOf(Number(entry.name));
    } catch {
      // the process ended while it was read
    }
  }
  return total;
}

export type CpuPerRequest = { serviceUs: number | null; postgresUs: number | null };

/**
 * Runs `phase` and divides the CPU both sides spent meanwhile by the requests it answered (`requests` of its result);
 * Postgres' side counts the sessions of `database` only (every session without it).
 */
export async function cpuPerRequest<T>(
  servicePid: number,
  phase: () => Promise<T>,
  requests: (result: T) => number,
  database?: string,
): Promise<{ result: T; cpu: CpuPerRequest }> {
  let before: [number, number] | null = null;
  try {
    before = [await ticksOf(servicePid), await postgresTicks(database)];
  } catch {
    // no /proc
  }
  const result = await phase();
  if (!before) return { result, cpu: { serviceUs: null, postgresUs: null } };
  const n = Math.max(1, requests(result));
  const us = (ticks: number) => Math.round((ticks * 1_000_000) / TICKS_PER_SECOND / n);
  return {
    result,
    cpu: {
      serviceUs: us((await ticksOf(servicePid)) - before[0]),
      postgresUs: us((await postgresTicks(database)) - before[1]),
    },
  };
}

/**
 * Runs `phase` and measures the CPU time each of `pids` and Postgres (as `cpuPerRequest` counts it, under `postgres`)
 * spent meanwhile, in ms, with the phase's wall time: what share of the machine each side had while it ran (a figure
 * whose rate is bounded by the CPU all sides share, such as the fairness phase's, reads with it). `cpuMs` is null where
 * /proc cannot say.
 */
export async function cpuDuring<T>(
  pids: Record<string, number>,
  phase: () => Promise<T>,
  database?: string,
): Promise<{ result: T; wallMs: number; cpuMs: Record<string, number> | null }> {
  const sample = async () => {
    const ticks: Record<string, number> = { postgres: await postgresTicks(database) };
    for (const [name, pid] of Object.entries(pids)) ticks[name] = await ticksOf(pid);
    return ticks;
  };
  let before: Record<string, number> | null = null;
  try {
    before = await sample();
  } catch {
    // no /proc
  }
  const start = performance.now();
  const result = await phase();
  const wallMs = performance.now() - start;
  if (!before) return { result, wallMs, cpuMs: null };
  const after = await sample();
  const ms = (name: string) => ((after[name] - before![name]) * 1000) / TICKS_PER_SECOND;
  return { result, wallMs, cpuMs: Object.fromEntries(Object.keys(after).map((name) => [name, ms(name)])) };
}
