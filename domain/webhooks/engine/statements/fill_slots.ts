/**
 * Which record a slot carries next, as CTEs: written once for the first claim (claim.ts) and the hand-over after an
 * attempt (record.ts), so both keep the same per-endpoint order (docs/architecture.md, "Per-endpoint order").
 */

import type postgres from "postgres";
import type { SqlOrTransaction } from "../../../infra/db.ts";
import type { EndpointRow } from "../../endpoints/endpoint_row.ts";
import { throttleTaken, throttleTurn } from "./throttle_turn.ts";

/**
 * Which record a slot carries next, written once for the first claim (claim.ts) and the hand-over after an attempt
 * (record.ts): the CTEs that fill slots, given a CTE `slots_to_fill` (idx, endpoint_id, slot, delivery_mode, attempted,
 * still_pending): one row per slot held and to be filled, `attempted` being the record the slot just carried (null
 * on a first claim; still pending in this statement's snapshot) and `still_pending` whether it stays pending after
 * this attempt. They end in `next_for_slot` (idx, next_id) and `leased_records` (idx, id, type, event_id, company_id, lease_token,
 * inserted_at, schedule_attempts); `per_endpoint` (endpoint_id, ..., throttled_until) says when a throttled endpoint's
 * next turn comes (throttle_turn.ts: a throttled endpoint fills at most one slot per statement, and only on its turn).
 *
 * - parallel: the pending records due first that nobody holds, one per slot, skipping those another drainer is
 *   locking right now;
 * - sequential: the oldest pending record (by id, i.e. event order), and only when it is due and nobody holds it,
 *   so a failing head holds the rest until it succeeds, is acknowledged or fails for good (docs/architecture.md,
 *   "Per-endpoint order").
 */
export function fillSlots(sql: SqlOrTransaction, lease: postgres.Fragment, owner: string): postgres.Fragment {
  return sql`
    slots_per_endpoint as (
      select endpoint_id, delivery_mode, count(*)::int as slots, bool_or(still_pending) as head_held,
        coalesce(array_agg(attempted) filter (where attempted is not null), '{}') as attempted
      from slots_to_fill group by endpoint_id, delivery_mode
    ), ${throttleTurn(sql)}, candidates as (
      select w.endpoint_id, n.id, n.rn from per_endpoint w cross join lateral (
        select c.id, row_number() over (order by c.next_attempt_at, c.id) as rn from (
          select d.id, d.next_attempt_at from webhook_deliveries d
          where w.delivery_mode = 'parallel' and d.endpoint_id = w.endpoint_id and d.status = 'pending'
            and d.next_attempt_at <= now() and lease_is_free(d.leased_until) and d.id <> all(w.attempted)
          order by d.next_attempt_at, d.id limit w.k
          for update skip locked
        ) c
        union all
        select h.id, 1 from (
          select d.id, d.next_attempt_at, d.leased_until from webhook_deliveries d
          where w.delivery_mode = 'sequential' and not w.head_held and w.k > 0
            and d.endpoint_id = w.endpoint_id and d.status = 'pending' and d.id <> all(w.attempted)
          order by d.id limit 1
        ) h
        where h.next_attempt_at <= now() and lease_is_free(h.leased_until)
      ) n
    ), next_for_slot as (
      select g.idx, n.id as next_id
      from (select idx, endpoint_id, row_number() over (partition by endpoint_id order by slot) as rn from slots_to_fill) g
      join candidates n on n.endpoint_id = g.endpoint_id and n.rn = g.rn
    ), leased_records as (
      update webhook_deliveries d set lease_token = gen_random_uuid(), leased_until = ${lease}, leased_by = ${owner}
      from next_for_slot p where d.id = p.next_id
      returning p.idx, d.id, d.type, d.event_id, d.company_id, d.lease_token, d.inserted_at, d.schedule_attempts
    ), ${throttleTaken(sql)}`;
}

/** The columns of a claimed record, from the `leased_records` of `fillSlots` (joined under that name). */
export const claimedColumns = (sql: SqlOrTransaction): postgres.Fragment =>
  sql`leased_records.id as delivery_id, leased_records.type as delivery_type, leased_records.event_id,
    leased_records.inserted_at as event_inserted_at, leased_records.lease_token,
    leased_records.schedule_attempts as delivery_schedule_attempts`;

/** A row of a statement that claims: the endpoint as it is now, and the record leased with one of its slots. */
export type ClaimRow = EndpointRow & {
  delivery_id: string | null;
  delivery_type: string | null;
  /** Where the record's event is (read by a statement of its own: claim_data.ts). */
  event_id: string | null;
  event_inserted_at: Date | null;
  slot: number | null;
  lease_token: string | null;
  /** The record's `schedule_attempts` when leased (claim_data.ts, `scheduleAttempts`). */
  delivery_schedule_attempts: number | null;
  /** In how long the endpoint's next turn comes, when its throttle held a record back (throttle_turn.ts). */
  throttle_wait_ms?: number | null;
};
