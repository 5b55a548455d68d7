import assert from "node:assert/strict";
import postgres from "postgres";
import {
  archiveCommand,
  databaseUrl,
  etcdArgs,
  haproxyConfig,
  parseLayout,
  pathsOf,
  patroniConfig,
  planLayout,
  portsNeeded,
  restoreCommand,
  toYaml,
} from "../../jobs/commands/cluster/config.ts";
import {
  type BackupInfo,
  backupName,
  chooseBackup,
  confValue,
  parseBackupInfo,
  parseBasebackupOutput,
  parseTargetTime,
  recoveryStop,
  rehearsalConfig,
} from "../../jobs/commands/cluster/backups.ts";
import { cannotInstall, ensurePackages, missingPackages } from "../../jobs/commands/cluster/packages.ts";
import { parsePid } from "../../jobs/commands/cluster/processes.ts";
import { parseStatus, primaryOf, roleOf, type Status, statusReport } from "../../jobs/commands/cluster/status.ts";
import { switchoverPlan } from "../../jobs/commands/cluster/switchover.ts";

const root = new URL("../..", import.meta.url).pathname;
const PORTS = [41001, 41002, 41003, 41004, 41005, 41006, 41007];
const layout = planLayout(PORTS, { members: 2, strict: false });

Deno.test("a new cluster's layout: etcd, HAProxy and two members on the ports given, never 5432", () => {
  assert.equal(portsNeeded(2), 7);
  assert.deepEqual(layout.etcd, { clientPort: 41001, peerPort: 41002 });
  assert.deepEqual(layout.haproxy, { port: 41003 });
  assert.deepEqual(layout.members, [
    { name: "pg0", port: 41004, apiPort: 41005 },
    { name: "pg1", port: 41006, apiPort: 41007 },
  ]);
  assert.throws(() => planLayout([5432, ...PORTS.slice(1)], { members: 2, strict: false }), /5432/);
  assert.throws(() => planLayout([41001, 41001, ...PORTS.slice(2)], { members: 2, strict: false }), /distinct/);
  assert.deepEqual(parseLayout(JSON.stringify(layout)), layout);
  assert.throws(() => parseLayout('{"version": 1}'), /not a cluster.json/);
  assert.equal(databaseUrl(layout), "postgres://postgres:postgres@127.0.0.1:41003/postgres");
});

Deno.test("Patroni's configuration: etcd3, short timeouts, synchronous mode, pg_rewind, every file in the directory", () => {
  const config = patroniConfig(layout, layout.members[1], "/srv/c");
  const dcs = (config.bootstrap as { dcs: Record<string, unknown> }).dcs;
  assert.deepEqual(config.etcd3, { host: "127.0.0.1:41001" });
  assert.equal(config.etcd, undefined, "etcd 3.4 has its v2 API off");
  assert.equal(config.name, "pg1");
  assert.deepEqual(config.restapi, { listen: "127.0.0.1:41007", connect_address: "127.0.0.1:41007" });
  assert.equal(dcs.ttl, 5);
  assert.equal(dcs.loop_wait, 1);
  assert.equal(dcs.retry_timeout, 2);
  assert.equal(dcs.synchronous_mode, true);
  assert.equal(dcs.synchronous_mode_strict, false);
  assert.equal(typeof dcs.maximum_lag_on_failover, "number");
  assert.equal((dcs.postgresql as { use_pg_rewind: boolean }).use_pg_rewind, true);
  const pg = config.postgresql as Record<string, unknown>;
  assert.equal(pg.listen, "127.0.0.1:41006");
  assert.equal(pg.data_dir, "/srv/c/pg1/data");
  assert.equal(pg.pgpass, "/srv/c/pg1/pgpass");
  assert.equal((pg.parameters as Record<string, string>).unix_socket_directories, "/srv/c/pg1");
  assert.ok((pg.pg_hba as string[]).every((line) => line.startsWith("local") || line.includes("127.0.0.1/32")));
  const strict = patroniConfig(planLayout(PORTS, { members: 2, strict: true }), layout.members[0], "/srv/c");
  assert.equal((strict.bootstrap as { dcs: Record<string, unknown> }).dcs.synchronous_mode_strict, true);
  // a Unix socket path is limited to 107 bytes: past that, TCP only
  const deep = patroniConfig(layout, layout.members[0], `/srv/${"x".repeat(100)}`);
  assert.equal(
    ((deep.postgresql as Record<string, unknown>).parameters as Record<string, string>).unix_socket_directories,
    "",
  );
});

Deno.test("the YAML Patroni reads: block maps, JSON scalars, lists, flow maps inside lists", () => {
  assert.equal(
    toYaml({ a: 1, b: { c: "x: y", d: true, e: {}, f: [] }, g: ["local all all trust", { encoding: "UTF8" }] }),
    [
      "a: 1",
      "b:",
      '  c: "x: y"',
      "  d: true",
      "  e: {}",
      "  f: []",
      "g:",
      '  - "local all all trust"',
      '  - {"encoding": "UTF8"}',
    ].join("\n"),
  );
  const yaml = toYaml(patroniConfig(layout, layout.members[0], "/srv/c"));
  assert.match(yaml, /^etcd3:\n {2}host: "127\.0\.0\.1:41001"$/m);
  assert.match(yaml, /^ {4}synchronous_mode: true$/m);
});

Deno.test("HAProxy leads to the member whose agent answers /primary and cuts a demoted primary's sessions", () => {
  const cfg = haproxyConfig(layout);
  assert.match(cfg, /^ {2}bind 127\.0\.0\.1:41003$/m);
  assert.match(cfg, /^ {2}option httpchk OPTIONS \/primary$/m);
  assert.match(cfg, /^ {2}http-check expect status 200$/m);
  assert.match(cfg, /^ {2}default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions$/m);
  assert.match(cfg, /^ {2}server pg0 127\.0\.0\.1:41004 maxconn 100 check port 41005$/m);
  assert.match(cfg, /^ {2}server pg1 127\.0\.0\.1:41006 maxconn 100 check port 41007$/m);
  const args = etcdArgs(layout, "/srv/c");
  assert.ok(args.includes("--data-dir=/srv/c/etcd"));
  assert.ok(args.includes("--listen-client-urls=http://127.0.0.1:41001"));
  assert.equal(pathsOf("/srv/c").member("pg0").postmasterPid, "/srv/c/pg0/data/postmaster.pid");
});

Deno.test("status: roles from the agents, a member whose agent is down is a replica, pids of what runs", () => {
  assert.equal(roleOf({ state: "running", role: "master" }), "primary");
  assert.equal(roleOf({ state: "running", role: "primary" }), "primary");
  assert.equal(roleOf({ state: "starting", role: "master" }), "replica");
  assert.equal(roleOf({ state: "running", role: "replica" }), "replica");
  assert.equal(roleOf(null), "replica");
  const status = statusReport(layout, {
    members: [
      { agentPid: null, postmasterPid: 812, agent: null },
      { agentPid: 900, postmasterPid: 901, agent: { state: "running", role: "master" } },
    ],
    etcdPid: 700,
    haproxyPid: null,
    url: databaseUrl(layout),
  });
  assert.deepEqual(status.members[0], {
    name: "pg0",
    role: "replica",
    state: "down",
    sync: false,
    port: 41004,
    api_port: 41005,
    pids: [812],
  });
  assert.deepEqual(status.members[1].pids, [900, 901]);
  assert.deepEqual(status.etcd, { port: 41001, pids: [700] });
  assert.deepEqual(status.haproxy, { port: 41003, pids: [] });
  assert.deepEqual(parseStatus(`pg0 replica\n${JSON.stringify(status)}\n`), status);
  assert.equal(primaryOf(status)?.name, "pg1");
  assert.equal(parsePid("4242\n/srv/c/pg0/data\n1732000000\n"), 4242);
  assert.equal(parsePid("\n"), null);
});

Deno.test("a switchover goes from the running primary to the synchronous replica, or says why it cannot", () => {
  const primary = { state: "running", role: "master" };
  const sync = { state: "running", role: "replica", sync_standby: true };
  const [pg0, pg1] = layout.members;
  assert.deepEqual(switchoverPlan(layout, [sync, primary]), { leader: pg1, candidate: pg0 });
  assert.deepEqual(switchoverPlan(layout, [primary, sync]), { leader: pg0, candidate: pg1 });
  assert.match((switchoverPlan(layout, [null, sync]) as { reason: string }).reason, /0 running primaries/);
  const async = { state: "running", role: "replica", sync_standby: false };
  assert.match((switchoverPlan(layout, [primary, async]) as { reason: string }).reason, /no running synchronous/);
  const starting = { state: "starting", role: "replica", sync_standby: true };
  assert.match((switchoverPlan(layout, [primary, starting]) as { reason: string }).reason, /no running synchronous/);
});

/** What Postgres does to archive_command and restore_command before `sh` runs them: %p, %f and %% replaced. */
function substitute(command: string, p: string, f: string): string {
  return command.replace(/%([pf%])/g, (_, c) => c === "p" ? p : c === "f" ? f : "%");
}

async function sh(command: string, cwd: string): Promise<boolean> {
  return (await new Deno.Command("sh", { args: ["-c", command], cwd, stdout: "null", stderr: "null" }).output())
    .success;
}

Deno.test("every member archives its WAL into the directory's archive, and replays from it", () => {
  const config = patroniConfig(layout, layout.members[0], "/srv/c");
  const pg = config.postgresql as { parameters: Record<string, string>; recovery_conf: Record<string, string> };
  assert.equal(pg.parameters.archive_mode, "on");
  assert.equal(pg.parameters.archive_command, archiveCommand("/srv/c/wal-archive"));
  assert.equal(pg.recovery_conf.restore_command, "cp '/srv/c/wal-archive/'%f %p");
  assert.equal(pathsOf("/srv/c").walArchive, "/srv/c/wal-archive");
  // a quote or a percent sign in the directory stays part of the path
  assert.equal(restoreCommand("/srv/it's 100%"), "cp '/srv/it'\\''s 100%%/'%f %p");
});

Deno.test("the archive_command copies a segment once, takes the same segment again, never overwrites another", async () => {
  const work = await Deno.makeTempDir({ prefix: "payments-archive-" });
  try {
    const archive = `${work}/it's 100% archive`;
    await Deno.mkdir(archive);
    await Deno.mkdir(`${work}/pg_wal`);
    const segment = "000000010000000000000003";
    await Deno.writeTextFile(`${work}/pg_wal/${segment}`, "first");
    const archiving = substitute(archiveCommand(archive), `pg_wal/${segment}`, segment);
    assert.ok(await sh(archiving, work));
    assert.equal(await Deno.readTextFile(`${archive}/${segment}`), "first");
    assert.deepEqual([...Deno.readDirSync(archive)].map((e) => e.name), [segment], "no temporary file left");
    assert.ok(await sh(archiving, work), "the same segment again (a crash before Postgres noted it) succeeds");
    await Deno.writeTextFile(`${work}/pg_wal/${segment}`, "other");
    assert.equal(await sh(archiving, work), false, "another segment of that name is refused");
    assert.equal(await Deno.readTextFile(`${archive}/${segment}`), "first");
    await Deno.remove(`${work}/pg_wal/${segment}`);
    assert.ok(await sh(substitute(restoreCommand(archive), `pg_wal/${segment}`, segment), work));
    assert.equal(await Deno.readTextFile(`${work}/pg_wal/${segment}`), "first");
    assert.equal(await sh(substitute(restoreCommand(archive), "pg_wal/x", "00000002.history"), work), false);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("a recovery target is a time with its zone, handed to Postgres with a numeric offset", () => {
  const utc = parseTargetTime("2026-11-25T19:47:58.930774Z")!;
  assert.equal(utc.instant.toISOString(), "2026-11-25T19:47:58.930Z");
  assert.equal(utc.forPostgres, "2026-11-25 19:47:58.930774+00:00", "recovery_target_time refuses Z");
  const psql = parseTargetTime("2026-11-25 19:47:58.930774+00")!;
  assert.equal(psql.forPostgres, "2026-11-25 19:47:58.930774+00:00");
  const brt = parseTargetTime("2026-11-25T16:47-03:00")!;
  assert.equal(brt.instant.toISOString(), "2026-11-25T19:47:00.000Z");
  assert.equal(brt.forPostgres, "2026-11-25 16:47:00-03:00");
  assert.equal(parseTargetTime("2026-11-25T19:47:58"), null, "no zone");
  assert.equal(parseTargetTime("2026-02-30T10:00:00Z"), null);
  assert.equal(parseTargetTime("now"), null);
  assert.equal(parseTargetTime("2026-11-25T19:47:58Z'; archive_mode = 'on"), null);
});

Deno.test("a restore starts from the latest backup finished by the target time", () => {
  const info = (finished: string): BackupInfo => ({
    label: "x",
    member: "pg0",
    started_at: finished,
    finished_at: finished,
    start_lsn: "0/4000028",
    end_lsn: "0/4000100",
    timeline: 1,
  });
  const backups = ["2026-11-25T10:00:00Z", "2026-11-25T12:00:00Z", "2026-11-25T11:00:00Z"].map((t) => ({
    path: t,
    info: info(t),
  }));
  assert.equal(chooseBackup(backups, new Date("2026-11-25T11:30:00Z"))?.path, "2026-11-25T11:00:00Z");
  assert.equal(chooseBackup(backups, new Date("2026-11-25T12:00:00Z"))?.path, "2026-11-25T12:00:00Z");
  assert.equal(chooseBackup(backups, new Date("2026-11-25T09:59:59Z")), null);
  assert.deepEqual(parseBackupInfo(JSON.stringify(info("2026-11-25T10:00:00Z"))), info("2026-11-25T10:00:00Z"));
  assert.throws(() => parseBackupInfo('{"label": "x"}'), /not a backup.json/);
  assert.equal(backupName(new Date("2026-11-25T19:47:57.123Z")), "20261125T194757Z");
  const output = [
    "pg_basebackup: initiating base backup, waiting for checkpoint to complete",
    "pg_basebackup: write-ahead log start point: 0/4000028 on timeline 3",
    "pg_basebackup: write-ahead log end point: 0/4000100",
  ].join("\n");
  assert.deepEqual(parseBasebackupOutput(output), { start_lsn: "0/4000028", end_lsn: "0/4000100", timeline: 3 });
});

Deno.test("a restore rehearsal replays to its target and promotes, without archiving or waiting for a standby", () => {
  const conf = rehearsalConfig({ port: 41999, archiveDir: "/srv/c/wal-archive", target: "2026-11-25 19:47:58+00:00" });
  const lines = conf.split("\n");
  for (
    const line of [
      "port = 41999",
      "listen_addresses = '127.0.0.1'",
      "archive_mode = 'off'",
      "synchronous_standby_names = ''",
      "restore_command = 'cp ''/srv/c/wal-archive/''%f %p'",
      "recovery_target_time = '2026-11-25 19:47:58+00:00'",
      "recovery_target_action = 'promote'",
    ]
  ) assert.ok(lines.includes(line), `${line} in\n${conf}`);
  assert.equal(confValue("a'b\\c"), "'a''b\\\\c'");
  const log = "2026-11-25 19:48:25.885 GMT [27879] LOG:  recovery stopping before commit of transaction 731, time " +
    "2026-11-25 19:47:59.008375+00\n";
  assert.equal(
    recoveryStop(log),
    "recovery stopping before commit of transaction 731, time 2026-11-25 19:47:59.008375+00",
  );
  assert.equal(recoveryStop("LOG:  redo starts at 0/4000028\n"), null);
});

/**
 * Why the cluster story cannot run here, or null when it can. The Debian packages are installed now when they are
 * missing and can be (root, apt-get, an archive that answers), as `deno task cluster start` would; a machine where
 * they cannot be reports the story as ignored with the reason, never as failed.
 */
async function clusterUnavailable(): Promise<string | null> {
  const missing = await missingPackages();
  const reason = await cannotInstall(missing);
  if (reason) return reason;
  try {
    await ensurePackages();
    return null;
  } catch (err) {
    return `the cluster's packages could not be installed: ${err instanceof Error ? err.message.split("\n")[0] : err}`;
  }
}
const whyNot = await clusterUnavailable();
if (whyNot) console.warn(`cluster_test: the cluster story is ignored: ${whyNot}`);

async function task(
  command: string,
  dir: string,
  ...options: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  // a command that cannot succeed fails within the test's budget rather than after its default 120 s
  const waits = ["start", "switchover", "backup"].includes(command) ||
    command === "restore-rehearsal" && !options.includes("--stop");
  const timeout = waits ? ["--timeout", "40"] : [];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cluster", command, "--dir", dir, ...options, ...timeout],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

async function status(dir: string): Promise<Status> {
  const out = await task("status", dir);
  assert.equal(out.code, 0, out.stderr);
  return parseStatus(out.stdout);
}

/** One write through `url` on a fresh connection, given up after 2 s: true when it committed. */
async function writes(url: string, note: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 1, onnotice: () => {} });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      sql`insert into cluster_story (note) values (${note})`.then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), 2000)),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

/**
 * The processes still working in `dir` or naming a path inside it (`processesOf`), listed by a child with every
 * permission: Deno lets only such a process read /proc, and the test runner grants the tests less.
 */
async function processesIn(dir: string): Promise<string[]> {
  const module = new URL("../../jobs/commands/cluster/processes.ts", import.meta.url).href;
  const code = `import { processesOf } from ${JSON.stringify(module)};
    for (const p of await processesOf(${JSON.stringify(dir)})) console.log(p.pid, p.name, p.args.join(" "));`;
  const out = await new Deno.Command(Deno.execPath(), { args: ["eval", code], cwd: root, stdout: "piped" }).output();
  assert.ok(out.success, "listing the processes of the cluster");
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line !== "");
}

const seconds = (since: number) => (performance.now() - since) / 1000;

Deno.test({
  name: `a local HA cluster: start, back up, lose the primary, writes resume, the old primary rejoins, switch over, ` +
    `restore a past time, stop${whyNot ? ` (ignored: ${whyNot})` : ""}`,
  ignore: whyNot !== null,
  fn: async (t) => {
    // the postgres user must be able to enter it (tests/run.ts does the same for the embedded Postgres)
    const dir = await Deno.makeTempDir({ prefix: "payments-cluster-" });
    await Deno.chmod(dir, 0o755);
    // a restore rehearsal outside the cluster's directory (`--into`): `stop` must find it all the same
    const scratch = `${dir}-rehearsal`;
    try {
      let url = "";
      let first = "";
      await t.step("start: the last line is a URL that takes writes", async () => {
        const since = performance.now();
        const out = await task("start", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        url = out.stdout.trim().split("\n").at(-1) ?? "";
        assert.match(url, /^postgres:\/\/postgres:postgres@127\.0\.0\.1:[0-9]+\/postgres$/);
        assert.notEqual(new URL(url).port, "5432");
        console.log(`cluster: start to ready ${seconds(since).toFixed(1)} s (the command itself included)`);
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        try {
          await sql`create table cluster_story (id serial primary key, note text not null)`;
          const [{ sync }] = await sql`select count(*)::int as sync from pg_stat_replication where sync_state = 'sync'`;
          assert.equal(sync, 1, "a synchronous replica streams");
        } finally {
          await sql.end({ timeout: 1 });
        }
        assert.ok(await writes(url, "before the failover"));
      });

      await t.step("status: two members, one primary, the PIDs of each", async () => {
        const s = await status(dir);
        assert.equal(s.members.length, 2);
        assert.equal(s.url, url);
        const primary = primaryOf(s);
        assert.ok(primary, JSON.stringify(s));
        first = primary.name;
        for (const m of s.members) assert.equal(m.pids.length, 2, `${m.name}: its agent and its postmaster`);
        assert.ok(s.members.find((m) => m.role === "replica")?.sync, "the replica is the synchronous one");
        assert.equal(s.etcd.pids.length, 1);
        assert.equal(s.haproxy.pids.length, 1);
      });

      await t.step("backup: a base backup of the primary, row A in it", async () => {
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        try {
          await sql`create table pitr_story (note text not null)`;
          await sql`insert into pitr_story values ('A')`;
        } finally {
          await sql.end({ timeout: 1 });
        }
        const since = performance.now();
        const out = await task("backup", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        console.log(`cluster: base backup ${seconds(since).toFixed(1)} s (the command itself included)`);
        const path = out.stdout.trim().split("\n").at(-1) ?? "";
        assert.ok(path.startsWith(`${dir}/backups/`), path);
        assert.match(path.slice(dir.length), /^\/backups\/[0-9]{8}T[0-9]{6}Z$/);
        const info = parseBackupInfo(await Deno.readTextFile(`${path}/backup.json`));
        assert.equal(info.member, primaryOf(await status(dir))?.name);
        assert.equal(info.timeline, 1);
        for (const file of ["base.tar.gz", "pg_wal.tar.gz", "backup_manifest"]) await Deno.stat(`${path}/${file}`);
      });

      await t.step("losing the primary's machine: a write through the same URL succeeds within 30 s", async () => {
        const primary = primaryOf(await status(dir))!;
        const since = performance.now();
        for (const pid of primary.pids) Deno.kill(pid, "SIGKILL");
        let ok = false;
        while (!ok && seconds(since) < 30) {
          ok = await writes(url, "after the failover");
          if (!ok) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.ok(ok, "no write succeeded within 30 s of the primary's loss");
        console.log(`cluster: primary lost to first accepted write ${seconds(since).toFixed(1)} s`);
        const s = await status(dir);
        const now = primaryOf(s);
        assert.ok(now && now.name !== first, JSON.stringify(s));
        const lost = s.members.find((m) => m.name === first)!;
        assert.deepEqual(lost.pids, []);
        assert.equal(lost.state, "down");
      });

      await t.step("start again: the old primary rejoins as the synchronous replica, nothing lost", async () => {
        const since = performance.now();
        const out = await task("start", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        assert.equal(out.stdout.trim().split("\n").at(-1), url);
        console.log(`cluster: resumed in ${seconds(since).toFixed(1)} s`);
        const s = await status(dir);
        const old = s.members.find((m) => m.name === first)!;
        assert.equal(old.role, "replica");
        assert.equal(old.state, "running");
        assert.equal(old.sync, true);
        assert.equal(old.pids.length, 2);
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        try {
          // an attempt given up on after 2 s may still have committed: "after" at least once
          const notes = (await sql`select note from cluster_story order by id`).map((r) => r.note);
          assert.equal(notes[0], "before the failover");
          assert.ok(notes.length >= 2 && notes.slice(1).every((n) => n === "after the failover"), notes.join());
        } finally {
          await sql.end({ timeout: 1 });
        }
      });

      await t.step("switchover: the synchronous replica becomes the primary, the old one follows it", async () => {
        const before = primaryOf(await status(dir))!;
        const since = performance.now();
        const out = await task("switchover", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        console.log(`cluster: switchover ${seconds(since).toFixed(1)} s (the command itself included)`);
        const s = parseStatus(out.stdout);
        const now = primaryOf(s);
        assert.ok(now && now.name !== before.name, JSON.stringify(s));
        const old = s.members.find((m) => m.name === before.name)!;
        // synchronous again a few seconds later (Patroni's own pace): the command does not wait for it
        assert.deepEqual([old.role, old.state, old.pids.length], ["replica", "running", 2]);
        assert.ok(await writes(url, "after the switchover"));
      });

      await t.step("restore rehearsal at time T, two timelines after the backup: rows A and B, not C", async () => {
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        let at = "";
        let segment = "";
        try {
          await sql`insert into pitr_story values ('B')`;
          [{ at }] = await sql`select to_char(clock_timestamp() at time zone 'UTC',
                                              'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`;
          await sql`insert into pitr_story values ('C')`;
          // recovery stops at the first commit after T (C's), which must be in the archive: close its segment
          [{ segment }] = await sql`select pg_walfile_name(pg_switch_wal()) as segment`;
        } finally {
          await sql.end({ timeout: 1 });
        }
        const archived = () => Deno.stat(`${dir}/wal-archive/${segment}`).then(() => true, () => false);
        const waiting = performance.now();
        while (!await archived() && seconds(waiting) < 10) await new Promise((resolve) => setTimeout(resolve, 100));
        assert.ok(await archived(), `${segment} archived within 10 s`);
        const since = performance.now();
        const out = await task("restore-rehearsal", dir, "--at", at, "--into", scratch);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        console.log(`cluster: restore rehearsal ${seconds(since).toFixed(1)} s (the command itself included)`);
        assert.match(out.stdout, /recovery stopping before commit/);
        const restored = out.stdout.trim().split("\n").at(-1) ?? "";
        assert.match(restored, /^postgres:\/\/postgres:postgres@127\.0\.0\.1:[0-9]+\/postgres$/);
        assert.ok(![url, "5432"].includes(restored) && new URL(restored).port !== "5432");
        const copy = postgres(restored, { max: 1, onnotice: () => {} });
        try {
          const notes = (await copy`select note from pitr_story order by note`).map((r) => r.note);
          assert.deepEqual(notes, ["A", "B"]);
          const [{ recovering }] = await copy`select pg_is_in_recovery() as recovering`;
          assert.equal(recovering, false, "promoted: it can be written to like the database at T");
        } finally {
          await copy.end({ timeout: 1 });
        }
        assert.ok((await processesIn(scratch)).length > 0, "the rehearsal keeps running until stopped");
      });

      await t.step("stop: no process of the cluster is left; a second stop is harmless", async () => {
        const out = await task("stop", dir);
        assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
        assert.match(out.stdout, /stopped the restore rehearsal/);
        assert.deepEqual(await processesIn(dir), []);
        assert.deepEqual(await processesIn(scratch), []);
        const removed = await task("restore-rehearsal", dir, "--stop");
        assert.equal(removed.code, 0, removed.stderr);
        assert.equal(await Deno.stat(scratch).then(() => true, () => false), false, "--stop removes its folder");
        const again = await task("stop", dir);
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stdout, /nothing was running/);
      });
    } finally {
      await task("stop", dir);
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(scratch, { recursive: true }).catch(() => {});
    }
  },
});
