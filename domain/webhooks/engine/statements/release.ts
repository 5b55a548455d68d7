/**
 * Giving leases back without an attempt: a claimed slot and its record (`releaseClaim`), and after the worker's
 * liveness session opened again, what this process leased and does not know it holds (`releaseUnheldLeases`). One
 * statement each, like each file of this folder.
 */

import type { Sql } from "../../../infra/db.ts";
import type { ClaimedDelivery } from "./claim_data.ts";
import type { Lease } from "./lease.ts";
import { notifyWake } from "../../outbox/wake.ts";

/**
 * Gives a slot and its record back without recording an attempt (the attempt could not start, e.g. during shutdown,
 * or the run handed over): both free at once rather than when their lease runs out.
 */
export async function releaseClaim(sql: Sql, endpointId: string, delivery: ClaimedDelivery): Promise<void> {
  await sql`
    with freed as (
      update webhook_slots set delivery_id = null, leased_until = null, leased_by = null
      where endpoint_id = ${endpointId} and slot = ${delivery.slot} and delivery_id = ${delivery.id}
    )
    update webhook_deliveries set lease_token = null, leased_until = null, leased_by = null
    where id = ${delivery.id} and lease_token = ${delivery.token}`;
}

/**
 * `releaseClaim` for a batch (docs/webhooks.md, "Batches"): its slot and every record it carries, which keep their
 * batch for the next claim.
 */
export async function releaseBatchClaim(sql: Sql, endpointId: string, delivery: ClaimedDelivery): Promise<void> {
  const ids = delivery.batch?.records.map((r) => r.id) ?? [delivery.id];
  await sql`
    with freed as (
      update webhook_slots set delivery_id = null, leased_until = null, leased_by = null
      where endpoint_id = ${endpointId} and slot = ${delivery.slot} and delivery_id = ${delivery.id}
    )
    update webhook_deliveries set lease_token = null, leased_until = null, leased_by = null
    where id = any(${ids}::uuid[]) and lease_token = ${delivery.token}`;
}

/**
 * Gives back, in one statement, the slots and records this process (`owner`) leased before its worker liveness
 * session opened again and holds no more: those of a claim or a hand-over that committed on a primary which went away
 * before its answer came back (docs/production.md, "Leases whose claim went unanswered"). Without it such a lease
 * holds its slot until it runs out, and a sequential endpoint waits the request timeout plus `LEASE_SLACK_MS`.
 *
 * What it leaves alone: the records in `holding` (claimed, their answer received, their attempt not yet recorded or
 * released: an attempt in flight here, which must not go out twice at once); and every lease taken after the session
 * (`worker_processes.backend_start`) began, by a statement whose answer may still be on its way. The caller waits for
 * the statements sent before the session opened again, so `holding` is complete for the leases taken before.
 * Returns the endpoints whose slots or records were freed, which it also wakes (wake.ts).
 */
export async function releaseUnheldLeases(sql: Sql, opts: Lease & { holding: string[] }): Promise<string[]> {
  const { owner, holding } = opts;
  const [row] = await sql<{ endpoint_ids: string[] }[]>`
    with session as (
      select backend_start + ${opts.leaseMs} * interval '1 millisecond' as taken_before
      from worker_processes where id = ${owner}
    ), slots as (
      update webhook_slots s set delivery_id = null, leased_until = null, leased_by = null
      from session
      where s.leased_by = ${owner} and s.leased_until < session.taken_before
        and (s.delivery_id is null or s.delivery_id <> all(${holding}::uuid[]))
      returning s.endpoint_id
    ), records as (
      update webhook_deliveries d set lease_token = null, leased_until = null, leased_by = null
      from session
      where d.leased_by = ${owner} and d.status = 'pending' and d.leased_until < session.taken_before
        and d.id <> all(${holding}::uuid[])
      returning d.endpoint_id
    ), freed as (
      select endpoint_id from slots union select endpoint_id from records
    )
    select coalesce(array_agg(endpoint_id), '{}') as endpoint_ids, ${
    notifyWake(sql, sql`select endpoint_id from freed`)
  }
      as woken
    from freed`;
  return row.endpoint_ids;
}
