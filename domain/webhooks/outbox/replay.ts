/**
 * Replay after disable (docs/webhooks.md, "Replay what a disabled endpoint missed"): the events an endpoint would have
 * received while it was disabled, queued for it as new delivery records, in event order.
 *
 * Skipped = an event of the company, of a type the endpoint enables (and that its filter lets through, when it has
 * one), not a test event sent to another endpoint, inserted within one of the endpoint's disabled periods
 * (sql/0030), within [since, until) and within the retention, for which the endpoint has no record. "No record" is
 * what makes it idempotent: a replayed event has one from then on, so a second recover queues nothing again.
 *
 * One call reads at most `scan` of the company's events in the range (WEBHOOK_RECOVER_SCAN_EVENTS, docs/limits.md),
 * whatever they turn out to be: a range of events the endpoint would not have received costs a call that bounded
 * time, and the answer's cursor (`after`) says where the next call goes on.
 */

import type { TransactionSql } from "../../infra/db.ts";
import { pgTimestamptz } from "../../basics/time.ts";
import { passesFilter } from "./filters.ts";
import { charged, FILTER_SLICE_MS, hasFilterTime, yieldToEventLoop } from "./filter_time.ts";
import { askDecision, deferralRoom, DEFERRED_UNTIL, noteDeferred } from "./filter_deferrals.ts";
import { recordFilterCounts } from "./filter_errors.ts";
import { metrics } from "../../infra/metrics.ts";
import { OPERATIONAL_EVENT_TYPES } from "./events.ts";

/** At most this many skipped events are queued by one recover; the answer says whether more remain. */
export const REPLAY_LIMIT = 10_000;
/** Events of the range read by one recover when the configuration names no other bound. */
export const DEFAULT_SCAN_EVENTS = 20_000;

export type ReplayEndpoint = { id: string; enabled_events: string[]; filter?: string | null };

export type ReplayWindow = {
  since: Date;
  until?: Date;
  /** EVENT_RETENTION_DAYS: an event older than that has lost its records (retention.ts), so is not told apart. */
  retentionDays: number;
};

export type ReplayBounds = {
  /** Records queued at most (REPLAY_LIMIT). */
  limit?: number;
  /** Events of the range read at most (DEFAULT_SCAN_EVENTS). */
  scan?: number;
  /** Go on after this event id: the `skipped_after` of the previous call's answer. */
  after?: string | null;
};

export type Replayed = {
  skipped: number;
  remaining: boolean;
  /** The last event this call dealt with, while more of the range remain; null once the range is done. */
  after: string | null;
  /** Of the records queued, those whose filter waits for the company's filter time (filter_time.ts). */
  deferred?: number;
};

const NO_EVENT = "00000000-0000-0000-0000-000000000000";

/**
 * Queues the skipped events of `endpoint` (at most `limit`, oldest first, among at most `scan` events read after
 * `after`) as pending records due now, in the caller's transaction. The caller holds the endpoint's recover lock
 * (deliveries.ts): two replays at once would both find the same events without a record. It wakes the endpoint.
 */
export async function replaySkipped(
  tx: TransactionSql,
  companyId: string,
  endpoint: ReplayEndpoint,
  window: ReplayWindow,
  bounds: ReplayBounds = {},
): Promise<Replayed> {
  const limit = bounds.limit ?? REPLAY_LIMIT;
  const scan = bounds.scan ?? DEFAULT_SCAN_EVENTS;
  const nothing = { skipped: 0, remaining: false, after: null };
  // as text both ways: postgres.js would hand a timestamptz to JavaScript's Date, which keeps no microseconds
  const since = pgTimestamptz(window.since);
  const until = window.until ? pgTimestamptz(window.until) : null;
  const [range] = await tx<{ periods: number; lo: string; hi: string; empty: boolean }[]>`
    select periods, lo::text, hi::text, lo >= hi as empty from (
      select count(*)::int as periods,
        greatest(${since}::text::timestamptz, now() - ${window.retentionDays}::float8 * interval '1 day',
          min(p.disabled_from)) as lo,
        least(${until}::text::timestamptz, now(), max(coalesce(p.disabled_until, 'infinity'))) as hi
      from webhook_endpoint_disabled_periods p
      where p.company_id = ${companyId} and p.endpoint_id = ${endpoint.id}
        and coalesce(p.disabled_until, 'infinity') > ${since}::text::timestamptz
        and p.disabled_from < least(${until}::text::timestamptz, now())
    ) b`;
  if (range.periods === 0 || range.empty) return nothing;
  const lo = tx`${range.lo}::timestamptz`;
  const hi = tx`${range.hi}::timestamptz`;
  // as the fan-out decides (events.ts, `enables`): a type named, or `*` for all but the operational ones, which are
  // never sent to the endpoint they are about
  const types = endpoint.enabled_events.includes("*")
    ? tx`and (e.type = any(${endpoint.enabled_events}::text[]) or e.type <> all(${OPERATIONAL_EVENT_TYPES}::text[]))`
    : tx`and e.type = any(${endpoint.enabled_events}::text[])`;
  const notAbout = tx`and (e.type <> all(${OPERATIONAL_EVENT_TYPES}::text[]) or e.about <> ${endpoint.id})`;
  const filter = endpoint.filter ?? null;

  // The bounded read: the next `scan` events of the company in the range by id (events_company_idx of each day's
  // partition), then the conditions on those alone. `read`/`last` say how far it went, candidates or not.
  const rows = await tx<{ read: number; last: string | null; id: string | null; type: string; data?: unknown }[]>`
    with scanned as materialized (
      select e.id, e.type, e.inserted_at, e.only_endpoint_id, e.data->>'endpoint_id' as about
        ${filter === null ? tx`` : tx`, e.data`}
      from events e
      where e.company_id = ${companyId} and e.inserted_at >= ${lo} and e.inserted_at < ${hi}
        and e.id > ${bounds.after ?? NO_EVENT}
      order by e.id
      limit ${scan}
    ), edge as (
      select count(*)::int as read, (array_agg(id order by id desc))[1]::text as last from scanned
    )
    select edge.read, edge.last, c.* from edge left join lateral (
      select e.id, e.type ${filter === null ? tx`` : tx`, e.data`} from scanned e
      where e.only_endpoint_id is null ${types} ${notAbout}
        and exists (
          select 1 from webhook_endpoint_disabled_periods p
          where p.company_id = ${companyId} and p.endpoint_id = ${endpoint.id}
            and e.inserted_at > p.disabled_from and e.inserted_at < coalesce(p.disabled_until, 'infinity'))
        -- a record is written with its event's instant (event_data.ts): one index probe per status
        and not exists (
          select 1 from webhook_deliveries d
          where d.company_id = ${companyId} and d.endpoint_id = ${endpoint.id}
            and d.status in ('pending', 'succeeded', 'failed') and d.inserted_at = e.inserted_at and d.event_id = e.id)
    ) c on true
    order by c.id`;
  const { read, last } = rows[0];
  let after = read === scan ? last : null;
  const chosen: string[] = [];
  const deferred: string[] = [];
  // Evaluated in slices, between which other requests are answered, each evaluation charged to the company; once its
  // filter time is spent, the rest are queued deferred, for the engine to decide (filter_time.ts).
  let sliceEnd = performance.now() + FILTER_SLICE_MS;
  let room: number | null = null; // the company's waiting records' room, read at the first deferral
  for (const r of rows) {
    if (r.id === null) continue;
    let defer = false;
    if (filter !== null) {
      if (performance.now() > sliceEnd) {
        await yieldToEventLoop();
        sliceEnd = performance.now() + FILTER_SLICE_MS;
      }
      const data = (r.data ?? {}) as Record<string, unknown>;
      // as emitEvent decides (events.ts): the stored data are what the fan-out's filter saw
      if (!hasFilterTime(companyId)) defer = true;
      else if (!charged(companyId, () => passesFilter(filter, r.type, data))) continue;
    }
    if (defer) room ??= deferralRoom(companyId);
    if (chosen.length === limit || (defer && deferred.length >= room!)) {
      // the next call starts at this one's first event left over (past the waiting records' bound: once the
      // company's filters have caught up, filter_deferrals.ts)
      after = chosen.length > 0 ? chosen[chosen.length - 1] : (bounds.after ?? NO_EVENT);
      break;
    }
    chosen.push(r.id);
    if (defer) deferred.push(r.id);
  }
  if (chosen.length === 0) return { skipped: 0, remaining: after !== null, after };

  // Set-based, each record at its event's instant. Its id keeps the first 11 bytes of the event's (the UUIDv7's
  // milliseconds and the whole counter that orders ids made in the same millisecond: its last 6 bits are in the 11th
  // byte) and takes the rest at random: the replayed records sort among the endpoint's others by event, which is the
  // order both delivery modes take records due at the same instant in. A deferred one waits (filter_deferrals.ts).
  const [{ queued }] = await tx<{ queued: number }[]>`
    with queued as (
      insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
      select encode(overlay(uuid_send(gen_random_uuid()) placing substring(uuid_send(e.id) from 1 for 11) from 1 for 11),
          'hex')::uuid,
        ${companyId}, e.id, ${endpoint.id}, e.type,
        case when e.id = any(${deferred}::uuid[]) then ${DEFERRED_UNTIL}::timestamptz else now() end, e.inserted_at
      from events e
      where e.company_id = ${companyId} and e.inserted_at >= ${lo} and e.inserted_at < ${hi}
        and e.id = any(${chosen}::uuid[])
      returning id, event_id, inserted_at, next_attempt_at
    ), waiting as (
      insert into webhook_filter_deferrals (delivery_id, company_id, endpoint_id, event_id, event_inserted_at)
      select id, ${companyId}, ${endpoint.id}, event_id, inserted_at from queued
      where next_attempt_at = ${DEFERRED_UNTIL}::timestamptz
    )
    select count(*)::int as queued from queued`;
  if (deferred.length > 0) {
    noteDeferred(companyId, deferred.length);
    metrics.filterDeferred.inc({}, deferred.length);
    await Promise.all([
      recordFilterCounts(tx, companyId, [{ endpointId: endpoint.id, deferred: deferred.length }]),
      askDecision(tx, companyId),
    ]);
  }
  return { skipped: queued, remaining: after !== null, after, deferred: deferred.length };
}
