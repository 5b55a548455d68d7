/**
 * The part of the record statement (record.ts) that adds a batch's attempts to the endpoints' health aggregate
 * (docs/webhooks.md, "Endpoint health"), kept apart from its records and slots.
 */

import type postgres from "postgres";
import type { SqlOrTransaction } from "../../../infra/db.ts";
import type { SendResult } from "../sender.ts";
import { DURATION_COLUMNS, tallyAttempts } from "../../endpoints/attempt_stats.ts";

/** The rows of one endpoint and minute (and its last-outcome rows) that concurrent batches spread over (sql/0027). */
export const STATS_SHARDS = 4;
/** Each statement takes the next shard, from a start of its own per process: batches written at once differ. */
let nextShard = Math.floor(Math.random() * STATS_SHARDS);

/** What of an attempt of record.ts's batch the aggregate needs. */
type Recorded = { endpointId: string; delivery: { id: string }; attemptId: string; result: SendResult };

/**
 * The CTEs by which the record statement (record.ts) keeps the endpoints' health aggregate (sql/0027,
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
        ${tallies.map((t) => t.lastFailure)}::text[]
      ) with ordinality as t(endpoint_id, succeeded, http_3xx, http_4xx, http_5xx, timeout, network, refused,
        histogram, any_succeeded, last_failure, n)
      join webhook_endpoints e on e.id = t.endpoint_id
      ${fresh}
    ), minute_stats as (
      insert into webhook_endpoint_stats as s (endpoint_id, bucket, shard, company_id, succeeded, http_3xx, http_4xx,
        http_5xx, timeout, network, refused, ${buckets})
      select endpoint_id, date_trunc('minute', now()), ${shard}::smallint, company_id, succeeded, http_3xx, http_4xx, http_5xx, timeout,
        network, refused, ${fromArray}
      from tally order by n
      on conflict (endpoint_id, bucket, shard) do update set
        succeeded = s.succeeded + excluded.succeeded,
        http_3xx = s.http_3xx + excluded.http_3xx,
        http_4xx = s.http_4xx + excluded.http_4xx,
        http_5xx = s.http_5xx + excluded.http_5xx,
        timeout = s.timeout + excluded.timeout,
        network = s.network + excluded.network,
        refused = s.refused + excluded.refused,
        ${added}
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
