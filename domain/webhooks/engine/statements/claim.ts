/**
 * The first claim of a drain run (`claimNext`): one statement that leases an endpoint's free slot with the next record
 * that may go. One statement of the lease protocol, like each file of this folder.
 */

import type { Sql } from "../../../infra/db.ts";
import { type Claim, toClaims } from "./claim_data.ts";
import { claimedColumns, type ClaimRow, fillSlots } from "./fill_slots.ts";
import { throttleWait } from "./throttle_turn.ts";
import type { Lease } from "./lease.ts";
import { notifyWake } from "../../outbox/wake.ts";

/**
 * The first claim of a drain run, one statement: re-reads the endpoint (so a rotation or a disable is seen at once),
 * leases its lowest free slot and the next record that may go (fill_slots.ts). Null when the endpoint does not
 * exist; `delivery` null when nothing is due or no slot is free.
 *
 * When more is due than this slot carries and the endpoint has slots beyond it, it wakes the endpoint again
 * (wake.ts), so a backlog fans out over the slots one drainer at a time, whoever woke the endpoint; not a throttled
 * endpoint's, which goes at its rate (`throttle_wait_ms` says when its next turn comes: throttle_turn.ts).
 *
 * It commits synchronously, as every lease statement does (lease.ts): the attempt it starts holds a lease that a
 * failover to the synchronous replica keeps.
 */
export async function claimNext(sql: Sql, endpointId: string, opts: Lease): Promise<Claim | null> {
  const lease = sql`lease_until(${opts.leaseMs})`;
  const [row] = await sql<(ClaimRow & { woken: string })[]>`
    with ep as (
      select * from webhook_endpoints where id = ${endpointId}
    ), free_slot as (
      select s.slot from webhook_slots s
      where s.endpoint_id = ${endpointId}
        -- from the endpoint's slot base (endpoint_slot_base, sql/0049: the previous release never leases a broker's or a
        -- batched endpoint's); a batched endpoint's records go by claim_batch.ts, a batch at a time, never one alone
        and (select ep.batch is null from ep)
        and s.slot >= (select endpoint_slot_base(ep.transport, ep.batch) from ep)
        and s.slot < (select endpoint_slot_base(ep.transport, ep.batch) + endpoint_slot_limit(ep.status, ep.delivery_mode, ep.max_concurrency) from ep)
        and lease_is_free(s.leased_until)
      order by s.slot limit 1
      for update skip locked
    ), slots_to_fill as (
      select 0 as idx, ep.id as endpoint_id, f.slot, ep.delivery_mode, null::uuid as attempted, false as still_pending
      from ep cross join free_slot f
    ), ${fillSlots(sql, lease, opts.owner)}, slot_leased as (
      update webhook_slots s set delivery_id = p.next_id, leased_until = ${lease}, leased_by = ${opts.owner}
      from next_for_slot p join slots_to_fill g on g.idx = p.idx
      where s.endpoint_id = g.endpoint_id and s.slot = g.slot
      returning s.slot
    ), fan_out as (
      select ${endpointId}::uuid
      from slot_leased ts cross join ep
      where ts.slot + 1 < endpoint_slot_base(ep.transport, ep.batch) + endpoint_slot_limit(ep.status, ep.delivery_mode, ep.max_concurrency)
        -- a throttled endpoint: its rate, not its slots, bounds it (throttle_turn.ts)
        and ep.rate_limit is null and exists (
        select 1 from webhook_deliveries d
        where d.endpoint_id = ${endpointId} and d.status = 'pending' and d.next_attempt_at <= now()
          and lease_is_free(d.leased_until) and d.id not in (select id from leased_records)
      )
    ), woken as (
      select ${notifyWake(sql, sql`select * from fan_out`)} as woken
    )
    select ep.*, ${claimedColumns(sql)}, slot_leased.slot, (select woken from woken) as woken,
      ${throttleWait(sql, sql`ep.id`)}
    from ep
    left join leased_records on true
    left join slot_leased on true`;
  if (!row) return null;
  const { woken: _, ...claim } = row;
  return (await toClaims(sql, [claim], Date.now() + opts.leaseMs / 2))[0];
}
