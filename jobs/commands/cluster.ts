import { parseArgs } from "node:util";
import { ClusterError } from "./cluster/config.ts";
import { clusterStatus, startCluster, stopCluster, switchoverCluster } from "./cluster/lifecycle.ts";

/**
 * `deno task cluster start|status|switchover|stop --dir <dir>`: a local Postgres HA cluster (Patroni, a one-node etcd,
 * HAProxy; two members, one a synchronous replica) whose every file lives in `<dir>`, on free loopback ports.
 * README, "A Postgres HA cluster", says how to use it; docs/architecture.md, "The database cluster", why it is built
 * so.
 *
 * - `start [--members 2] [--strict] [--timeout 120]`: installs the Debian packages when missing (as root), starts
 *   or resumes the cluster, and returns once a primary takes writes confirmed by a synchronous replica; the last
 *   line printed is the DATABASE_URL (HAProxy, which leads to the current primary).
 * - `status`: the last line is one JSON object, `{"members": [{name, role, state, sync, port, api_port, pids}],
 *   "etcd": {port, pids}, "haproxy": {port, pids}, "url"}`.
 * - `switchover [--timeout 120]`: a planned switchover with Patroni's own mechanism (`POST /switchover`), from the
 *   primary to the synchronous replica; returns once the new primary takes writes through HAProxy and the old one
 *   streams as its synchronous replica; the last line is the JSON of `status`.
 * - `stop`: stops every process of the cluster; running it again does nothing.
 */
const USAGE = "usage: deno task cluster start|status|switchover|stop --dir <dir> [--members N] [--strict] " +
  "[--timeout seconds]";
const COMMANDS = ["start", "status", "switchover", "stop"];

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    dir: { type: "string" },
    members: { type: "string", default: "2" },
    strict: { type: "boolean", default: false },
    timeout: { type: "string", default: "120" },
  },
});
const [command] = positionals;
const members = Number(values.members);
const timeout = Number(values.timeout);
if (
  !values.dir || positionals.length !== 1 || !COMMANDS.includes(command) ||
  !Number.isInteger(members) || members < 2 || members > 5 || !(timeout > 0)
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
        `${from} the synchronous replica in ${seconds.toFixed(1)} s`,
    );
    await printStatus(values.dir);
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
