/**
 * The record statement: one statement per batch of attempts that stores them, moves each record on, hands each slot to
 * the next due record or frees it, and applies the endpoints' verdicts. Only the SQL; recorder.ts decides and batches.
 */

import type { Sql } from "../../../infra/db.ts";
import type { DisabledReason } from "../../endpoints/endpoint_row.ts";
import { disabling } from "../../endpoints/endpoints.ts";
import type { SendResult } from "../sender.ts";
import type { ClaimedDelivery } from "./claim_data.ts";
import { type FailingAlert, failureReason, type Health } from "../../endpoints/decisions.ts";
import { claimedColumns, type ClaimRow, fillSlots } from "./fill_slots.ts";
import { type Lease, leaseUntil, slotLimit } from "./lease.ts";
import { recordStats } from "./record_stats.ts";

/** One attempt to record, with what its answer decided (decisions.ts). */
export type RecordItem = {
  endpointId: string;
  delivery: ClaimedDelivery;
  result: SendResult;
  attemptId: string;
  /** Seconds to the next attempt by the record's `schedule_attempts`; past its end the record fails (`retryPlan`). */
  plan: number[];
};

/**
 * What attempts of one endpoint recorded together do to it (`endpointHealth`), and the failing clock it saw.
 * `failedAttempts`: how many failed, 0 when any succeeded (`failuresInARow`).
 */
export type EndpointVerdict = {
  endpointId: string;
  health: Health;
  seenFailingSince: Date | null;
  failedAttempts: number;
};

export type RecordRow = ClaimRow & {
  idx: number;
  delivery_status: string | null;
  delivery_next_attempt_at: Date | null;
  endpoint_disabled: DisabledReason | null;
  attempt_number: number | null;
  /** This attempt was the last of the record's schedule and failed (`delivery.exhausted`). */
  exhausted: boolean | null;
  /** The endpoint's failing streak has crossed `FailingAlert` and is not announced yet (`endpoint.failing`). */
  endpoint_failing: boolean | null;
  /** The endpoint's verdict was not applied: another transaction held its row (the recorder carries it over). */
  endpoint_deferred: boolean | null;
};

/**
 * One statement for a batch of attempts (recorder.ts batches them): stores each attempt, moves its record on and
 * hands its slot to the next due record of the endpoint or frees it, and applies the endpoints' verdicts. Rows in any
 * order, `idx` naming the item. A record due again later is woken by the drainers' retry timer
 * (domain/webhooks/engine/engine.ts).
 *
 * A record's next state: succeeded after a 2xx; otherwise, when still pending, pending again after the delay of its
 * plan at the record's `schedule_attempts`, or failed past the plan's end or once its endpoint is disabled by this
 * statement. A record acknowledged or failed meanwhile keeps its status unless this attempt succeeded; one whose lease
 * was lost (the attempt took longer than the lease) is not moved at all, though the attempt is stored.
 *
 * A verdict applies only while the endpoint's failing clock is the one it was decided from (another attempt may have
 * moved it since): `gone` applies to any active endpoint. It applies only to an endpoint whose row it can lock at
 * once (`skip locked`): one tenant's request holding its endpoint's row never holds up the attempts of every other
 * endpoint in the batch; the row answers `endpoint_deferred` and the recorder adds the verdict to the endpoint's next
 * (recorder.ts). A verdict that writes nothing (a healthy endpoint's success) locks nothing. A disabled endpoint leases nothing more: the drain loop's
 * next claim fails what is still pending. A freed slot obliges the caller to claim once more (`drainEndpoint`).
 *
 * What it changes that an operator hears about (a record `exhausted`, an endpoint disabled) the recorder emits in the
 * same transaction, and an endpoint found failing (`endpoint_failing`) in one of its own that marks the streak
 * announced (domain/webhooks/outbox/operational.ts).
 *
 * `again`: made again after a lost connection, when the first may have committed before its answer was lost.
 *
 * The batch also adds to its endpoints' health aggregate, in the same statement (`recordStats`, record_stats.ts;
 * docs/webhooks.md, "Endpoint health").
 *
 * It commits synchronously, unlike the claim (lease.ts, `asyncCommit`): an attempt the receiver acknowledged and this
 * statement recorded survives a crash or a failover of Postgres, so a record is sent again only when its attempt was
 * in flight (docs/webhooks.md, "At least once"). Batched, the wait for the WAL flush cost nothing measurable in
 * `deno task bench`.
 */
export async function recordAttempts(
  sql: Sql,
  items: RecordItem[],
  verdicts: EndpointVerdict[],
  lease: Lease & FailingAlert,
  again = false,
): Promise<RecordRow[]> {
  const until = leaseUntil(sql, lease.leaseMs);
  // Made again: the failures are counted only when the first try did not commit (the batch commits whole or not at
  // all), by the test the attempts' insert makes.
  const firstTry = again
    ? sql`and not exists (select 1 from webhook_attempts a where a.delivery_id = ${items[0].delivery.id}
        and a.id = ${items[0].attemptId})`
    : sql``;
  // The clock as the verdict saw it, to the millisecond a JavaScript Date keeps of Postgres' microseconds.
  const sameClock = sql`(e.failing_since is null and v.seen_failing_since is null
    or abs(extract(epoch from e.failing_since - v.seen_failing_since)) < 0.001)`;
  return await sql<RecordRow[]>`
    with r as (
      select * from unnest(
        ${items.map((_, i) => i)}::int[],
        ${items.map((i) => i.endpointId)}::uuid[],
        ${items.map((i) => i.delivery.id)}::uuid[],
        ${items.map((i) => i.delivery.token)}::uuid[],
        ${items.map((i) => i.delivery.slot)}::int[],
        ${items.map((i) => String(i.result.ok))}::text[]::bool[],
        ${items.map((i) => i.result.httpStatus)}::int[],
        ${items.map((i) => i.result.responseBody)}::text[],
        ${items.map((i) => Math.round(i.result.durationMs))}::int[],
        ${items.map((i) => i.attemptId)}::uuid[],
        ${items.map((i) => JSON.stringify(i.result.responseHeaders ?? {}))}::text[],
        ${items.map((i) => JSON.stringify(i.plan))}::text[]::jsonb[],
        ${items.map((i) => failureReason(i.result))}::text[]
      ) as r(idx, endpoint_id, delivery_id, token, slot, ok, http_status, response_body, duration_ms, attempt_id,
        response_headers, plan, last_error)
    ), v as (
      select * from unnest(
        ${verdicts.map((v) => v.endpointId)}::uuid[],
        ${verdicts.map((v) => v.health.disable)}::text[],
        ${verdicts.map((v) => v.health.failing)}::text[],
        ${verdicts.map((v) => v.seenFailingSince?.toISOString() ?? null)}::text[]::timestamptz[],
        ${verdicts.map((v) => v.failedAttempts)}::int[]
      ) as v(endpoint_id, disable, failing, seen_failing_since, failed)
    ), attempt as (
      insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
        response_headers)
      select r.attempt_id, d.id, d.company_id, d.attempts + 1, r.http_status, r.response_body, r.duration_ms,
        r.response_headers::jsonb
      from r join webhook_deliveries d on d.id = r.delivery_id
      ${
    again
      ? sql`where not exists (select 1 from webhook_attempts a where a.delivery_id = r.delivery_id and a.id = r.attempt_id)`
      : sql``
  }
    )${recordStats(sql, items, again)}, wants as (
      -- the endpoints whose row this statement may write (as the two updates below test)
      select v.endpoint_id from v join webhook_endpoints e on e.id = v.endpoint_id
      where e.status = 'active'
        and (v.disable is not null or v.failed > 0 or e.consecutive_failures > 0 or v.failing <> 'keep')
    ), locked as materialized (
      select e.id from webhook_endpoints e where e.id in (select endpoint_id from wants)
      order by e.id
      for no key update skip locked
    ), disabled as (
      update webhook_endpoints e set ${disabling(sql, sql`v.disable`)}
      from v
      where e.id = v.endpoint_id and v.disable is not null and e.status = 'active'
        and e.id in (select id from locked)
        and (v.disable = 'gone' or ${sameClock})
      returning e.id, v.disable
    ), clock as (
      -- The failing clock moves only from the value its verdict saw; the failures in a row always count, and a
      -- success ends the streak. A healthy endpoint's success writes nothing. alerted: the streak has crossed
      -- FailingAlert and was not announced yet (the announcement marks it: operational.ts).
      update webhook_endpoints e set
        failing_since = case when v.failing = 'keep' or not ${sameClock} then e.failing_since
          when v.failing = 'start' then now() end,
        consecutive_failures = case when v.failed = 0 then 0 else e.consecutive_failures + v.failed end,
        failing_alerted_at = case when v.failed = 0 then null else e.failing_alerted_at end
      from v
      where e.id = v.endpoint_id and v.disable is null and e.status = 'active' and e.id in (select id from locked)
        and (v.failed > 0 or e.consecutive_failures > 0 or v.failing <> 'keep' and ${sameClock}) ${firstTry}
      returning e.id, v.failed > 0 and e.failing_alerted_at is null
        and (e.consecutive_failures >= ${lease.failingAfterAttempts}
          or e.failing_since <= now() - ${lease.failingAfterSeconds}::float8 * interval '1 second') as alerted
    ), updated as (
      update webhook_deliveries d set
        attempts = d.attempts + 1,
        schedule_attempts = d.schedule_attempts + 1,
        status = case when r.ok then 'succeeded' when d.status <> 'pending' then d.status
          when x.id is not null or r.plan ->> d.schedule_attempts is null then 'failed' else 'pending' end,
        next_attempt_at = case when r.ok or d.status <> 'pending' or x.id is not null then null
          else now() + (r.plan ->> d.schedule_attempts)::float8 * interval '1 second' end,
        last_error = r.last_error,
        lease_token = null,
        leased_until = null,
        leased_by = null,
        updated_at = now()
      from r left join disabled x on x.id = r.endpoint_id
      where d.id = r.delivery_id and d.lease_token = r.token
      returning r.idx, d.status, d.next_attempt_at, d.endpoint_id, d.attempts,
        -- failed by the end of its plan (d.schedule_attempts is the count after this attempt)
        d.status = 'failed' and not r.ok and x.id is null and r.plan ->> (d.schedule_attempts - 1) is null as exhausted
    ), ep as (
      select * from webhook_endpoints where id in (select endpoint_id from r)
    ), gate as (
      -- The slots that stay taken: their attempt was recorded, their endpoint still allows them.
      select r.idx, r.endpoint_id, r.slot, ep.delivery_mode, r.delivery_id as attempted,
        u.status = 'pending' as still_pending
      from r join updated u on u.idx = r.idx join ep on ep.id = r.endpoint_id
      where r.slot < ${slotLimit(sql, "ep")} and r.endpoint_id not in (select id from disabled)
    ), ${fillSlots(sql, until, lease.owner)}, moved_slot as (
      update webhook_slots s set
        delivery_id = p.next_id,
        leased_until = case when p.next_id is not null then ${until} end,
        leased_by = case when p.next_id is not null then ${lease.owner}::uuid end
      from r left join paired p on p.idx = r.idx
      where s.endpoint_id = r.endpoint_id and s.slot = r.slot and s.delivery_id = r.delivery_id
    )
    select ep.*, r.idx, u.status as delivery_status, u.next_attempt_at as delivery_next_attempt_at,
      u.attempts as attempt_number, x.disable as endpoint_disabled, u.exhausted, c.alerted as endpoint_failing,
      r.endpoint_id in (select endpoint_id from wants) and r.endpoint_id not in (select id from locked)
        as endpoint_deferred,
      ${claimedColumns(sql)}, r.slot
    from r
    left join updated u on u.idx = r.idx
    left join ep on ep.id = r.endpoint_id
    left join disabled x on x.id = r.endpoint_id
    left join clock c on c.id = r.endpoint_id
    left join taken t on t.idx = r.idx`;
}
