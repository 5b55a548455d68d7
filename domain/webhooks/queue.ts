import type postgres from "postgres";
import type { Tx } from "../infra/db.ts";

/**
 * The graphile-worker queue of the service: every task name, and the one way drain jobs are added.
 *
 * A drain job (`deliver_webhook`, payload `{endpoint_id, lane}`) is a wake-up call for one endpoint, not a unit of
 * work: whoever runs it delivers what is due for that endpoint (domain/webhooks/drain.ts), and a job that finds
 * nothing to do ends at once. So adding one too many costs a no-op run; adding one too few strands records until the
 * recovery sweep notices them.
 *
 * Drain jobs carry a graphile-worker job key, `deliver:<endpoint>:<lane>`, so the queue holds at most one waiting
 * job per key, however many events wait (docs/webhooks.md, Fair delivery under backlog): lanes `0` to
 * `slots - 1` wake the endpoint's concurrency slots, and the lane `retry` is the one job that waits for the
 * endpoint's next retry. Adding a job whose key is already waiting updates that job; adding one whose job is
 * running starts a new one, so a change made after a drainer started is never left unseen.
 *
 * A lane's number is its job's priority (graphile-worker runs lower numbers first): every endpoint with something
 * due gets its first drainer before any endpoint gets its second, so a backlog spread over many lanes cannot keep
 * another endpoint's single job waiting behind all of them.
 */
export const TASKS = {
  deliverWebhook: "deliver_webhook",
  retryWire: "retry_wire",
  /** Does nothing: the ceiling `deno task bench` measures the delivery task against. */
  noop: "noop",
} as const;

/** The lane of the one job that waits for an endpoint's next retry. */
export const RETRY_LANE = "retry";

/** The job key of an endpoint's lane, as SQL over an endpoint id and a lane (both SQL expressions). */
export function drainJobKey(sql: Tx, endpointId: postgres.Fragment, lane: postgres.Fragment): postgres.Fragment {
  return sql`'deliver:' || ${endpointId} || ':' || ${lane}`;
}

/**
 * `add_drain_jobs(...)` (graphile_worker.add_jobs made safe against a worker locking a job meanwhile) adding one keyed
 * drain job per row of `due`, a query whose rows are
 * (endpoint_id uuid, lane text, run_at timestamptz; null for now) with distinct (endpoint_id, lane). A wake-up
 * keeps the run_at of a job already waiting under its key (its place in line); the retry lane replaces it (it
 * moves to the endpoint's next due time).
 *
 * An empty `due` adds nothing and notifies no one.
 */
export function addDrainJobs(sql: Tx, due: postgres.Fragment, mode: "wake" | "retry" = "wake"): postgres.Fragment {
  // add_drain_jobs (sql/0019_add_drain_jobs.sql): graphile_worker.add_jobs, again for a key a worker locked meanwhile
  return sql`add_drain_jobs(array(
    select row(${TASKS.deliverWebhook}, json_build_object('endpoint_id', due.endpoint_id, 'lane', due.lane), null,
      due.run_at, null, ${drainJobKey(sql, sql`due.endpoint_id`, sql`due.lane`)},
      case when due.lane = ${RETRY_LANE} then 0 else due.lane::int end, null)::graphile_worker.job_spec
    from (${due}) as due(endpoint_id, lane, run_at)
  ), ${mode === "wake"})`;
}

/** Adds a drain job, due now, on `lane` of each endpoint, in the caller's transaction if given one. */
export async function wakeEndpoints(sql: Tx, endpointIds: string[], lane: number | string = 0): Promise<void> {
  if (!endpointIds.length) return;
  const due = sql`select distinct unnest(${endpointIds}::uuid[]), ${String(lane)}::text, null::timestamptz`;
  await sql`select count(*) from ${addDrainJobs(sql, due)}`;
}
