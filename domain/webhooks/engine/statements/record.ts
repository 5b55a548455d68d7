/**
 * The record statement: one statement per batch of attempts that stores them, adds them to the endpoints' health
 * aggregate, moves each record on, hands each slot to the next due record or frees it, and applies the endpoints'
 * verdicts. Its whole text is here, the aggregate's CTEs included (`recordStats`); only the hand-over's choice of the
 * next record is shared with the claim (fill_slots.ts). Only the SQL; recorder.ts decides and batches.
 */

import type postgres from "postgres";
import type { Sql, SqlOrTransaction } from "../../../infra/db.ts";
import { type DisabledReason, disabling } from "../../endpoints/endpoint_row.ts";
import type { SendResult } from "../sender.ts";
import type { ClaimedDelivery } from "./claim_data.ts";
import { type FailingAlert, failureReason, type Health } from "../../endpoints/decisions.ts";
import { claimedColumns, type ClaimRow, fillSlots } from "./fill_slots.ts";
import { endpointHolds, throttleWait } from "./throttle_turn.ts";
import type { Lease } from "./lease.ts";
import { DURATION_COLUMNS, tallyAttempts } from "../../endpoints/attempt_stats.ts";

/** One attempt to record, with what its answer decided (decisions.ts). */
export type RecordItem = {
  endpointId: string;
  delivery: ClaimedDelivery;
  result: SendResult;
  attemptId: string;
  /** Seconds to the next attempt by the record's `schedule_attempts`; past its end the record fails (`retryPlan`). */
  plan: number[];
  /** Seconds every record of the endpoint waits (a 429 with Retry-After: `endpointHoldSeconds`); null: none. */
  holdSeconds?: number | null;
  /**
   * The record went in a batch's request (docs/webhooks.md, "Batches"): one item per record, every one with the
   * request's result; `first` on one of them, so the request counts once in the health aggregate.
   */
  batch?: { id: string; first: boolean };
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
 * `firstMayHaveCommitted`: made again after a lost connection, when the first may have committed before its answer was lost.
 *
 * The batch also adds to its endpoints' health aggregate, in the same statement (`recordStats`, below;
 * docs/webhooks.md, "Endpoint health").
 *
 * It commits synchronously, like the claim (lease.ts): an attempt the receiver acknowledged and this
 * statement recorded survives a crash or a failover of Postgres, so a record is sent again only when its attempt was
 * in flight (docs/webhooks.md, "At least once"). Batched, the wait for the WAL flush cost nothing measurable in
 * `deno task bench`.
 */
export async function recordAttempts(
  sql: Sql,
  items: RecordItem[],
  verdicts: EndpointVerdict[],
  lease: Lease & FailingAlert,
  firstMayHaveCommitted = false,
): Promise<RecordRow[]> {
  const until = sql`lease_until(${lease.leaseMs})`;
  // Made again: the failures are counted only when the first try did not commit (the batch commits whole or not at
  // all), by the test the attempts' insert makes.
  const firstTry = firstMayHaveCommitted
    ? sql`and not exists (select 1 from webhook_attempts a where a.delivery_id = ${items[0].delivery.id}
        and a.id = ${items[0].attemptId})`
    : sql``;
  // The clock as the verdict saw it, to the millisecond a JavaScript Date keeps of Postgres' microseconds.
  const sameClock = sql`(e.failing_since is null and verdict.seen_failing_since is null
    or abs(extract(epoch from e.failing_since - verdict.seen_failing_since)) < 0.001)`;
  return await sql<RecordRow[]>`
    with batch as (
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
        ${items.map((i) => failureReason(i.result))}::text[],
        ${items.map((i) => i.holdSeconds ?? null)}::float8[]
      ) as batch(idx, endpoint_id, delivery_id, token, slot, ok, http_status, response_body, duration_ms, attempt_id,
        response_headers, plan, last_error, hold_seconds)
    ), ${endpointHolds(sql)}, verdicts as (
      select * from unnest(
        ${verdicts.map((v) => v.endpointId)}::uuid[],
        ${verdicts.map((v) => v.health.disable)}::text[],
        ${verdicts.map((v) => v.health.failing)}::text[],
        ${verdicts.map((v) => v.seenFailingSince?.toISOString() ?? null)}::text[]::timestamptz[],
        ${verdicts.map((v) => v.failedAttempts)}::int[]
      ) as verdicts(endpoint_id, disable, failing, seen_failing_since, failed)
    ), stored_attempts as (
      insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
        response_headers)
      select attempt.attempt_id, d.id, d.company_id, d.attempts + 1, attempt.http_status, attempt.response_body, attempt.duration_ms,
        attempt.response_headers::jsonb
      from batch attempt join webhook_deliveries d on d.id = attempt.delivery_id
      ${
    firstMayHaveCommitted
      ? sql`where not exists (select 1 from webhook_attempts a where a.delivery_id = attempt.delivery_id and a.id = attempt.attempt_id)`
      : sql``
  }
    )${recordStats(sql, items, firstMayHaveCommitted)}, endpoints_to_write as (
      -- the endpoints whose row this statement may write (as the two updates below test)
      select verdict.endpoint_id from verdicts verdict join webhook_endpoints e on e.id = verdict.endpoint_id
      where e.status = 'active'
        and (verdict.disable is not null or verdict.failed > 0 or e.consecutive_failures > 0 or verdict.failing <> 'keep')
    ), endpoints_locked as materialized (
      select e.id from webhook_endpoints e where e.id in (select endpoint_id from endpoints_to_write)
      order by e.id
      for no key update skip locked
    ), endpoints_disabled as (
      update webhook_endpoints e set ${disabling(sql, sql`verdict.disable`)}
      from verdicts verdict
      where e.id = verdict.endpoint_id and verdict.disable is not null and e.status = 'active'
        and e.id in (select id from endpoints_locked)
        and (verdict.disable = 'gone' or ${sameClock})
      returning e.id, verdict.disable
    ), failing_clocks as (
      -- The failing clock moves only from the value its verdict saw; the failures in a row always count, and a
      -- success ends the streak. A healthy endpoint's success writes nothing. alerted: the streak has crossed
      -- FailingAlert and was not announced yet (the announcement marks it: operational.ts).
      update webhook_endpoints e set
        failing_since = case when verdict.failing = 'keep' or not ${sameClock} then e.failing_since
          when verdict.failing = 'start' then now() end,
        consecutive_failures = case when verdict.failed = 0 then 0 else e.consecutive_failures + verdict.failed end,
        failing_alerted_at = case when verdict.failed = 0 then null else e.failing_alerted_at end
      from verdicts verdict
      where e.id = verdict.endpoint_id and verdict.disable is null and e.status = 'active' and e.id in (select id from endpoints_locked)
        and (verdict.failed > 0 or e.consecutive_failures > 0 or verdict.failing <> 'keep' and ${sameClock}) ${firstTry}
      returning e.id, verdict.failed > 0 and e.failing_alerted_at is null
        and (e.consecutive_failures >= ${lease.failingAfterAttempts}
          or e.failing_since <= now() - ${lease.failingAfterSeconds}::float8 * interval '1 second') as alerted
    ), records_moved as (
      update webhook_deliveries d set
        attempts = d.attempts + 1,
        schedule_attempts = d.schedule_attempts + 1,
        status = case when attempt.ok then 'succeeded' when d.status <> 'pending' then d.status
          when disabled.id is not null or attempt.plan ->> d.schedule_attempts is null then 'failed' else 'pending' end,
        next_attempt_at = case when attempt.ok or d.status <> 'pending' or disabled.id is not null then null
          else now() + (attempt.plan ->> d.schedule_attempts)::float8 * interval '1 second' end,
        last_error = attempt.last_error,
        lease_token = null,
        leased_until = null,
        leased_by = null,
        updated_at = now()
      from batch attempt left join endpoints_disabled disabled on disabled.id = attempt.endpoint_id
      where d.id = attempt.delivery_id and d.lease_token = attempt.token
      returning attempt.idx, d.status, d.next_attempt_at, d.endpoint_id, d.attempts,
        -- failed by the end of its plan (d.schedule_attempts is the count after this attempt)
        d.status = 'failed' and not attempt.ok and disabled.id is null and attempt.plan ->> (d.schedule_attempts - 1) is null as exhausted
    ), endpoint_rows as (
      select * from webhook_endpoints where id in (select endpoint_id from batch)
    ), slots_to_fill as (
      -- The slots that stay taken: their attempt was recorded, their endpoint still allows them.
      select attempt.idx, attempt.endpoint_id, attempt.slot, endpoint.delivery_mode, attempt.delivery_id as attempted,
        moved.status = 'pending' as still_pending
      from batch attempt join records_moved moved on moved.idx = attempt.idx join endpoint_rows endpoint on endpoint.id = attempt.endpoint_id
      where attempt.slot < endpoint_slot_base(endpoint.transport, endpoint.batch)
          + endpoint_slot_limit(endpoint.status, endpoint.delivery_mode, endpoint.max_concurrency)
        and attempt.endpoint_id not in (select id from endpoints_disabled)
        -- a batched endpoint's slot carries batches, which its own claim forms (claim_batch.ts)
        and endpoint.batch is null
        -- an endpoint told to wait by this batch hands over nothing: its hold is not in this statement's snapshot
        and attempt.endpoint_id not in (select endpoint_id from batch where hold_seconds is not null)
    ), ${fillSlots(sql, until, lease.owner)}, slots_handed_over as (
      update webhook_slots s set
        delivery_id = handover.next_id,
        leased_until = case when handover.next_id is not null then ${until} end,
        leased_by = case when handover.next_id is not null then ${lease.owner}::uuid end
      from batch attempt left join next_for_slot handover on handover.idx = attempt.idx
      where s.endpoint_id = attempt.endpoint_id and s.slot = attempt.slot and s.delivery_id = attempt.delivery_id
    )
    select endpoint.*, attempt.idx, moved.status as delivery_status, moved.next_attempt_at as delivery_next_attempt_at,
      moved.attempts as attempt_number, disabled.disable as endpoint_disabled, moved.exhausted, clock.alerted as endpoint_failing,
      attempt.endpoint_id in (select endpoint_id from endpoints_to_write) and attempt.endpoint_id not in (select id from endpoints_locked)
        as endpoint_deferred,
      ${claimedColumns(sql)}, attempt.slot, ${throttleWait(sql, sql`attempt.endpoint_id`)}
    from batch attempt
    left join records_moved moved on moved.idx = attempt.idx
    left join endpoint_rows endpoint on endpoint.id = attempt.endpoint_id
    left join endpoints_disabled disabled on disabled.id = attempt.endpoint_id
    left join failing_clocks clock on clock.id = attempt.endpoint_id
    left join leased_records on leased_records.idx = attempt.idx`;
}

/** The rows of one endpoint and minute (and its last-outcome rows) that concurrent batches spread over (sql/0027). */
export const STATS_SHARDS = 4;
/** Each statement takes the next shard, from a start of its own per process: batches written at once differ. */
let nextShard = Math.floor(Math.random() * STATS_SHARDS);

/** What of an attempt of the batch the aggregate needs. */
type Recorded = {
  endpointId: string;
  delivery: { id: string };
  attemptId: string;
  result: SendResult;
  batch?: { id: string; first: boolean };
};

/**
 * The CTEs by which the record statement keeps the endpoints' health aggregate (sql/0027,
 * docs/webhooks.md "Endpoint health"): one upsert per endpoint of the batch into its row of the current minute
 * (counts by outcome, the duration histogram) and one into its last success and failure, tallied here first
 * (`tallyAttempts`), so the batch costs no round trip more and each row is written once per batch, in one of
 * `STATS_SHARDS` rows so that batches written at once do not queue on one row lock. Starts with a comma, to follow the
 * statement's other CTEs.
 *
 * `firstMayHaveCommitted` (the statement made again after a lost connection): the tally is added only when the batch's attempts were
 * not stored by the first try, the same test the attempts' insert makes (the batch commits whole or not at all).
 */
export function recordStats(
  sql: SqlOrTransaction,
  items: readonly Recorded[],
  firstMayHaveCommitted: boolean,
): postgres.Fragment {
  const tallies = tallyAttempts(items);
  if (tallies.length === 0) return sql``;
  const first = items[0];
  const shard = nextShard++ % STATS_SHARDS;
  const fresh = firstMayHaveCommitted
    ? sql`where not exists (select 1 from webhook_attempts a where a.delivery_id = ${first.delivery.id}
        and a.id = ${first.attemptId})`
    : sql``;
  const count = (o: keyof typeof tallies[number]["counts"]) => tallies.map((t) => t.counts[o]);
  // the histogram's columns, named by code (attempt_stats.ts), never by input
  const buckets = sql.unsafe(DURATION_COLUMNS.join(", "));
  const fromArray = sql.unsafe(DURATION_COLUMNS.map((_, k) => `durations[${k + 1}]`).join(", "));
  const added = sql.unsafe(DURATION_COLUMNS.map((c) => `${c} = s.${c} + excluded.${c}`).join(", "));
  // requests beside events, only when the statement carries a batch's: the one-by-one statement stays as it was
  const batched = tallies.some((t) => t.batchedEvents > 0);
  const batchInput = batched
    ? sql`, ${tallies.map((t) => t.batchRequests)}::int[], ${tallies.map((t) => t.batchedEvents)}::int[]`
    : sql``;
  const batchNames = batched ? sql`, batch_requests, batched_events` : sql``;
  const batchAdded = batched
    ? sql`, batch_requests = coalesce(s.batch_requests, 0) + excluded.batch_requests,
        batched_events = coalesce(s.batched_events, 0) + excluded.batched_events`
    : sql``;
  return sql`, tally as (
      select t.*, t.histogram::int[] as durations, e.company_id from unnest(
        ${tallies.map((t) => t.endpointId)}::uuid[],
        ${count("succeeded")}::int[],
        ${count("http_3xx")}::int[],
        ${count("http_4xx")}::int[],
        ${count("http_5xx")}::int[],
        ${count("timeout")}::int[],
        ${count("network")}::int[],
        ${count("refused")}::int[],
        ${tallies.map((t) => `{${t.durations.join(",")}}`)}::text[],
        ${tallies.map((t) => String(t.anySucceeded))}::text[]::bool[],
        ${tallies.map((t) => t.lastFailure)}::text[]${batchInput}
      ) with ordinality as t(endpoint_id, succeeded, http_3xx, http_4xx, http_5xx, timeout, network, refused,
        histogram, any_succeeded, last_failure${batchNames}, n)
      join webhook_endpoints e on e.id = t.endpoint_id
      ${fresh}
    ), minute_stats as (
      insert into webhook_endpoint_stats as s (endpoint_id, bucket, shard, company_id, succeeded, http_3xx, http_4xx,
        http_5xx, timeout, network, refused, ${buckets}${batchNames})
      select endpoint_id, date_trunc('minute', now()), ${shard}::smallint, company_id, succeeded, http_3xx, http_4xx, http_5xx, timeout,
        network, refused, ${fromArray}${batchNames}
      from tally order by n
      on conflict (endpoint_id, bucket, shard) do update set
        succeeded = s.succeeded + excluded.succeeded,
        http_3xx = s.http_3xx + excluded.http_3xx,
        http_4xx = s.http_4xx + excluded.http_4xx,
        http_5xx = s.http_5xx + excluded.http_5xx,
        timeout = s.timeout + excluded.timeout,
        network = s.network + excluded.network,
        refused = s.refused + excluded.refused,
        ${added}${batchAdded}
    ), last_outcomes as (
      insert into webhook_endpoint_health as h (endpoint_id, shard, company_id, last_success_at, last_failure_at,
        last_failure_reason)
      select endpoint_id, ${shard}::smallint, company_id, case when any_succeeded then now() end,
        case when last_failure is not null then now() end, last_failure
      from tally order by n
      on conflict (endpoint_id, shard) do update set
        last_success_at = greatest(h.last_success_at, excluded.last_success_at),
        last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
        last_failure_reason = case when excluded.last_failure_at >= h.last_failure_at or h.last_failure_at is null
          then coalesce(excluded.last_failure_reason, h.last_failure_reason) else h.last_failure_reason end
    )`;
}
