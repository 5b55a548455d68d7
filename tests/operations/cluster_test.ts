/**
 * The parts of `deno task cluster` (commands/cluster/): the configuration and YAML it writes, HAProxy's routing,
 * status, switchover and restore choices, and the trust rules for its directory, files and passwords.
 */
import assert from "node:assert/strict";
import {
  archiveCommand,
  databaseUrl,
  etcdArgs,
  haproxyConfig,
  newPasswords,
  parseLayout,
  parsePasswords,
  pathsOf,
  patroniConfig,
  PG_HBA,
  planLayout,
  portsNeeded,
  restAuthorization,
  restoreCommand,
  toYaml,
} from "../../commands/cluster/config.ts";
import {
  type BackupInfo,
  backupName,
  chooseBackup,
  confValue,
  parseBackupInfo,
  parseBasebackupOutput,
  parseTargetTime,
  recoveryStop,
  REHEARSAL_HBA,
  rehearsalConfig,
} from "../../commands/cluster/backups.ts";
import {
  assertPrivateDir,
  clusterPasswords,
  postgresFolder,
  writeNewFile,
  writePostgresFile,
} from "../../commands/cluster/host.ts";
import { parsePid } from "../../commands/cluster/processes.ts";
import { parseStatus, primaryOf, roleOf, statusReport } from "../../commands/cluster/status.ts";
import { switchoverPlan } from "../../commands/cluster/switchover.ts";

const PORTS = [41001, 41002, 41003, 41004, 41005, 41006, 41007];
const layout = planLayout(PORTS, { members: 2, strict: false });
const PASSWORDS = {
  superuser: "a".repeat(64),
  replication: "b".repeat(64),
  rest: "c".repeat(64),
  etcd: "d".repeat(64),
};

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
  assert.equal(databaseUrl(layout, PASSWORDS), `postgres://postgres:${"a".repeat(64)}@127.0.0.1:41003/postgres`);
});

Deno.test("Patroni's configuration: etcd3, short timeouts, synchronous mode, pg_rewind, every file in the directory", () => {
  const config = patroniConfig(layout, layout.members[1], "/srv/c", PASSWORDS);
  const dcs = (config.bootstrap as { dcs: Record<string, unknown> }).dcs;
  assert.deepEqual(config.etcd3, { host: "127.0.0.1:41001", username: "root", password: "d".repeat(64) });
  assert.equal(config.etcd, undefined, "etcd 3.4 has its v2 API off");
  assert.equal(config.name, "pg1");
  assert.deepEqual(config.restapi, {
    listen: "127.0.0.1:41007",
    connect_address: "127.0.0.1:41007",
    authentication: { username: "patroni", password: "c".repeat(64) },
  });
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
  assert.deepEqual(pg.authentication, {
    superuser: { username: "postgres", password: "a".repeat(64) },
    replication: { username: "replicator", password: "b".repeat(64) },
  });
  const strict = patroniConfig(planLayout(PORTS, { members: 2, strict: true }), layout.members[0], "/srv/c", PASSWORDS);
  assert.equal((strict.bootstrap as { dcs: Record<string, unknown> }).dcs.synchronous_mode_strict, true);
  // a Unix socket path is limited to 107 bytes: past that, TCP only
  const deep = patroniConfig(layout, layout.members[0], `/srv/${"x".repeat(100)}`, PASSWORDS);
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
  const yaml = toYaml(patroniConfig(layout, layout.members[0], "/srv/c", PASSWORDS));
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
    url: databaseUrl(layout, PASSWORDS),
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
  const config = patroniConfig(layout, layout.members[0], "/srv/c", PASSWORDS);
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

Deno.test("no connection is trusted for coming from the machine: every one proves a generated password", () => {
  for (const hba of [PG_HBA, REHEARSAL_HBA.trim().split("\n")]) {
    assert.ok(hba.length >= 2);
    for (const line of hba) {
      assert.doesNotMatch(line, /\btrust\b/, line);
      assert.match(line, /scram-sha-256$/, line);
    }
  }
  const one = newPasswords();
  const two = newPasswords();
  assert.equal(new Set([...Object.values(one), ...Object.values(two)]).size, 8, "every password different");
  for (const password of Object.values(one)) assert.match(password, /^[0-9a-f]{64}$/);
  assert.deepEqual(parsePasswords(JSON.stringify(one)), one);
  assert.throws(() => parsePasswords(JSON.stringify({ ...one, rest: "postgres" })), /not a passwords.json/);
  assert.equal(restAuthorization(PASSWORDS), `Basic ${btoa(`patroni:${"c".repeat(64)}`)}`);
});

/** A folder of the test's own (0700 under the system's temp folder), removed after `work`. */
async function inScratch(work: (scratch: string) => Promise<void>) {
  const scratch = await Deno.makeTempDir({ prefix: "payments-cluster-dir-" });
  try {
    await work(scratch);
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

const modeOf = async (path: string) => (await Deno.lstat(path)).mode! & 0o7777;

Deno.test("the cluster's directory is refused when anyone but its caller could change it", async (t) => {
  await t.step("a private directory under a sticky /tmp is accepted", async () => {
    await inScratch(async (scratch) => {
      await Deno.mkdir(`${scratch}/c`, { mode: 0o700 });
      await assertPrivateDir(`${scratch}/c`);
      await Deno.chmod(`${scratch}/c`, 0o755);
      await assertPrivateDir(`${scratch}/c`);
    });
  });

  await t.step("writable by group or others, a link, a file, or under a folder others can write to", async () => {
    await inScratch(async (scratch) => {
      const dir = `${scratch}/c`;
      await Deno.mkdir(dir);
      for (const mode of [0o775, 0o757, 0o777, 0o1777]) {
        await Deno.chmod(dir, mode);
        await assert.rejects(assertPrivateDir(dir), /can be written by its group or others/, mode.toString(8));
      }
      await Deno.chmod(dir, 0o700);
      await Deno.symlink(dir, `${scratch}/link`);
      await assert.rejects(assertPrivateDir(`${scratch}/link`), /is a symbolic link/);
      await Deno.writeTextFile(`${scratch}/file`, "");
      await assert.rejects(assertPrivateDir(`${scratch}/file`), /is not a directory/);
      await assert.rejects(assertPrivateDir(`${scratch}/missing`), /does not exist/);
      // a folder above that anyone may write to and is not sticky: the directory can be renamed away and replaced
      await Deno.mkdir(`${scratch}/open/c`, { recursive: true, mode: 0o700 });
      await Deno.chmod(`${scratch}/open`, 0o777);
      await assert.rejects(
        assertPrivateDir(`${scratch}/open/c`),
        /above .* can be written by others and is not sticky/,
      );
      await Deno.chmod(`${scratch}/open`, 0o1777);
      await assertPrivateDir(`${scratch}/open/c`);
    });
  });

  await t.step("as root: a directory another user owns is refused, and so is a link another user owns", async () => {
    if (Deno.uid() !== 0) return; // chown needs root; the rule is the same
    await inScratch(async (scratch) => {
      await Deno.chmod(scratch, 0o755);
      const dir = `${scratch}/c`;
      await Deno.mkdir(dir, { mode: 0o700 });
      await Deno.chown(dir, 65534, 65534);
      await assert.rejects(assertPrivateDir(dir), /belongs to uid 65534, not to this user \(uid 0\)/);
      await Deno.mkdir(`${scratch}/mine`, { mode: 0o700 });
      await Deno.symlink(scratch, `${scratch}/theirs`);
      const chown = await new Deno.Command("chown", { args: ["-h", "65534:65534", `${scratch}/theirs`] }).output();
      assert.ok(chown.success, "chown -h of the link");
      await assert.rejects(assertPrivateDir(`${scratch}/theirs/mine`), /is a link owned by uid 65534/);
    });
  });

  await t.step("`start` in a directory another user prepared: refused, nothing written through its links", async () => {
    // the attacker's layout names a port in use for etcd: a tool that went on would stop there, after writing its files
    const busy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const planted = planLayout([(busy.addr as Deno.NetAddr).port, ...PORTS.slice(1)], { members: 2, strict: false });
    try {
      const cases: [string, number, number | null, RegExp][] = [
        ["writable by anyone", 0o777, null, /planted can be written by its group or others \(mode 0777\)/],
      ];
      // chown needs root; the rule is the same
      if (Deno.uid() === 0) cases.push(["another user's", 0o755, 65534, /planted belongs to uid 65534, not to this/]);
      for (const [what, mode, owner, reason] of cases) {
        await inScratch(async (scratch) => {
          await Deno.chmod(scratch, 0o755);
          const victim = `${scratch}/victim`;
          await Deno.writeTextFile(victim, "root's own\n", { mode: 0o600 });
          const dir = `${scratch}/planted`;
          await Deno.mkdir(dir);
          await Deno.writeTextFile(`${dir}/cluster.json`, JSON.stringify(planted));
          await Deno.symlink(victim, `${dir}/haproxy.cfg`);
          await Deno.chmod(dir, mode);
          if (owner !== null) await Deno.chown(dir, owner, owner);
          const out = await new Deno.Command(Deno.execPath(), {
            args: ["task", "--quiet", "cluster", "start", "--dir", dir, "--timeout", "10"],
            cwd: new URL("../..", import.meta.url).pathname,
            stdin: "null",
            stdout: "piped",
            stderr: "piped",
          }).output();
          const stderr = new TextDecoder().decode(out.stderr);
          assert.equal(await Deno.readTextFile(victim), "root's own\n", `${what}: the file a link pointed at`);
          assert.equal(out.code, 1, stderr);
          assert.match(stderr, reason, what);
          assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["cluster.json", "haproxy.cfg"]);
        });
      }
    } finally {
      busy.close();
    }
  });
});

Deno.test("files in the cluster's directory are made afresh: a planted link is replaced, never written through", async () => {
  await inScratch(async (scratch) => {
    await Deno.chmod(scratch, 0o755);
    const victim = `${scratch}/victim`;
    await Deno.writeTextFile(victim, "untouched\n", { mode: 0o600 });
    // in a folder of the caller's, and in one of Postgres' user (as root: written as that user)
    await postgresFolder(`${scratch}/pg`, 0o700);
    for (
      const [folder, write] of [
        [scratch, (p: string) => writeNewFile(p, "new\n", 0o644)],
        [`${scratch}/pg`, (p: string) => writePostgresFile(p, "new\n")],
      ] as const
    ) {
      const path = `${folder}/planted`;
      await Deno.symlink(victim, path);
      await write(path);
      assert.equal((await Deno.lstat(path)).isFile, true, "a file of its own in place of the link");
      assert.equal(await Deno.readTextFile(path), "new\n");
      assert.equal(await Deno.readTextFile(victim), "untouched\n");
    }
    assert.equal(await modeOf(`${scratch}/pg/planted`), 0o600);
    // a folder for Postgres' user is refused when a link stands in its place (chown would follow it)
    await Deno.symlink(`${scratch}/elsewhere`, `${scratch}/pg0`);
    await Deno.mkdir(`${scratch}/elsewhere`, { mode: 0o700 });
    await assert.rejects(postgresFolder(`${scratch}/pg0`, 0o700), /is not a directory \(a link\?\)/);
    assert.equal((await Deno.stat(`${scratch}/elsewhere`)).uid, Deno.uid(), "what the link points to kept its owner");
  });
});

Deno.test("the passwords file: made once, readable by its owner only, the same on every later read", async () => {
  await inScratch(async (dir) => {
    await assert.rejects(clusterPasswords(dir, { create: false }), /passwords.json is missing: a cluster made by an/);
    const made = await clusterPasswords(dir, { create: true });
    assert.equal(await modeOf(`${dir}/passwords.json`), 0o600);
    assert.deepEqual(await clusterPasswords(dir, { create: false }), made);
    assert.deepEqual(await clusterPasswords(dir, { create: true }), made, "never made again");
    await Deno.chmod(`${dir}/passwords.json`, 0o644);
    await assert.rejects(clusterPasswords(dir, { create: false }), /only you can read \(mode 0600\)/);
  });
});

// The cluster itself, started, failed over, switched over, backed up and restored with the service on it, is the
// story of tests/operations/failover_test.ts: one cluster for the suite.
