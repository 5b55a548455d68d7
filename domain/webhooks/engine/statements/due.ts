/**
 * What is due, for the drainers (domain/webhooks/engine/engine.ts): the endpoints with a record that may go now (read when
 * a process starts listening, and again whenever its listening session comes back, since wake-ups sent meanwhile were
 * not heard), and the retry timer's one statement.
 */

import type { Sql } from "../../../infra/db.ts";
import { notifyWake } from "../../outbox/wake.ts";

/** Active endpoints with a pending record due now that nobody holds, and the database's clock. */
export async function dueEndpoints(sql: Sql): Promise<{ endpointIds: string[]; now: Date }> {
  const rows = await sql<{ id: string | null; now: Date }[]>`
    select e.id, now() as now from (select 1) as one
    left join webhook_endpoints e on e.status = 'active' and exists (
      select 1 from webhook_deliveries d
      where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= now() and lease_is_free(d.leased_until)
    )`;
  return { endpointIds: rows.flatMap((r) => r.id ? [r.id] : []), now: rows[0].now };
}

/** How far back the timer looks again: a record written just before its last turn may have committed just after. */
const OVERLAP_SECONDS = 2;

/**
 * The retry timer's turn, one statement: wakes (wake.ts) every endpoint with a pending record that came due since
 * `since` (a failed attempt's retry, a Retry-After, and a new event's record too, should its wake-up have been missed)
 * and nobody holds, or whose throttle's turn came since then with a record waiting (docs/webhooks.md, "Throttle"),
 * names them, and says when the next pending record comes due or the next throttle turn comes.
 * Both read the index of pending records by due time, so a turn costs the records that came due, not the backlog.
 * An empty wake-up goes out too: the drainers' proof that their LISTEN still hears.
 */
export async function wakeDueSince(
  sql: Sql,
  since: Date,
): Promise<{ endpointIds: string[]; now: Date; nextInMs: number | null }> {
  const [row] = await sql<{ endpoint_ids: string[]; now: Date; next_in_ms: number | null }[]>`
    with due as (
      select distinct d.endpoint_id from webhook_deliveries d
      where d.status = 'pending' and d.next_attempt_at <= now()
        and d.next_attempt_at > ${since}::timestamptz - ${OVERLAP_SECONDS} * interval '1 second'
        and lease_is_free(d.leased_until)
      union
      -- a throttled endpoint whose turn came (docs/webhooks.md, "Throttle"), with a record waiting for it
      select t.endpoint_id from webhook_endpoint_throttles t
      where t.next_send_at <= now()
        and t.next_send_at > ${since}::timestamptz - ${OVERLAP_SECONDS} * interval '1 second'
        and exists (
          select 1 from webhook_deliveries d
          where d.endpoint_id = t.endpoint_id and d.status = 'pending' and d.next_attempt_at <= now()
            and lease_is_free(d.leased_until)
        )
    ), woken as (
      select ${notifyWake(sql, sql`select endpoint_id from due`)} as woken
    )
    select now() as now, (select woken from woken) as woken, array(select endpoint_id from due) as endpoint_ids, ${
    notifyWake(sql, sql`select ''`)
  } as heartbeat, (
      select extract(epoch from least(
        (select min(d.next_attempt_at) from webhook_deliveries d where d.status = 'pending' and d.next_attempt_at > now()),
        (select min(t.next_send_at) from webhook_endpoint_throttles t where t.next_send_at > now())
      ) - now())::float8 * 1000
    ) as next_in_ms`;
  return { endpointIds: row.endpoint_ids, now: row.now, nextInMs: row.next_in_ms };
}
