/**
 * The status report of `deno task cluster status` (docs/operations.md, "A Postgres HA cluster"), built from what was
 * observed: the live PIDs of each part and what each Patroni agent answers to `GET /patroni`. Pure, so unit-tested.
 */
import type { Layout } from "./config.ts";

/** What `GET /patroni` of a member's agent answered (null when it did not answer). */
export type AgentAnswer = { state?: unknown; role?: unknown; sync_standby?: unknown } | null;

/** What was seen of one member. */
export type MemberObservation = { agentPid: number | null; postmasterPid: number | null; agent: AgentAnswer };

export type MemberStatus = {
  name: string;
  /** "primary" only while its agent answers that it runs the primary; every other member is a "replica". */
  role: "primary" | "replica";
  /** Patroni's state ("running", "starting", "creating replica", ...), or "down" when its agent does not answer. */
  state: string;
  /** True for the synchronous replica: a commit that answered is on it too. */
  sync: boolean;
  port: number;
  api_port: number;
  /** Every live process of the member: its Patroni agent first, then its postmaster. */
  pids: number[];
};

export type Status = {
  members: MemberStatus[];
  etcd: { port: number; pids: number[] };
  haproxy: { port: number; pids: number[] };
  url: string;
};

/** Patroni 3.0 still says "master" for the primary; later versions say "primary". */
export function roleOf(agent: AgentAnswer): "primary" | "replica" {
  return agent && (agent.role === "master" || agent.role === "primary") && agent.state === "running"
    ? "primary"
    : "replica";
}

/** One member's line of the report. */
export function memberStatus(member: Layout["members"][number], seen: MemberObservation): MemberStatus {
  return {
    name: member.name,
    role: roleOf(seen.agent),
    state: seen.agent && typeof seen.agent.state === "string" ? seen.agent.state : "down",
    sync: seen.agent?.sync_standby === true,
    port: member.port,
    api_port: member.apiPort,
    pids: [seen.agentPid, seen.postmasterPid].filter((pid): pid is number => pid !== null),
  };
}

/** The whole report; its JSON is the last line `status` prints. */
export function statusReport(
  layout: Layout,
  seen: { members: MemberObservation[]; etcdPid: number | null; haproxyPid: number | null; url: string },
): Status {
  const pids = (pid: number | null) => pid === null ? [] : [pid];
  return {
    members: layout.members.map((m, i) => memberStatus(m, seen.members[i])),
    etcd: { port: layout.etcd.clientPort, pids: pids(seen.etcdPid) },
    haproxy: { port: layout.haproxy.port, pids: pids(seen.haproxyPid) },
    url: seen.url,
  };
}

/** Reads the last line of `status`'s output back (for scripts and tests). */
export function parseStatus(output: string): Status {
  const last = output.trim().split("\n").at(-1) ?? "";
  const value = JSON.parse(last);
  if (!Array.isArray(value?.members)) throw new Error("not a cluster status line");
  return value as Status;
}

/** The member reported as the primary, if exactly one is. */
export function primaryOf(status: Status): MemberStatus | null {
  const primaries = status.members.filter((m) => m.role === "primary");
  return primaries.length === 1 ? primaries[0] : null;
}
