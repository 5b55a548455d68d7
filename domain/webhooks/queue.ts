import type postgres from "postgres";
import type { Tx } from "../platform/db.ts";

/**
 * The graphile-worker queue of the service: every task name, and the one way drain jobs are added.
 *
 * A drain job (`deliver_webhook`, payload `{endpoint_id}`) is a wake-up call for one endpoint, not a unit of work:
 * whoever runs it delivers what is due for that endpoint (domain/webhooks/drain.ts), and a job that finds nothing to
 * do ends at once. So adding one too many costs a no-op run; adding one too few strands records until the recovery
 * sweep notices them.
 */
export const TASKS = {
  deliverWebhook: "deliver_webhook",
  retryWire: "retry_wire",
  /** Does nothing: the ceiling `deno task bench` measures the delivery task against. */
  noop: "noop",
} as const;

/**
 * `graphile_worker.add_jobs(...)` adding one drain job per row of `due`, a query whose rows are
 * (endpoint_id uuid, run_at timestamptz; null for now). It returns the jobs added (their `id` and `payload`). It
 * notifies the workers even when `due` is empty: call it only when there is something to wake.
 */
export function addDrainJobs(sql: Tx, due: postgres.Fragment): postgres.Fragment {
  return sql`graphile_worker.add_jobs(array(
    select row(${TASKS.deliverWebhook}, json_build_object('endpoint_id', due.endpoint_id), null, due.run_at,
      null, null, null, null)::graphile_worker.job_spec
    from (${due}) as due(endpoint_id, run_at)
  ))`;
}

/** `addDrainJobs` for a list of endpoints, due now. */
export function drainJobsFor(sql: Tx, endpointIds: string[]): postgres.Fragment {
  return addDrainJobs(sql, sql`select unnest(${endpointIds}::uuid[]), null::timestamptz`);
}

/** Adds a drain job per endpoint, due now, in the caller's transaction if given one. */
export async function wakeEndpoints(sql: Tx, endpointIds: string[]): Promise<void> {
  if (endpointIds.length) await sql`select count(*) from ${drainJobsFor(sql, endpointIds)}`;
}
