/**
 * The wake-up of an endpoint, a NOTIFY with its id: its own file because the producers, the delivery statements, the
 * retry timer and the drainers all share it.
 */

import type postgres from "postgres";
import type { SqlOrTransaction } from "../../infra/db.ts";

/**
 * Wake-ups: how every worker process hears that an endpoint may have something to deliver. A NOTIFY on this channel,
 * with the endpoint id as its payload, sent by whatever makes a record due or frees a slot (an event, acknowledge,
 * retry and recover, a run handing over, the fan-out of a backlog, the recovery sweeps, the retry timer). Postgres
 * delivers it at commit, to every listening process, once per transaction and payload; the drainers
 * (domain/webhooks/engine/engine.ts) listen. A wake-up carries no work: whoever takes it claims from webhook_deliveries, so
 * one too many costs a claim that finds nothing, and one lost is found again by the recovery sweep.
 */
export const WAKE_CHANNEL = "webhook_due";

/** A NOTIFY per row of `endpointIds`, a query of one uuid column, as an expression counting them (for a CTE). */
export function notifyWake(sql: SqlOrTransaction, endpointIds: postgres.Fragment): postgres.Fragment {
  return sql`(select count(pg_notify(${WAKE_CHANNEL}, w.id::text)) from (${endpointIds}) as w(id))`;
}

/** Wakes each endpoint, in the caller's transaction if given one (the wake-up then goes out at its commit). */
export async function wakeEndpoints(sql: SqlOrTransaction, endpointIds: string[]): Promise<void> {
  if (!endpointIds.length) return;
  await sql`select ${notifyWake(sql, sql`select distinct unnest(${endpointIds}::uuid[])`)}`;
}
