import { parseArgs } from "node:util";
import { ClusterError } from "./cluster/config.ts";
import { clusterStatus, startCluster, stopCluster } from "./cluster/lifecycle.ts";

/**
 * `deno task cluster start|status|stop --dir <dir>`: a local Postgres HA cluster (Patroni, a one-node etcd,
 * HAProxy; two members, one a synchronous replica) whose every file lives in `<dir>`, on free loopback ports.
 * README, "A Postgres HA cluster", says how to use it; docs/architecture.md, "The database cluster", why it is built
 * so.
 *
 * - `start [--members 2] [--strict] [--timeout 120]`: installs the Debian packages when missing (as root), starts
 *   or resumes the cluster, and returns once a primary takes writes confirmed by a synchronous replica; the last
 *   line printed is the DATABASE_URL (HAProxy, which leads to the current primary).
 * - `status`: the last line is one JSON object, `{"members": [{name, role, state, sync, port, api_port, pids}],
 *   "etcd": {port, pids}, "haproxy": {port, pids}, "url"}`.
 * - `stop`: stops every process of the cluster; running it again does nothing.
 */
const USAGE = "usage: deno task cluster start|status|stop --dir <dir> [--members N] [--strict] [--timeout seconds]";

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
  !values.dir || positionals.length !== 1 || !["start", "status", "stop"].includes(command) ||
  !Number.isInteger(members) || members < 2 || members > 5 || !(timeout > 0)
) {
  console.error(USAGE);
  Deno.exit(2);
}
const say = (line: string) => console.log(line);

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
    const status = await clusterStatus(values.dir);
    for (const m of status.members) {
      say(`${m.name} ${m.role}${m.sync ? " (sync)" : ""} ${m.state} port ${m.port} pids ${m.pids.join(",") || "-"}`);
    }
    console.log(JSON.stringify(status));
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
