/**
 * `deno task cluster start|status|switchover|stop` (docs/operations.md, "A Postgres HA cluster"; docs/architecture.md,
 * "The database cluster"): a one-node etcd, a Patroni agent per Postgres member, and HAProxy in front, every file of
 * them inside one directory. `start` on a directory that already holds a cluster starts again whatever part of it is
 * not running.
 */
import {
  ClusterError,
  databaseUrl,
  ETCD_USER,
  etcdArgs,
  haproxyConfig,
  type Layout,
  type Passwords,
  pathsOf,
  patroniConfig,
  planLayout,
  portsNeeded,
  restAuthorization,
  toYaml,
} from "./config.ts";
import { ensurePackages } from "./packages.ts";
import { killAll, livePid, processesOf, spawnDetached, terminate } from "./processes.ts";
import {
  agentAnswer,
  asPostgres,
  assertPrivateDir,
  assertReachableByPostgres,
  clusterPasswords,
  ensurePrivateDir,
  existingCluster,
  exists,
  freePorts,
  portIsFree,
  postgresFolder,
  probe,
  readLayout,
  resolveDir,
  type Say,
  waitFor,
  writeNewFile,
  writePostgresFile,
} from "./host.ts";
import { stopRehearsal } from "./recovery.ts";
import { roleOf, type Status, statusReport } from "./status.ts";
import { switchoverPlan } from "./switchover.ts";

/** Process names the final sweep of `stop` may kill: the cluster's own programs, nothing an operator runs. */
const CLUSTER_PROGRAMS = new Set(["postgres", "patroni", "etcd", "haproxy", "pg_rewind", "pg_basebackup", "pg_ctl"]);

async function etcdHealthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    return (await res.json())?.health === "true";
  } catch {
    return false;
  }
}

/**
 * Turns etcd's authentication on, once per cluster, through its JSON gateway: the `root` user (with the built-in
 * `root` role) gets the generated password, and from then on etcd answers no read or write without it. A start that
 * resumes finds the password already accepted and changes nothing.
 */
async function ensureEtcdAuth(port: number, password: string): Promise<void> {
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}/v3/auth/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
    const text = await res.text();
    if (!res.ok && !(path === "authenticate" && /not enabled/.test(text))) {
      throw new ClusterError(`etcd refused ${path} (${res.status}): ${text.slice(0, 200)}`);
    }
    return res.ok;
  };
  if (await call("authenticate", { name: ETCD_USER, password })) return;
  await call("user/add", { name: ETCD_USER, password });
  await call("user/grant", { user: ETCD_USER, role: "root" });
  await call("enable", {});
}

/**
 * Every agent runs its Postgres and a replica's agent knows it is the synchronous one: Patroni promotes only the
 * member etcd names as synchronous, and it names it a moment after Postgres reports it, so until then a lost
 * primary would not be replaced.
 */
async function agentsAgreeOnSync(layout: Layout): Promise<boolean> {
  const answers = await Promise.all(layout.members.map((m) => agentAnswer(m.apiPort)));
  return answers.every((a) => a?.state === "running") &&
    answers.some((a) => roleOf(a) === "replica" && a?.sync_standby === true);
}

/**
 * Through HAProxy: a synchronous replica streams (and, with more members, every replica streams) and a transaction
 * that takes an id commits, which on a primary in synchronous mode means the replica confirmed it.
 */
async function acceptsSyncWrites(url: string, members: number): Promise<boolean> {
  return await probe(url, async (sql) => {
    const [row] = await sql`
      select count(*) filter (where state = 'streaming')::int as streaming,
             count(*) filter (where state = 'streaming' and sync_state = 'sync')::int as sync
      from pg_stat_replication`;
    if (row.sync < 1 || row.streaming < members - 1) return false;
    await sql`select txid_current()`;
    return true;
  });
}

/**
 * The directory (private: `ensurePrivateDir`, checked by the caller), its layout and passwords, and every file the
 * processes read, written without following a link: the members' folders belong to the postgres OS user when this
 * runs as root, so their files are written as that user (`writePostgresFile`).
 */
async function prepare(
  dir: string,
  options: { members: number; strict: boolean },
  say: Say,
): Promise<{ layout: Layout; passwords: Passwords }> {
  let layout = await readLayout(dir);
  let passwords: Passwords;
  if (!layout) {
    for await (const entry of Deno.readDir(dir)) {
      throw new ClusterError(`${dir} holds ${entry.name} but no cluster.json: give an empty or new directory`);
    }
    // the passwords first: a directory with a layout and no passwords is an earlier version's cluster
    passwords = await clusterPasswords(dir, { create: true });
    layout = planLayout(freePorts(portsNeeded(options.members)), options);
    await writeNewFile(pathsOf(dir).layout, JSON.stringify(layout, null, 2) + "\n");
    say(`new cluster in ${dir}: ${layout.members.length} members, HAProxy on ${layout.haproxy.port}`);
  } else {
    passwords = await clusterPasswords(dir, { create: false });
    say(`resuming the cluster in ${dir}`);
  }
  if (Deno.uid() === 0) {
    const { mode } = await Deno.stat(dir);
    if (mode !== null && (mode & 0o005) !== 0o005) await Deno.chmod(dir, (mode & 0o777) | 0o005);
  }
  await assertReachableByPostgres(dir);
  for (const member of layout.members) {
    const paths = pathsOf(dir).member(member.name);
    await postgresFolder(paths.dir, 0o700);
    // rewritten at every start: the file follows this version of the tool; the cluster-wide part lives in etcd
    await writePostgresFile(paths.config, toYaml(patroniConfig(layout, member, dir, passwords)) + "\n");
  }
  // archive_command runs as the postgres user: the archive (and the backups beside it) are its own
  for (const folder of [pathsOf(dir).walArchive, pathsOf(dir).backups]) await postgresFolder(folder, 0o700);
  await writeNewFile(pathsOf(dir).haproxy.config, haproxyConfig(layout));
  return { layout, passwords };
}

/**
 * Starts (or resumes) the cluster in `dir` and resolves with its URL once a primary accepts writes that a
 * synchronous replica confirms.
 */
export async function startCluster(
  dirArg: string,
  options: { members: number; strict: boolean; timeoutMs: number },
  say: Say,
): Promise<{ url: string; seconds: number }> {
  const started = performance.now();
  // before anything is installed or written: a directory another user can change is refused
  const dir = resolveDir(dirArg);
  await ensurePrivateDir(dir);
  const installed = await ensurePackages(say);
  if (installed.length) {
    say(`installed ${installed.join(", ")} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  const { layout, passwords } = await prepare(dir, options, say);
  const paths = pathsOf(dir);
  const free = (port: number, what: string) => {
    if (!portIsFree(port)) throw new ClusterError(`port ${port} (${what}) is taken by another program`);
  };

  if (!await livePid(paths.etcd.pid, paths.etcd.data)) {
    free(layout.etcd.clientPort, "etcd");
    free(layout.etcd.peerPort, "etcd peers");
    const pid = await spawnDetached(["etcd", ...etcdArgs(layout, dir)], {
      log: paths.etcd.log,
      pidFile: paths.etcd.pid,
      cwd: dir,
    });
    say(`etcd started (pid ${pid}, port ${layout.etcd.clientPort})`);
  }
  await waitFor("etcd did not answer", 20_000, () => etcdHealthy(layout.etcd.clientPort), paths.etcd.log);
  await ensureEtcdAuth(layout.etcd.clientPort, passwords.etcd);

  for (const member of layout.members) {
    const m = paths.member(member.name);
    if (await livePid(m.pid, m.config)) continue;
    free(member.apiPort, `${member.name}'s Patroni REST API`);
    // the postmaster of a member whose agent died may still run: Patroni takes it over (or demotes it)
    if (!await livePid(m.postmasterPid, m.data)) free(member.port, `${member.name}'s Postgres`);
    const pid = await spawnDetached(["patroni", m.config], {
      log: m.log,
      pidFile: m.pid,
      cwd: m.dir,
      env: { HOME: m.dir, PGPASSFILE: m.pgpass },
      as: asPostgres(),
    });
    say(`${member.name}: Patroni started (pid ${pid}, Postgres port ${member.port}, REST port ${member.apiPort})`);
  }

  if (!await livePid(paths.haproxy.pid, paths.haproxy.config)) {
    free(layout.haproxy.port, "HAProxy");
    const pid = await spawnDetached(["haproxy", "-db", "-f", paths.haproxy.config], {
      log: paths.haproxy.log,
      pidFile: paths.haproxy.pid,
      cwd: dir,
    });
    say(`HAProxy started (pid ${pid}, port ${layout.haproxy.port})`);
  }

  const url = databaseUrl(layout, passwords);
  const elapsed = performance.now() - started;
  await waitFor(
    "no primary took writes confirmed by a synchronous replica",
    Math.max(options.timeoutMs - elapsed, 1000),
    async () => await agentsAgreeOnSync(layout) && await acceptsSyncWrites(url, layout.members.length),
    `${dir}/pg*/patroni.log`,
  );
  return { url, seconds: (performance.now() - started) / 1000 };
}

/**
 * One write through `url` (HAProxy) that lands on the member listening on `port` and commits within 3 s: HAProxy
 * sends new connections to that member and it is a primary that takes writes.
 */
async function writesReach(url: string, port: number): Promise<boolean> {
  return await probe(url, async (sql) => {
    const [row] = await sql`select inet_server_port() as port, pg_is_in_recovery() as standby`;
    if (row.port !== port || row.standby) return false;
    await sql`select txid_current()`;
    return true;
  });
}

/** Whether the primary behind `url` streams WAL to the member `name` (Patroni sets it as its application_name). */
async function streamsTo(url: string, name: string): Promise<boolean> {
  return await probe(url, async (sql) => {
    const [row] = await sql`select count(*)::int as n from pg_stat_replication
                            where application_name = ${name} and state = 'streaming'`;
    return row.n === 1;
  });
}

/**
 * A planned switchover with Patroni's own mechanism: `POST /switchover` to the primary's agent, from the primary to
 * the synchronous replica. Patroni stops the old primary cleanly (so the candidate has every commit), promotes the
 * candidate and restarts the old primary as its replica, with no pg_rewind. Resolves once the candidate takes writes
 * through HAProxy (`writableSeconds`) and the old primary streams from it as a replica (`seconds`), both counted from
 * the request. Patroni makes it the synchronous replica a few seconds later (`status` shows `"sync": true`): until
 * then commits answer from one machine, as after a failover (docs/architecture.md, "The database cluster").
 */
export async function switchoverCluster(
  dirArg: string,
  options: { timeoutMs: number },
  say: Say,
): Promise<{ from: string; to: string; writableSeconds: number; seconds: number }> {
  const { dir, layout, passwords } = await existingCluster(dirArg);
  const plan = switchoverPlan(layout, await Promise.all(layout.members.map((m) => agentAnswer(m.apiPort))));
  if ("reason" in plan) throw new ClusterError(plan.reason);
  const { leader, candidate } = plan;
  say(`switching over from ${leader.name} to ${candidate.name} (Patroni's POST /switchover)`);
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  let answer: { status: number; text: string };
  try {
    // Patroni answers once etcd names the new leader (it polls for up to 20 s), not when it takes writes
    const res = await fetch(`http://127.0.0.1:${leader.apiPort}/switchover`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: restAuthorization(passwords) },
      body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
      signal: AbortSignal.timeout(Math.min(options.timeoutMs, 30_000)),
    });
    answer = { status: res.status, text: (await res.text()).trim() };
  } catch (err) {
    throw new ClusterError(`${leader.name}'s agent did not answer the switchover: ${(err as Error).message}`);
  }
  // 503 "Switchover status unknown" only means Patroni stopped polling: what the members do decides
  if (answer.status !== 200 && !/status unknown/i.test(answer.text)) {
    throw new ClusterError(`Patroni refused the switchover (${answer.status}): ${answer.text}`);
  }
  say(`Patroni answered ${answer.status} "${answer.text}" after ${elapsed().toFixed(1)} s`);
  const url = databaseUrl(layout, passwords);
  const left = () => Math.max(options.timeoutMs - (performance.now() - started), 1000);
  await waitFor(
    `${candidate.name} did not take writes through HAProxy`,
    left(),
    () => writesReach(url, candidate.port),
  );
  const writableSeconds = elapsed();
  say(`${candidate.name} takes writes through HAProxy ${writableSeconds.toFixed(1)} s after the request`);
  // Patroni names it synchronous again some 5 s later (a loop after it streams, then a confirmation): not waited for,
  // `status` shows it
  await waitFor(
    `${leader.name} did not come back as ${candidate.name}'s replica`,
    left(),
    async () => {
      const old = await agentAnswer(leader.apiPort);
      return old?.state === "running" && roleOf(old) === "replica" && await streamsTo(url, leader.name);
    },
    `${dir}/${leader.name}/patroni.log`,
  );
  const seconds = elapsed();
  say(`${leader.name} streams as a replica ${seconds.toFixed(1)} s after the request`);
  return { from: leader.name, to: candidate.name, writableSeconds, seconds };
}

/** What `status` reports: every member's role, state, ports and live PIDs; etcd's and HAProxy's PIDs. */
export async function clusterStatus(dirArg: string): Promise<Status> {
  const { dir, layout, passwords } = await existingCluster(dirArg);
  const paths = pathsOf(dir);
  const members = await Promise.all(layout.members.map(async (member) => {
    const m = paths.member(member.name);
    return {
      agentPid: await livePid(m.pid, m.config),
      postmasterPid: await livePid(m.postmasterPid, m.data),
      agent: await agentAnswer(member.apiPort),
    };
  }));
  return statusReport(layout, {
    members,
    etcdPid: await livePid(paths.etcd.pid, paths.etcd.data),
    haproxyPid: await livePid(paths.haproxy.pid, paths.haproxy.config),
    url: databaseUrl(layout, passwords),
  });
}

/**
 * Stops every process of the cluster in `dir`: a restore rehearsal's Postgres (`recovery.ts`), then the replicas'
 * agents and postmasters (so the primary's shutdown does not set off a failover), then the primary's, etcd and
 * HAProxy; then any process still working inside `dir`.
 * Patroni leaves its postmaster running when it is killed, so postmasters are stopped by their `postmaster.pid`.
 * Nothing running is not an error. Resolves with the processes that could not be stopped (none, normally).
 */
export async function stopCluster(dirArg: string, say: Say): Promise<string[]> {
  const dir = resolveDir(dirArg);
  if (!await exists(dir)) {
    say(`nothing to stop: ${dir} does not exist`);
    return [];
  }
  // its pid files are trusted below (as root, to send signals): only in a directory no one else can change
  await assertPrivateDir(dir);
  // a restore rehearsal first: it reads the cluster's archive, and may run outside `dir` (`--into`)
  const rehearsal = await stopRehearsal(dir, { remove: false });
  if (rehearsal) say(rehearsal);
  const layout = await readLayout(dir).catch(() => null);
  const paths = pathsOf(dir);
  let stopped = 0;
  if (layout) {
    const roles = await Promise.all(layout.members.map(async (m) => roleOf(await agentAnswer(m.apiPort))));
    const order = layout.members.map((m, i) => ({ m, primary: roles[i] === "primary" }))
      .sort((a, b) => Number(a.primary) - Number(b.primary));
    for (const { m: member } of order) {
      const m = paths.member(member.name);
      const agent = await livePid(m.pid, m.config);
      if (agent) {
        await terminate(agent, m.config, ["SIGTERM", "SIGKILL"], 15_000);
        stopped++;
      }
      const postmaster = await livePid(m.postmasterPid, m.data);
      if (postmaster) {
        // fast shutdown, then immediate, then SIGKILL
        await terminate(postmaster, m.data, ["SIGINT", "SIGQUIT", "SIGKILL"], 10_000);
        stopped++;
      }
      await Deno.remove(m.pid).catch(() => {});
    }
    for (const [pidFile, marker] of [[paths.etcd.pid, paths.etcd.data], [paths.haproxy.pid, paths.haproxy.config]]) {
      const pid = await livePid(pidFile, marker);
      if (pid) {
        await terminate(pid, marker);
        stopped++;
      }
      await Deno.remove(pidFile).catch(() => {});
    }
  }
  const leftovers = await processesOf(dir);
  const ours = leftovers.filter((p) => CLUSTER_PROGRAMS.has(p.name) || p.name.startsWith("postgres"));
  const stuck = await killAll(ours);
  const foreign = leftovers.filter((p) => !ours.includes(p));
  say(
    stopped || ours.length
      ? `stopped ${stopped} process(es)${ours.length ? ` and ${ours.length} left behind` : ""} in ${dir}`
      : `nothing was running in ${dir}`,
  );
  return [...stuck, ...foreign].map((p) => `${p.pid} ${p.name}: ${p.args.join(" ")}`);
}
