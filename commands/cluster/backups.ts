/**
 * The pure part of `deno task cluster backup` and `restore-rehearsal` (docs/production.md, "Backups and point-in-time
 * recovery"): how a base backup is named and described, which one a recovery to a given time starts from, and the
 * configuration of the standalone Postgres that replays the archive up to that time. Unit-tested; the commands
 * themselves are in `recovery.ts`.
 */
import { PG_HBA, restoreCommand } from "./config.ts";

/** What `backup.json` in a backup's folder says; a folder without one is not a finished backup. */
export type BackupInfo = {
  /** The label given to pg_basebackup (it is also in the backup's backup_label). */
  label: string;
  /** The member it was taken from, the primary at the time. */
  member: string;
  started_at: string;
  /** When pg_basebackup returned: the backup is consistent from a moment before, so any later time can be restored. */
  finished_at: string;
  /** The WAL the backup needs, as pg_basebackup reported it (null when its output did not say). */
  start_lsn: string | null;
  end_lsn: string | null;
  timeline: number | null;
};

/** A backup's folder name: its start time in UTC, sortable, with no character a shell or a bucket treats apart. */
export function backupName(at: Date): string {
  return at.toISOString().replace(/[-:]/g, "").replace(/\.[0-9]+Z$/, "Z");
}

/** Reads `backup.json` back, refusing anything `backup` did not write. */
export function parseBackupInfo(text: string): BackupInfo {
  const v = JSON.parse(text);
  const time = (t: unknown) => typeof t === "string" && !Number.isNaN(Date.parse(t));
  const lsn = (l: unknown) => l === null || (typeof l === "string" && /^[0-9A-F]+\/[0-9A-F]+$/.test(l));
  if (
    typeof v?.label !== "string" || typeof v.member !== "string" || !time(v.started_at) || !time(v.finished_at) ||
    !lsn(v.start_lsn) || !lsn(v.end_lsn) || !(v.timeline === null || Number.isInteger(v.timeline))
  ) {
    throw new Error("not a backup.json written by deno task cluster backup");
  }
  return v as BackupInfo;
}

/** The WAL range and timeline pg_basebackup reports with `--verbose`, from its output. */
export function parseBasebackupOutput(text: string): Pick<BackupInfo, "start_lsn" | "end_lsn" | "timeline"> {
  const start = text.match(/write-ahead log start point: ([0-9A-F]+\/[0-9A-F]+) on timeline ([0-9]+)/);
  const end = text.match(/write-ahead log end point: ([0-9A-F]+\/[0-9A-F]+)/);
  return { start_lsn: start?.[1] ?? null, end_lsn: end?.[1] ?? null, timeline: start ? Number(start[2]) : null };
}

/**
 * A time to recover to, as an operator writes it: ISO 8601 or Postgres' own output (`2026-11-25 19:42:25.123456+00`),
 * always with its zone (`Z` or an offset), since a time without one means something else on the cluster's machine.
 * Returns the instant (to the millisecond, to choose a backup) and the time for Postgres, with its microseconds and
 * a numeric offset: recovery_target_time refuses `Z` ("invalid value for parameter"), though SQL takes it. Null when
 * it is not such a time.
 */
export function parseTargetTime(text: string): { instant: Date; forPostgres: string } | null {
  const m = text.trim().match(
    /^([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?(Z|[+-][0-9]{2}(?::?[0-9]{2})?)$/,
  );
  if (!m) return null;
  const [, y, mo, d, h, mi, s = "00", frac = "", zone] = m;
  const digits = zone === "Z" ? "0000" : zone.slice(1).replace(":", "").padEnd(4, "0");
  const sign = zone[0] === "-" ? "-" : "+";
  const offsetMinutes = (sign === "-" ? -1 : 1) * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2)));
  const ms = Number(frac.padEnd(3, "0").slice(0, 3));
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  const instant = new Date(utc - offsetMinutes * 60_000);
  // Date.UTC rolls 2026-02-30 over to March: refuse what is not a real date and time
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  if (
    check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || check.getUTCHours() !== Number(h) ||
    check.getUTCMinutes() !== Number(mi) || check.getUTCSeconds() !== Number(s)
  ) {
    return null;
  }
  const offset = `${sign}${digits.slice(0, 2)}:${digits.slice(2)}`;
  return { instant, forPostgres: `${y}-${mo}-${d} ${h}:${mi}:${s}${frac ? `.${frac}` : ""}${offset}` };
}

/**
 * The backup a recovery to `at` starts from: the latest one finished by then. Postgres cannot stop a recovery before
 * the end of its base backup ("requested recovery stop point is before consistent recovery point"), and a later
 * backup means less WAL to replay. Null when none finished by then.
 */
export function chooseBackup<B extends { info: BackupInfo }>(backups: B[], at: Date): B | null {
  const before = backups.filter((b) => Date.parse(b.info.finished_at) <= at.getTime());
  before.sort((a, b) => Date.parse(a.info.finished_at) - Date.parse(b.info.finished_at));
  return before.at(-1) ?? null;
}

/** A value for postgresql.conf: single-quoted, with quotes and backslashes doubled. */
export function confValue(value: string | number): string {
  return typeof value === "number" ? String(value) : `'${value.replace(/['\\]/g, (c) => c + c)}'`;
}

/**
 * The postgresql.conf of a restore rehearsal, written over the one the base backup holds (Patroni's, which names the
 * member's ports, files and synchronous standby). A standalone server on loopback that replays the cluster's archive up
 * to `target` and then promotes itself, so it can be read and written like the database was at that time:
 *
 * - `archive_mode = off`: its new timeline must never reach the cluster's archive, where a history file of that
 *   number would later stop the cluster's own archiving (and mislead a recovery that looks for the latest timeline);
 * - `synchronous_standby_names = ''`: no commit waits for a standby that will never connect;
 * - `hot_standby = off`: no one reads a half-replayed state, and the server need not match the primary's
 *   max_connections and the like (which hot standby requires).
 */
export function rehearsalConfig(options: { port: number; archiveDir: string; target: string }): string {
  const settings: [string, string | number][] = [
    ["listen_addresses", "127.0.0.1"],
    ["port", options.port],
    ["unix_socket_directories", ""],
    ["shared_buffers", "64MB"],
    ["archive_mode", "off"],
    ["synchronous_standby_names", ""],
    ["hot_standby", "off"],
    ["restore_command", restoreCommand(options.archiveDir)],
    ["recovery_target_time", options.target],
    ["recovery_target_timeline", "latest"],
    ["recovery_target_action", "promote"],
  ];
  return [
    "# deno task cluster restore-rehearsal: a standalone copy of the cluster at one time, never one of its members",
    ...settings.map(([name, value]) => `${name} = ${confValue(value)}`),
    "",
  ].join("\n");
}

/** Loopback only, with the cluster's passwords (restored with its roles), like the cluster's members. */
export const REHEARSAL_HBA = PG_HBA.join("\n") + "\n";

/** Where recovery stopped, from the rehearsal's log: Postgres' own words, or null when it has not said yet. */
export function recoveryStop(log: string): string | null {
  const lines = log.split("\n");
  const stop = lines.find((l) => /recovery stopping (before|after)/.test(l));
  return stop ? stop.replace(/^.*?LOG:\s+/, "") : null;
}
