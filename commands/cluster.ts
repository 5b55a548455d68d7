/**
 * `deno task cluster start|status|switchover|backup|restore-rehearsal|stop --dir <dir>`: a local Postgres HA cluster
 * (Patroni, a one-node etcd, HAProxy; two members, one a synchronous replica) whose every file lives in `<dir>`, on
 * free loopback ports.
 * docs/operations.md, "A Postgres HA cluster", says how to use it; docs/architecture.md, "The database cluster", why it
 * is built so.
 *
 * - `start [--members 2] [--strict] [--timeout 120]`: refuses a directory anyone but the caller could change, installs
 *   the Debian packages when missing (as root), starts or resumes the cluster, and returns once a primary takes writes
 *   confirmed by a synchronous replica; the last line printed is the DATABASE_URL (HAProxy, which leads to the current
 *   primary), with the superuser's password generated into `<dir>/passwords.json`.
 * - `status`: the last line is one JSON object, `{"members": [{name, role, state, sync, port, api_port, pids}],
 *   "etcd": {port, pids}, "haproxy": {port, pids}, "url"}`.
 * - `switchover [--timeout 120]`: a planned switchover with Patroni's own mechanism (`POST /switchover`), from the
 *   primary to the synchronous replica; returns once the new primary takes writes through HAProxy and the old one
 *   streams from it as a replica (Patroni makes it synchronous a few seconds later); the last line is the JSON of
 *   `status`.
 * - `backup [--timeout 120]`: a base backup of the primary with pg_basebackup into `<dir>/backups/<time>/`; the last
 *   line is its folder. The members archive their WAL into `<dir>/wal-archive/` all along.
 * - `restore-rehearsal --at <time> [--into <folder>] [--timeout 120]`: restores the latest backup finished by `<time>`
 *   (ISO 8601 with its zone) into `<dir>/rehearsal` (or `<folder>`) and replays the archive up to `<time>` in a
 *   standalone Postgres, which keeps running; the last line is its URL. `restore-rehearsal --stop` stops it and
 *   removes its folder; `stop` stops it too. docs/production.md, "Backups and point-in-time recovery", shows a run.
 * - `stop`: stops every process of the cluster; running it again does nothing.
 */

import { parseArgs } from "node:util";
import { ClusterError } from "./cluster/config.ts";
import { clusterStatus, startCluster, stopCluster, switchoverCluster } from "./cluster/lifecycle.ts";
import { startRehearsal, stopRehearsal, takeBackup } from "./cluster/recovery.ts";

const USAGE = [
  "usage: deno task cluster start|status|switchover|backup|stop --dir <dir> [--members N] [--strict] " +
  "[--timeout seconds]",
  "       deno task cluster restore-rehearsal --dir <dir> --at <time with zone> [--into <folder>] [--timeout seconds]",
  "       deno task cluster restore-rehearsal --dir <dir> --stop",
].join("\n");
const COMMANDS = ["start", "status", "switchover", "backup", "restore-rehearsal", "stop"];

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    dir: { type: "string" },
    members: { type: "string", default: "2" },
    strict: { type: "boolean", default: false },
    timeout: { type: "string", default: "120" },
    at: { type: "string" },
    into: { type: "string" },
    stop: { type: "boolean", default: false },
  },
});
const [command] = positionals;
const members = Number(values.members);
const timeout = Number(values.timeout);
if (
  !values.dir || positionals.length !== 1 || !COMMANDS.includes(command) ||
  !Number.isInteger(members) || members < 2 || members > 5 || !(timeout > 0) ||
  // restore-rehearsal takes either --at (and maybe --into) or --stop; no other command takes them
  (command === "restore-rehearsal"
    ? (values.stop ? values.at !== undefined || values.into !== undefined : values.at === undefined)
    : values.at !== undefined || values.into !== undefined || values.stop)
) {
  console.error(USAGE);
  Deno.exit(2);
}
const say = (line: string) => console.log(line);

async function printStatus(dir: string) {
  const status = await clusterStatus(dir);
  for (const m of status.members) {
    say(`${m.name} ${m.role}${m.sync ? " (sync)" : ""} ${m.state} port ${m.port} pids ${m.pids.join(",") || "-"}`);
  }
  console.log(JSON.stringify(status));
}

try {
  if (command === "start") {
    const { url, seconds } = await startCluster(values.dir, {
      members,
      strict: values.strict,
      timeoutMs: timeout * 1000,
    }, say);
    say(`ready in ${seconds.toFixed(1)} s: a primary takes writes and a synchronous replica streams`);
    console.log(url);
  } else if (command === "status") {
    await printStatus(values.dir);
  } else if (command === "switchover") {
    const { from, to, writableSeconds, seconds } = await switchoverCluster(
      values.dir,
      { timeoutMs: timeout * 1000 },
      say,
    );
    say(
      `switched over from ${from} to ${to}: writes in ${writableSeconds.toFixed(1)} s, ` +
        `${from} a streaming replica in ${seconds.toFixed(1)} s (synchronous again once \`status\` says so)`,
    );
    await printStatus(values.dir);
  } else if (command === "backup") {
    const { path, info, seconds, bytes } = await takeBackup(values.dir, { timeoutMs: timeout * 1000 }, say);
    say(
      `base backup of ${info.member} in ${seconds.toFixed(1)} s, ${(bytes / 1e6).toFixed(1)} MB: WAL from ` +
        `${info.start_lsn} to ${info.end_lsn} on timeline ${info.timeline}`,
    );
    console.log(path);
  } else if (command === "restore-rehearsal" && values.stop) {
    say(await stopRehearsal(values.dir, { remove: true }) ?? "no restore rehearsal to stop");
  } else if (command === "restore-rehearsal") {
    const { url, backup, stop, seconds } = await startRehearsal(values.dir, {
      at: values.at!,
      into: values.into,
      timeoutMs: timeout * 1000,
    }, say);
    say(`restored from ${backup} in ${seconds.toFixed(1)} s; ${stop ?? "recovery stopped at the end of the archive"}`);
    say(`it keeps running: \`deno task cluster restore-rehearsal --dir ${values.dir} --stop\` stops and removes it`);
    console.log(url);
  } else {
    const left = await stopCluster(values.dir, say);
    if (left.length) {
      console.error(`still running:\n${left.join("\n")}`);
      Deno.exitCode = 1;
    }
  }
} catch (err) {
  if (!(err instanceof ClusterError)) throw err;
  console.error(`cluster ${command}: ${err.message}`);
  Deno.exitCode = 1;
}
