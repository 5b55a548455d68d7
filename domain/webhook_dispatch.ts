import type postgres from "postgres";
import type { Sql } from "../lib/db.ts";
import { newId } from "../lib/ids.ts";
import { DELIVER_TASK } from "./events.ts";
import type { EndpointRow } from "./webhook_endpoints.ts";

/**
 * How deliveries are handed to workers, across every process sharing the database.
 *
 * A `deliver_webhook` job drains one endpoint: it claims a concurrency slot of the endpoint together with the next
 * deliverable record, attempts it, records the attempt and frees the slot, and claims again until nothing is due
 * or every slot is taken. Jobs are wake-up calls, not units of work: emitEvent, a failed attempt (at its next due
 * time), acknowledge and retry each add one, and a job that finds nothing to do ends at once.
 *
 * Why no wake-up is lost: a job that finds every slot taken ends, trusting the holders. Each holder frees its slot
 * (a committed statement) before it claims again, so its next claim starts after the job looked, and therefore
 * sees the record that job was woken for. A crashed holder's slot frees itself when its lease runs out.
 *
 * - parallel: slots 0..max_concurrency-1; the claim takes the pending record due first, skipping records in flight.
 * - sequential: slot 0 only; the claim takes the oldest pending record (by id, i.e. event order) and only if it is
 *   due, so a failing head holds the rest until it succeeds, is acknowledged or fails for good.
 */

/** Attempts per schedule (interface.md "Limits"). */
export const MAX_ATTEMPTS = 10;

export type ClaimedDelivery = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  slot: number;
  token: string;
};

export type Claim = { endpoint: EndpointRow; delivery: ClaimedDelivery | null };

type ClaimRow = EndpointRow & {
  cancelled_jobs?: string;
  delivery_id: string | null;
  delivery_type: string | null;
  event_data: Record<string, unknown> | null;
  slot: number | null;
};

/**
 * The CTEs `next_parallel`, `head` and `next` choosing the record to lease next, given CTEs `ep` (the endpoint) and
 * `gate` (a row when a slot is held), leaving out `exclude` (the record just attempted, still pending in this
 * statement's snapshot). `headAllowed` is false while that record stays the head of a sequential endpoint.
 */
function nextCtes(sql: Sql, endpointId: string, exclude: string | null, headAllowed: postgres.Fragment) {
  const other = exclude ? sql`and d.id <> ${exclude}` : sql``;
  return sql`
    next_parallel as (
      select d.id from webhook_deliveries d
      where (select delivery_mode from ep) = 'parallel' and exists (select 1 from gate)
        and d.endpoint_id = ${endpointId} and d.status = 'pending' and d.next_attempt_at <= now()
        and (d.leased_until is null or d.leased_until < now()) ${other}
      order by d.next_attempt_at, d.id limit 1
      for update skip locked
    ), head as (
      select d.id, d.next_attempt_at, d.leased_until from webhook_deliveries d
      where (select delivery_mode from ep) = 'sequential' and exists (select 1 from gate) and ${headAllowed}
        and d.endpoint_id = ${endpointId} and d.status = 'pending' ${other}
      order by d.id limit 1
    ), next as (
      select id from next_parallel
      union all
      select id from head where next_attempt_at <= now() and (leased_until is null or leased_until < now())
    )`;
}

/** Leases the chosen record with `token`, and deletes the drain job added for it if it is still queued. */
function takeCte(sql: Sql, token: string, lease: postgres.Fragment) {
  return sql`
    taken as (
      update webhook_deliveries d set lease_token = ${token}, leased_until = ${lease}
      from next where d.id = next.id
      returning d.id, d.type, d.event_id, d.company_id, d.wake_job_id
    ), cancelled_job as (
      select graphile_worker.complete_jobs(array[wake_job_id]) from taken where wake_job_id is not null
    )`;
}

function toClaim(row: ClaimRow | undefined, token: string): Claim | null {
  if (!row) return null;
  const { delivery_id, delivery_type, event_data, slot, cancelled_jobs: _, ...endpoint } = row;
  return {
    endpoint,
    delivery: delivery_id && slot !== null
      ? { id: delivery_id, type: delivery_type!, data: event_data ?? {}, slot, token }
      : null,
  };
}

/**
 * One statement: re-reads the endpoint (so a rotation or a disable is seen at once), leases a free slot and the next
 * record. Null when the endpoint does not exist; `delivery` null when nothing is due or no slot is free.
 *
 * Delivery bookkeeping commits asynchronously (no wait for the WAL flush): after a database crash the worst case is
 * an attempt made again, which at-least-once delivery allows. Events and their records, written by the producers'
 * transactions, stay synchronous.
 */
export async function claimNext(sql: Sql, endpointId: string, leaseMs: number): Promise<Claim | null> {
  const token = newId();
  const lease = sql`now() + ${leaseMs} * interval '1 millisecond'`;
  const [row] = await sql<ClaimRow[]>`
    with ep as (
      select * from webhook_endpoints where id = ${endpointId}
    ), commit_mode as (
      select set_config('synchronous_commit', 'off', true)
    ), gate as (
      select s.slot from webhook_slots s
      where s.endpoint_id = ${endpointId}
        and s.slot < (select case when status <> 'active' then 0 when delivery_mode = 'sequential' then 1
          else max_concurrency end from ep)
        and (s.leased_until is null or s.leased_until < now())
      order by s.slot limit 1
      for update skip locked
    ), ${nextCtes(sql, endpointId, null, sql`true`)}, ${takeCte(sql, token, lease)}, taken_slot as (
      update webhook_slots s set delivery_id = next.id, leased_until = ${lease}
      from next, gate where s.endpoint_id = ${endpointId} and s.slot = gate.slot
      returning s.slot
    )
    select ep.*, taken.id as delivery_id, taken.type as delivery_type, e.data as event_data, taken_slot.slot,
      (select count(*) from cancelled_job) as cancelled_jobs
    from ep
    cross join commit_mode
    left join taken on true
    left join taken_slot on true
    left join events e on e.id = taken.event_id and e.company_id = taken.company_id`;
  return toClaim(row, token);
}

export type AttemptOutcome = { ok: boolean; httpStatus: number; responseBody: string; durationMs: number };

export type Recorded = {
  /** The record's status after this attempt; null when its lease had been lost (the attempt is still stored). */
  status: string | null;
  /** The endpoint as it is now, with the next record leased on the same slot, if any was due. */
  next: Claim | null;
};

/**
 * One statement: stores the attempt, moves the record on (succeeded; failed after the tenth attempt of its schedule;
 * else pending with its next due time and a job to wake the endpoint then), and hands the slot to the next due
 * record or frees it. A record acknowledged or failed (disabled endpoint) meanwhile keeps its status unless this
 * attempt succeeded. A freed slot obliges the caller to claim once more (see the protocol above).
 */
export async function recordAndClaimNext(
  sql: Sql,
  endpointId: string,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
  opts: { retrySchedule: number[]; leaseMs: number },
): Promise<Recorded> {
  const token = newId();
  const lease = sql`now() + ${opts.leaseMs} * interval '1 millisecond'`;
  const giveUp = sql`d.status <> 'pending' or d.schedule_attempts + 1 >= ${MAX_ATTEMPTS}`;
  const [row] = await sql<(ClaimRow & { delivery_status: string | null; retry_jobs: string })[]>`
    with commit_mode as (
      select set_config('synchronous_commit', 'off', true)
    ), attempt as (
      insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms)
      select ${newId()}, d.id, d.company_id, d.attempts + 1, ${outcome.httpStatus}, ${outcome.responseBody},
        ${Math.round(outcome.durationMs)}
      from webhook_deliveries d where d.id = ${delivery.id}
    ), updated as (
      update webhook_deliveries d set
        attempts = d.attempts + 1,
        schedule_attempts = d.schedule_attempts + 1,
        status = case when ${outcome.ok} then 'succeeded' when ${giveUp} then
          case when d.status = 'pending' then 'failed' else d.status end else 'pending' end,
        next_attempt_at = case when ${outcome.ok} or ${giveUp} then null
          else now() + (${opts.retrySchedule}::float8[])[d.schedule_attempts + 1] * interval '1 second' end,
        lease_token = null,
        leased_until = null,
        updated_at = now()
      where d.id = ${delivery.id} and d.lease_token = ${delivery.token}
      returning d.status, d.next_attempt_at
    ), retry_job as (
      select graphile_worker.add_job(${DELIVER_TASK}, json_build_object('endpoint_id', ${endpointId}::uuid),
        run_at := next_attempt_at)
      from updated where next_attempt_at is not null
    ), ep as (
      select * from webhook_endpoints where id = ${endpointId}
    ), gate as (
      select 1 from ep, updated
      where ep.status = 'active'
        and ${delivery.slot} < case when ep.delivery_mode = 'sequential' then 1 else ep.max_concurrency end
    ), ${nextCtes(sql, endpointId, delivery.id, sql`(select status from updated) <> 'pending'`)},
    ${takeCte(sql, token, lease)}, moved_slot as (
      update webhook_slots s set
        delivery_id = (select id from next),
        leased_until = case when exists (select 1 from next) then ${lease} end
      where s.endpoint_id = ${endpointId} and s.slot = ${delivery.slot} and s.delivery_id = ${delivery.id}
    )
    select ep.*, (select status from updated) as delivery_status, (select count(*) from retry_job) as retry_jobs,
      taken.id as delivery_id, taken.type as delivery_type, e.data as event_data, ${delivery.slot}::int as slot,
      (select count(*) from cancelled_job) as cancelled_jobs
    from ep
    cross join commit_mode
    left join taken on true
    left join events e on e.id = taken.event_id and e.company_id = taken.company_id`;
  if (!row) return { status: null, next: null };
  const { delivery_status, retry_jobs: _, ...claimRow } = row;
  return { status: delivery_status, next: toClaim(claimRow, token) };
}

/** Frees a slot without recording an attempt (the attempt could not start, e.g. during shutdown). */
export async function releaseClaim(sql: Sql, endpointId: string, delivery: ClaimedDelivery) {
  await sql`
    with freed as (
      update webhook_slots set delivery_id = null, leased_until = null
      where endpoint_id = ${endpointId} and slot = ${delivery.slot} and delivery_id = ${delivery.id}
    )
    update webhook_deliveries set lease_token = null, leased_until = null
    where id = ${delivery.id} and lease_token = ${delivery.token}`;
}
