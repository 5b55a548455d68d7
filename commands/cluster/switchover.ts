/**
 * The pure part of `deno task cluster switchover` (docs/operations.md, "A Postgres HA cluster"): who a planned
 * switchover goes from and to, read from what each Patroni agent answered. Unit-tested; the switchover itself is in
 * `lifecycle.ts`.
 */
import type { Layout, Member } from "./config.ts";
import { type AgentAnswer, roleOf } from "./status.ts";

/**
 * From the running primary to the replica Patroni names synchronous: in synchronous mode it is the only member
 * Patroni lets take over without losing a commit that answered (Patroni refuses any other candidate). A reason
 * instead when there is no such pair (no primary, no synchronous replica yet, a member not running).
 */
export function switchoverPlan(
  layout: Layout,
  answers: AgentAnswer[],
): { leader: Member; candidate: Member } | { reason: string } {
  const leaders = layout.members.filter((_, i) => roleOf(answers[i]) === "primary");
  if (leaders.length !== 1) return { reason: `${leaders.length} running primaries: start the cluster first` };
  const candidate = layout.members.find((_, i) => answers[i]?.state === "running" && answers[i]?.sync_standby === true);
  if (!candidate) {
    // right after `start` or a switchover, Patroni names one within seconds
    return { reason: "no running synchronous replica to switch over to yet: `status` shows when one is" };
  }
  return { leader: leaders[0], candidate };
}
