/**
 * The pure half of `deno task cluster` (README, "A Postgres HA cluster"; docs/architecture.md, "The database
 * cluster"): where each file of a cluster lives inside its directory, and the text of every configuration file.
 * Nothing here touches the disk or a process, so all of it is unit-tested.
 */

/** A failure `deno task cluster` explains in one line (no stack trace): a missing package, a port taken, a timeout. */
export class ClusterError extends Error {}

/** Debian's PostgreSQL 15 programs (package `postgresql-15`); Patroni runs initdb, pg_ctl, pg_rewind from here. */
export const PG_BIN_DIR = "/usr/lib/postgresql/15/bin";

/** The superuser the service connects as. Loopback connections are trusted, so the password is never checked. */
export const SUPERUSER = { username: "postgres", password: "postgres" };
export const REPLICATION_USER = { username: "replicator", password: "replicator" };

/** One Postgres member: its Patroni agent's REST port and its postmaster's port. */
export type Member = { name: string; port: number; apiPort: number };

/** What `start` decides once and writes to `cluster.json`, so that a later `start` resumes on the same ports. */
export type Layout = {
  version: 1;
  scope: string;
  members: Member[];
  etcd: { clientPort: number; peerPort: number };
  haproxy: { port: number };
  /** Patroni's `synchronous_mode_strict` (docs/architecture.md, "The database cluster"). */
  strict: boolean;
};

/** Ports a layout needs: two for etcd, one for HAProxy and two per member. */
export function portsNeeded(members: number): number {
  return 3 + 2 * members;
}

/** The layout of a new cluster of `members` Postgres members on the given distinct ports (never 5432). */
export function planLayout(ports: number[], options: { members: number; strict: boolean }): Layout {
  if (ports.length < portsNeeded(options.members)) throw new Error(`${portsNeeded(options.members)} ports needed`);
  if (new Set(ports).size !== ports.length) throw new Error("ports must be distinct");
  if (ports.includes(5432)) throw new Error("5432 belongs to the machine's own Postgres");
  const [clientPort, peerPort, haproxyPort, ...rest] = ports;
  const members = Array.from({ length: options.members }, (_, i) => ({
    name: `pg${i}`,
    port: rest[2 * i],
    apiPort: rest[2 * i + 1],
  }));
  return {
    version: 1,
    scope: "local",
    members,
    etcd: { clientPort, peerPort },
    haproxy: { port: haproxyPort },
    strict: options.strict,
  };
}

/** Reads `cluster.json` back, refusing anything that is not a layout this version wrote. */
export function parseLayout(text: string): Layout {
  const value = JSON.parse(text);
  const port = (p: unknown) => Number.isInteger(p) && (p as number) > 0 && (p as number) < 65536;
  if (
    value?.version !== 1 || typeof value.scope !== "string" || !Array.isArray(value.members) ||
    !value.members.length ||
    !value.members.every((m: Member) => typeof m?.name === "string" && port(m.port) && port(m.apiPort)) ||
    !port(value.etcd?.clientPort) || !port(value.etcd?.peerPort) || !port(value.haproxy?.port) ||
    typeof value.strict !== "boolean"
  ) {
    throw new Error("not a cluster.json written by deno task cluster");
  }
  return value as Layout;
}

/** Every path of a cluster, all inside its directory `dir` (absolute, without a trailing slash). */
export function pathsOf(dir: string) {
  const member = (name: string) => ({
    dir: `${dir}/${name}`,
    config: `${dir}/${name}/patroni.yml`,
    data: `${dir}/${name}/data`,
    pgpass: `${dir}/${name}/pgpass`,
    log: `${dir}/${name}/patroni.log`,
    pid: `${dir}/${name}/patroni.pid`,
    postmasterPid: `${dir}/${name}/data/postmaster.pid`,
  });
  return {
    layout: `${dir}/cluster.json`,
    /** Every member's archive_command copies here: one place shared by the members, as a bucket would be. */
    walArchive: `${dir}/wal-archive`,
    /** `backup` writes one folder per base backup here (`backups.ts`). */
    backups: `${dir}/backups`,
    /** Where the running restore rehearsal is (its folder may be outside `dir`: `--into`). */
    rehearsal: `${dir}/rehearsal.json`,
    etcd: { data: `${dir}/etcd`, log: `${dir}/etcd.log`, pid: `${dir}/etcd.pid` },
    haproxy: { config: `${dir}/haproxy.cfg`, log: `${dir}/haproxy.log`, pid: `${dir}/haproxy.pid` },
    member,
  };
}

/** The URL the service uses: HAProxy's port, which leads to whichever member is the primary. */
export function databaseUrl(layout: Layout): string {
  const { username, password } = SUPERUSER;
  return `postgres://${username}:${password}@127.0.0.1:${layout.haproxy.port}/postgres`;
}

/** A one-node etcd 3.4 on loopback; Patroni talks to it through its v3 API (the `etcd3:` section). */
export function etcdArgs(layout: Layout, dir: string): string[] {
  const client = `http://127.0.0.1:${layout.etcd.clientPort}`;
  const peer = `http://127.0.0.1:${layout.etcd.peerPort}`;
  return [
    "--name=local",
    `--data-dir=${pathsOf(dir).etcd.data}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=local=${peer}`,
    "--initial-cluster-state=new",
    `--initial-cluster-token=${layout.scope}`,
  ];
}

/**
 * A member's Patroni configuration. The `bootstrap.dcs` part is written to etcd by whichever member initialises the
 * cluster and is the cluster-wide truth from then on; the rest is this member's own.
 */
export function patroniConfig(layout: Layout, member: Member, dir: string): Record<string, unknown> {
  const paths = pathsOf(dir).member(member.name);
  // A Unix socket path is limited to 107 bytes: inside the member's folder when it fits, else TCP only.
  const socketDir = `${paths.dir}/.s.PGSQL.${member.port}`.length < 100 ? paths.dir : "";
  return {
    scope: layout.scope,
    namespace: "/payments-cluster/",
    name: member.name,
    log: { level: "INFO", format: "%(asctime)s %(levelname)s: %(message)s" },
    restapi: {
      listen: `127.0.0.1:${member.apiPort}`,
      connect_address: `127.0.0.1:${member.apiPort}`,
    },
    etcd3: { host: `127.0.0.1:${layout.etcd.clientPort}` },
    bootstrap: {
      dcs: {
        // Short timeouts: a lost primary is replaced after about `ttl` seconds (docs/architecture.md).
        ttl: 5,
        loop_wait: 1,
        retry_timeout: 2,
        maximum_lag_on_failover: 1048576,
        synchronous_mode: true,
        synchronous_mode_strict: layout.strict,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            wal_level: "replica",
            hot_standby: "on",
            wal_log_hints: "on",
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: "128MB",
            max_connections: 100,
          },
        },
      },
      initdb: [{ encoding: "UTF8" }, { locale: "C.UTF-8" }],
    },
    postgresql: {
      listen: `127.0.0.1:${member.port}`,
      connect_address: `127.0.0.1:${member.port}`,
      data_dir: paths.data,
      bin_dir: PG_BIN_DIR,
      pgpass: paths.pgpass,
      authentication: { superuser: SUPERUSER, replication: REPLICATION_USER },
      parameters: {
        // Point-in-time recovery (docs/production.md, "Backups and point-in-time recovery"): the primary copies each
        // finished WAL segment to the archive. Set here, not in bootstrap.dcs, so a cluster started by an earlier
        // version archives too once it is resumed.
        archive_mode: "on",
        archive_command: archiveCommand(pathsOf(dir).walArchive),
        unix_socket_directories: socketDir,
        shared_buffers: "64MB",
        logging_collector: "on",
        log_directory: "log",
      },
      // A replica that falls behind the primary's wal_keep_size catches up from the archive instead of being copied
      // afresh; Patroni writes it where Postgres 15 reads it, and gives it to pg_rewind (--restore-target-wal).
      recovery_conf: { restore_command: restoreCommand(pathsOf(dir).walArchive) },
      // Loopback only, trusted: a local cluster for tests and operators, not a networked one.
      pg_hba: [
        "local all all trust",
        "host all all 127.0.0.1/32 trust",
        "host replication all 127.0.0.1/32 trust",
      ],
      // When pg_rewind cannot bring an old primary back, copy it afresh from the new one rather than stay down.
      remove_data_directory_on_rewind_failure: true,
      remove_data_directory_on_diverged_timelines: true,
    },
    // No /dev/watchdog on a laptop or CI machine. Patroni 3.0 still checks the timing of a watchdog it does not use,
    // and with the default safety margin (5 s, our whole ttl) warns about it every second.
    watchdog: { mode: "off", safety_margin: -1 },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

/**
 * A path as one word for `sh`, with `%` doubled: Postgres replaces `%p`, `%f` and `%%` in archive_command and
 * restore_command before the shell reads them.
 */
export function shellPath(path: string): string {
  return `'${path.replaceAll("'", `'\\''`).replaceAll("%", "%%")}'`;
}

/**
 * The archive_command: copy the segment under a temporary name and rename it, so the archive never holds half a
 * segment; never overwrite a segment already there (two clusters pointed at one archive by mistake must not erase
 * each other's history), but succeed when the same segment is archived twice (after a crash between the copy and
 * Postgres noting it), or archiving would stop for good. Postgres' documentation, "Continuous Archiving", gives the
 * `test ! -f ... && cp` form this extends.
 */
export function archiveCommand(archiveDir: string): string {
  const at = (suffix: string) => `${shellPath(`${archiveDir}/`)}%f${suffix}`;
  return `test ! -f ${at("")} && cp %p ${at(".part")} && mv ${at(".part")} ${at("")} || cmp -s %p ${at("")}`;
}

/** The restore_command: the segment or timeline history file Postgres asks for, from the archive. */
export function restoreCommand(archiveDir: string): string {
  return `cp ${shellPath(`${archiveDir}/`)}%f %p`;
}

/**
 * HAProxy in front of the members: a server is up only while its Patroni agent answers 200 to `/primary`, so the
 * one port always leads to the primary; `shutdown-sessions` cuts the connections to a primary that stops being one,
 * so no client keeps writing to a demoted (or cut-off) server. The check asks with OPTIONS, which Patroni answers
 * exactly as GET but with the status line alone: HAProxy resets a check's connection as soon as it has the status,
 * and Patroni logs a traceback for every GET whose body it could not write (a thousand log lines a minute).
 */
export function haproxyConfig(layout: Layout): string {
  const servers = layout.members.map((m) =>
    `  server ${m.name} 127.0.0.1:${m.port} maxconn 100 check port ${m.apiPort}`
  );
  return [
    "global",
    "  maxconn 400",
    "",
    "defaults",
    "  mode tcp",
    "  retries 2",
    "  timeout connect 2s",
    "  timeout client 30m",
    "  timeout server 30m",
    "  timeout check 1s",
    "",
    "listen postgres",
    `  bind 127.0.0.1:${layout.haproxy.port}`,
    "  option httpchk OPTIONS /primary",
    "  http-check expect status 200",
    "  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions",
    ...servers,
    "",
  ].join("\n");
}

/**
 * YAML for Patroni: nested maps in block style, scalars as JSON (a JSON string is a YAML double-quoted string),
 * lists as `- item`, with maps and lists inside a list in flow style.
 */
export function toYaml(value: Record<string, unknown>, indent = ""): string {
  const lines: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (Array.isArray(v) && v.length) {
      lines.push(`${indent}${key}:`);
      for (const item of v) lines.push(`${indent}  - ${flow(item)}`);
    } else if (isMap(v) && Object.keys(v).length) {
      lines.push(`${indent}${key}:`);
      lines.push(toYaml(v, `${indent}  `));
    } else {
      lines.push(`${indent}${key}: ${flow(v)}`);
    }
  }
  return lines.join("\n");
}

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function flow(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(flow).join(", ")}]`;
  if (isMap(v)) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${flow(x)}`).join(", ")}}`;
  return JSON.stringify(v);
}
