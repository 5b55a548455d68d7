/**
 * `deno task cluster backup` and `restore-rehearsal` (docs/production.md, "Backups and point-in-time recovery"), with
 * Postgres' own tools: every member archives its finished WAL segments into `<dir>/wal-archive` (config.ts),
 * `pg_basebackup` takes base backups of the primary into `<dir>/backups/<time>/`, and a rehearsal restores the latest
 * base backup taken before a given time into a scratch folder and lets a standalone Postgres replay the archive up to
 * that time, then promote itself: what the database held then, on a port of its own, for an operator to read.
 */
import postgres from "postgres";
import {
  type BackupInfo,
  backupName,
  chooseBackup,
  parseBackupInfo,
  parseBasebackupOutput,
  parseTargetTime,
  recoveryStop,
  REHEARSAL_HBA,
  rehearsalConfig,
} from "./backups.ts";
import { ClusterError, pathsOf, PG_BIN_DIR, REPLICATION_USER, SUPERUSER } from "./config.ts";
import {
  agentAnswer,
  asPostgres,
  assertReachableByPostgres,
  ensurePrivateDir,
  existingCluster,
  exists,
  freePorts,
  postgresFolder,
  resolveDir,
  type Say,
  sleep,
  writeNewFile,
  writePostgresFile,
} from "./host.ts";
import { killAll, livePid, processesOf, spawnDetached, terminate } from "./processes.ts";
import { roleOf } from "./status.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Runs a program as the postgres OS user; a ClusterError with the end of its output when it fails. */
async function runAsPostgres(
  argv: string[],
  options: { timeoutMs: number; cwd: string; env?: Record<string, string> },
): Promise<string> {
  const [cmd, ...args] = [...asPostgres(), ...argv];
  const out = await new Deno.Command(cmd, {
    args,
    cwd: options.cwd,
    env: options.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(options.timeoutMs),
  }).output().catch((err) => {
    throw new ClusterError(`${argv[0]} did not finish within ${options.timeoutMs / 1000} s: ${err.message}`);
  });
  const output = text(out.stdout) + text(out.stderr);
  if (!out.success) {
    throw new ClusterError(`${argv.join(" ")} failed:\n${output.trim().split("\n").slice(-10).join("\n")}`);
  }
  return output;
}

async function folderBytes(path: string): Promise<number> {
  let bytes = 0;
  for await (const entry of Deno.readDir(path)) {
    const at = `${path}/${entry.name}`;
    bytes += entry.isDirectory ? await folderBytes(at) : (await Deno.stat(at)).size;
  }
  return bytes;
}

/**
 * Takes a base backup of the current primary with pg_basebackup into `<dir>/backups/<time>/`: tar format, compressed
 * (`base.tar.gz`, `pg_wal.tar.gz`, `backup_manifest`), with the WAL it needs streamed alongside (`-X stream`), so it
 * restores on its own; the archive is needed only to go past its end. A fast checkpoint starts it at once (the default,
 * a spread one, can take minutes). It is written under a hidden name and renamed once `backup.json` is in it, so a
 * backup cut short is never chosen for a restore.
 */
export async function takeBackup(
  dirArg: string,
  options: { timeoutMs: number },
  say: Say,
): Promise<{ path: string; info: BackupInfo; seconds: number; bytes: number }> {
  const { dir, layout, passwords } = await existingCluster(dirArg);
  const answers = await Promise.all(layout.members.map((m) => agentAnswer(m.apiPort)));
  const primary = layout.members.find((_, i) => roleOf(answers[i]) === "primary");
  if (!primary) throw new ClusterError("no running primary to back up: start the cluster first");
  const paths = pathsOf(dir);
  await postgresFolder(paths.backups, 0o700);
  const started = new Date();
  const name = backupName(started);
  const path = `${paths.backups}/${name}`;
  const partial = `${paths.backups}/.${name}.partial`;
  if (await exists(path)) throw new ClusterError(`${path} already exists: one backup a second at most`);
  const label = `deno task cluster backup ${name}`;
  say(`base backup of ${primary.name} (port ${primary.port}) into ${path}`);
  const clock = performance.now();
  try {
    const output = await runAsPostgres([
      `${PG_BIN_DIR}/pg_basebackup`,
      `--dbname=host=127.0.0.1 port=${primary.port} user=${REPLICATION_USER}`,
      `--pgdata=${partial}`,
      "--format=tar",
      "--gzip",
      "--wal-method=stream",
      "--checkpoint=fast",
      `--label=${label}`,
      "--no-password",
      "--verbose",
    ], { timeoutMs: options.timeoutMs, cwd: paths.backups, env: { PGPASSWORD: passwords.replication } });
    const info: BackupInfo = {
      label,
      member: primary.name,
      started_at: started.toISOString(),
      finished_at: new Date().toISOString(),
      ...parseBasebackupOutput(output),
    };
    // pg_basebackup made the folder as the postgres user: written as that user
    await writePostgresFile(`${partial}/backup.json`, JSON.stringify(info, null, 2) + "\n");
    await Deno.rename(partial, path);
    return { path, info, seconds: (performance.now() - clock) / 1000, bytes: await folderBytes(path) };
  } catch (err) {
    await Deno.remove(partial, { recursive: true }).catch(() => {});
    throw err;
  }
}

/** Every finished backup of the cluster in `dir` (a folder with a `backup.json`), oldest first. */
export async function listBackups(dir: string): Promise<{ path: string; info: BackupInfo }[]> {
  const root = pathsOf(dir).backups;
  const found: { path: string; info: BackupInfo }[] = [];
  if (!await exists(root)) return found;
  for await (const entry of Deno.readDir(root)) {
    if (!entry.isDirectory || entry.name.startsWith(".")) continue;
    const info = await Deno.readTextFile(`${root}/${entry.name}/backup.json`).then(parseBackupInfo, () => null);
    if (info) found.push({ path: `${root}/${entry.name}`, info });
  }
  return found.sort((a, b) => Date.parse(a.info.finished_at) - Date.parse(b.info.finished_at));
}

/** What `<dir>/rehearsal.json` and the rehearsal's own `rehearsal.json` record. */
type Rehearsal = { dir: string; cluster: string; backup: string; at: string; port: number; url: string };

function rehearsalPaths(folder: string) {
  return {
    marker: `${folder}/rehearsal.json`,
    data: `${folder}/data`,
    log: `${folder}/postgres.log`,
    pid: `${folder}/postgres.pid`,
  };
}

async function readRehearsal(path: string): Promise<Rehearsal | null> {
  const value = await Deno.readTextFile(path).then(JSON.parse, () => null);
  return typeof value?.dir === "string" && typeof value?.cluster === "string" ? value as Rehearsal : null;
}

/** Whether `folder` is absent, empty, or a rehearsal of the cluster in `dir` (which may be replaced). */
async function mayUse(folder: string, dir: string): Promise<boolean> {
  if (!await exists(folder)) return true;
  if ((await readRehearsal(rehearsalPaths(folder).marker))?.cluster === dir) return true;
  for await (const _ of Deno.readDir(folder)) return false;
  return true;
}

/**
 * Stops the restore rehearsal of the cluster in `dir`, if one runs (fast shutdown, then immediate, then SIGKILL), and
 * with `remove` deletes its folder, which holds only the rehearsal's copy. Resolves with what it did, for the report.
 */
export async function stopRehearsal(dirArg: string, options: { remove: boolean }): Promise<string | null> {
  const dir = resolveDir(dirArg);
  const pointer = pathsOf(dir).rehearsal;
  const rehearsal = await readRehearsal(pointer);
  if (!rehearsal) return null;
  const p = rehearsalPaths(rehearsal.dir);
  let stopped = false;
  const pid = await livePid(p.data + "/postmaster.pid", p.data) ?? await livePid(p.pid, p.data);
  if (pid) stopped = await terminate(pid, p.data, ["SIGINT", "SIGQUIT", "SIGKILL"], 10_000);
  // a rehearsal outside `dir` is not in the sweep of `stop`: anything of its own still working in its folder goes
  const left = (await processesOf(rehearsal.dir)).filter((f) => f.name.startsWith("postgres"));
  if (left.length) await killAll(left);
  let removed = false;
  if (options.remove) {
    // only a folder this command made (its marker names this cluster) is deleted
    if ((await readRehearsal(p.marker))?.cluster === dir) {
      await Deno.remove(rehearsal.dir, { recursive: true });
      removed = true;
    }
    await Deno.remove(pointer).catch(() => {});
  }
  const what = stopped || left.length ? `stopped the restore rehearsal on port ${rehearsal.port}` : null;
  if (!removed) return what;
  return `${what ?? "no restore rehearsal was running"}; removed ${rehearsal.dir}`;
}

/** Connects to the rehearsal: true once recovery has ended and it takes writes like a primary. */
async function promoted(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 1, idle_timeout: 1, onnotice: () => {} });
  try {
    const [row] = await sql`select pg_is_in_recovery() as recovering`;
    return row.recovering === false;
  } catch {
    return false; // still starting or replaying: with hot_standby off it accepts no connection until it promotes
  } finally {
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

/**
 * Restores the cluster in `dir` as it was at `at`: the latest base backup finished by then, unpacked into a scratch
 * folder (`<dir>/rehearsal`, or `into`), replayed by a standalone Postgres from the cluster's WAL archive up to `at`
 * (`recovery_target_time`), which then promotes itself and stays running on a free loopback port until
 * `restore-rehearsal --stop` or `stop`. A rehearsal already there is replaced. Resolves with its URL once it takes
 * connections, and with Postgres' word on where it stopped.
 */
export async function startRehearsal(
  dirArg: string,
  options: { at: string; into?: string; timeoutMs: number },
  say: Say,
): Promise<{ url: string; backup: string; stop: string | null; seconds: number }> {
  const started = performance.now();
  const { dir, passwords } = await existingCluster(dirArg);
  const target = parseTargetTime(options.at);
  if (!target) {
    throw new ClusterError(`--at ${options.at}: give a time with its zone, e.g. 2026-11-25T19:42:25Z`);
  }
  const backups = await listBackups(dir);
  const backup = chooseBackup(backups, target.instant);
  if (!backup) {
    const first = backups[0]?.info.finished_at;
    throw new ClusterError(
      first ? `no backup had finished by ${options.at}: the first finished at ${first}` : `no backup in ${dir}/backups`,
    );
  }
  const folder = options.into ? resolveDir(options.into) : `${dir}/rehearsal`;
  // a folder of the cluster's (pg0, wal-archive, ...) is not empty, so `mayUse` below refuses it
  if (folder === dir || dir.startsWith(`${folder}/`)) {
    throw new ClusterError(`--into ${folder}: choose a folder of its own, not the cluster's or one above it`);
  }
  const previous = await stopRehearsal(dir, { remove: true });
  if (previous) say(previous);
  if (!await mayUse(folder, dir)) throw new ClusterError(`${folder} holds files: give an empty or new folder`);
  await Deno.remove(folder, { recursive: true }).catch(() => {});
  // made afresh by this user where no one else can rename it (`assertPrivateDir`), then handed to Postgres' user
  await ensurePrivateDir(folder, "--into");
  await postgresFolder(folder, 0o755);
  await assertReachableByPostgres(folder, "--into");
  const p = rehearsalPaths(folder);
  await runAsPostgres(["mkdir", "-m", "700", p.data], { timeoutMs: 10_000, cwd: folder });
  say(`restoring ${backup.path} (finished ${backup.info.finished_at}) into ${p.data}`);
  await runAsPostgres(["tar", "-xzf", `${backup.path}/base.tar.gz`, "-C", p.data], { timeoutMs: 120_000, cwd: folder });
  await runAsPostgres(["tar", "-xzf", `${backup.path}/pg_wal.tar.gz`, "-C", `${p.data}/pg_wal`], {
    timeoutMs: 120_000,
    cwd: folder,
  });

  const [port] = freePorts(1);
  // the backup holds the cluster's roles, with their passwords
  const url = `postgres://${SUPERUSER}:${passwords.superuser}@127.0.0.1:${port}/postgres`;
  // a standby's signal file from the backup would make it a standby; recovery.signal asks for a targeted recovery
  for (const name of ["standby.signal", "postmaster.pid"]) await Deno.remove(`${p.data}/${name}`).catch(() => {});
  const files: [string, string][] = [
    ["postgresql.conf", rehearsalConfig({ port, archiveDir: pathsOf(dir).walArchive, target: target.forPostgres })],
    ["pg_hba.conf", REHEARSAL_HBA],
    ["recovery.signal", ""],
  ];
  for (const [name, content] of files) await writePostgresFile(`${p.data}/${name}`, content);
  const record: Rehearsal = { dir: folder, cluster: dir, backup: backup.path, at: target.forPostgres, port, url };
  // recorded before it starts, so `stop` finds it even if this command is interrupted
  await writePostgresFile(p.marker, JSON.stringify(record, null, 2) + "\n");
  await writeNewFile(pathsOf(dir).rehearsal, JSON.stringify(record, null, 2) + "\n", 0o600);

  // archive_mode=off on the command line as well: it overrides a postgresql.auto.conf (ALTER SYSTEM) from the backup
  const pid = await spawnDetached(
    [`${PG_BIN_DIR}/postgres`, "-D", p.data, "-c", "archive_mode=off"],
    { log: p.log, pidFile: p.pid, cwd: folder, as: asPostgres() },
  );
  say(`Postgres replays the archive up to ${target.forPostgres} (pid ${pid}, port ${port}); its log: ${p.log}`);
  const deadline = performance.now() + options.timeoutMs;
  while (!await promoted(url)) {
    if (!await livePid(p.pid, p.data)) {
      const log = await Deno.readTextFile(p.log).catch(() => "");
      // its refusals of our connection attempts while it replays are FATAL lines too: not the reason
      const fatal = log.split("\n").filter((l) =>
        /FATAL|PANIC/.test(l) && !/not accepting connections|starting up/.test(l)
      )
        .slice(-3).join("\n");
      const hint = /recovery ended before configured recovery target/.test(fatal)
        ? `\nthe archive ends before ${options.at}: for a recent time, run \`select pg_switch_wal()\` on the primary ` +
          "and wait for the segment to be archived"
        : "";
      throw new ClusterError(
        `the restored Postgres stopped before its recovery ended:\n${fatal || log.slice(-2000)}${hint}`,
      );
    }
    if (performance.now() > deadline) {
      await stopRehearsal(dir, { remove: false }); // nothing left running after a failed command
      throw new ClusterError(`recovery did not end within ${options.timeoutMs / 1000} s; see ${p.log}`);
    }
    await sleep(200);
  }
  const stop = recoveryStop(await Deno.readTextFile(p.log).catch(() => ""));
  return { url, backup: backup.path, stop, seconds: (performance.now() - started) / 1000 };
}
