/**
 * The per-endpoint throttle's part of every claiming statement (docs/webhooks.md, "Throttle"): CTEs that `fillSlots`
 * places around its choice of records, so that taking the endpoint's turn and leasing its record are one statement,
 * whichever instance makes it. A file of its own: the throttle's SQL in one place, beside the statements that use it.
 */

import type postgres from "postgres";
import type { SqlOrTransaction } from "../../../infra/db.ts";

/**
 * How late a turn may be taken and still count from when it was due, in ms, and never more than one interval between
 * turns: a drainer that comes a little after the turn (a timer, a round trip, the attempt before) does not lower the
 * rate. Turns stay 1/rate_limit apart, so with a catch-up of at most one interval any second holds at most
 * `rate_limit` + 1 attempts (docs/webhooks.md, "Throttle"); the cap in ms keeps a slow rate's turns from coming early.
 */
export const THROTTLE_CATCH_UP_MS = 50;

/**
 * How long a statement that found the endpoint's throttle row locked (another claim taking the turn at this instant)
 * tells its run to wait before it looks again: the turn may still be free once that claim commits.
 */
export const THROTTLE_BUSY_MS = 20;

/**
 * Given `slots_per_endpoint` (endpoint_id, delivery_mode, slots, head_held, attempted), the CTEs `throttle_turn` and
 * `per_endpoint` (endpoint_id, delivery_mode, head_held, attempted, rate_limit, k, throttled_until): `k`, how many
 * records the endpoint may lease in this statement.
 *
 * - no throttle row (no rate_limit, no 429 holding it): every slot, as before the throttle; one index probe more.
 * - a throttle row: locked `skip locked`, so two claims never take one turn; its next turn still to come (or its row
 *   held by another claim): none, and `throttled_until` says when to look again, when a record is waiting for it;
 *   its turn has come: one record with a rate_limit (the turn is taken by `throttleTaken`), every slot without one
 *   (a 429's wait is over).
 *
 * The row's lock is taken first and its `next_send_at` read from the locked row, the latest committed: a turn another
 * instance took after this statement's snapshot is seen.
 */
export function throttleTurn(sql: SqlOrTransaction): postgres.Fragment {
  return sql`throttle_turn as materialized (
      select t.endpoint_id, t.next_send_at from webhook_endpoint_throttles t
      where t.endpoint_id in (select endpoint_id from slots_per_endpoint)
      for update skip locked
    ), per_endpoint as (
      select p.endpoint_id, p.delivery_mode, p.head_held, p.attempted, e.rate_limit,
        case when not throttled.has_row then p.slots
          when t.endpoint_id is null or t.next_send_at > now() then 0
          when e.rate_limit is not null then least(p.slots, 1)
          else p.slots end as k,
        case when throttled.has_row and (t.endpoint_id is null or t.next_send_at > now()) and exists (
          select 1 from webhook_deliveries d
          where d.endpoint_id = p.endpoint_id and d.status = 'pending' and d.next_attempt_at <= now()
            and lease_is_free(d.leased_until) and d.id <> all(p.attempted)
        ) then coalesce(t.next_send_at, now() + ${THROTTLE_BUSY_MS}::int * interval '1 millisecond') end as throttled_until
      from slots_per_endpoint p
      join webhook_endpoints e on e.id = p.endpoint_id
      cross join lateral (
        select exists (select 1 from webhook_endpoint_throttles x where x.endpoint_id = p.endpoint_id) as has_row
      ) throttled
      left join throttle_turn t on t.endpoint_id = p.endpoint_id
    )`;
}

/**
 * Takes the turn of each throttled endpoint that leased a record in this statement (`leased_records` of `fillSlots`):
 * its next turn comes 1/rate_limit seconds after this one was due, or after now when this one is later than
 * `THROTTLE_CATCH_UP_MS` (or one interval). Under the row's lock taken by `throttleTurn`.
 */
export function throttleTaken(sql: SqlOrTransaction): postgres.Fragment {
  return sql`throttle_taken as (
      update webhook_endpoint_throttles t set next_send_at =
        greatest(
          t.next_send_at,
          now() - least(interval '1 second' / w.rate_limit, ${THROTTLE_CATCH_UP_MS}::int * interval '1 millisecond')
        ) + interval '1 second' / w.rate_limit
      from per_endpoint w
      where t.endpoint_id = w.endpoint_id and w.rate_limit is not null and w.k > 0
        and t.endpoint_id in (select endpoint_id from throttle_turn)
        and exists (
          select 1 from leased_records r join slots_to_fill g on g.idx = r.idx where g.endpoint_id = w.endpoint_id
        )
    )`;
}

/**
 * The column `throttle_wait_ms` of a claiming statement's row for `endpointId`: in how many milliseconds, by the
 * database's clock, the endpoint's next turn comes, when it has a record waiting for it; null otherwise.
 */
export function throttleWait(sql: SqlOrTransaction, endpointId: postgres.Fragment): postgres.Fragment {
  return sql`(
      select extract(epoch from pe.throttled_until - now())::float8 * 1000 from per_endpoint pe
      where pe.endpoint_id = ${endpointId}
    ) as throttle_wait_ms`;
}

/**
 * The record statement's CTE `endpoint_holds`, given its `batch` (endpoint_id, hold_seconds): a receiver's 429 with
 * Retry-After holds every record of its endpoint until then, not only the one it answered (docs/webhooks.md,
 * "Throttle"): the endpoint's next turn is pushed to that instant, never brought forward. Rows in endpoint order, so
 * two batches that wait for each other's rows cannot deadlock on them.
 */
export function endpointHolds(sql: SqlOrTransaction): postgres.Fragment {
  return sql`endpoint_holds as (
      insert into webhook_endpoint_throttles as t (endpoint_id, next_send_at)
      select endpoint_id, now() + max(hold_seconds) * interval '1 second' from batch
      where hold_seconds is not null group by endpoint_id order by endpoint_id
      on conflict (endpoint_id) do update set next_send_at = greatest(t.next_send_at, excluded.next_send_at)
    )`;
}
