import type { TransactionSql } from "../infra/db.ts";
import { pgTimestamptz } from "../basics/time.ts";
import { passesFilter } from "./filters.ts";
import { OPERATIONAL_EVENT_TYPES } from "./events.ts";

/**
 * Replay after disable (docs/webhooks.md, "Replay what a disabled endpoint missed"): the events an endpoint would have
 * received while it was disabled, queued for it as new delivery records, in event order.
 *
 * Skipped = an event of the company, of a type the endpoint enables (and that its filter lets through, when it has
 * one), not a test event sent to another endpoint, inserted within one of the endpoint's disabled periods
 * (sql/0030), within [since, until) and within the retention, for which the endpoint has no record. "No record" is
 * what makes it idempotent: a replayed event has one from then on, so a second recover queues nothing again.
 */

/** At most this many skipped events are queued by one recover; the answer says whether more remain. */
export const REPLAY_LIMIT = 10_000;
/** Events read per statement while a filter decides which of them the endpoint would have received. */
const FILTERED_PAGE = 2_000;

export type ReplayEndpoint = { id: string; enabled_events: string[]; filter?: string | null };

export type ReplayWindow = {
  since: Date;
  until?: Date;
  /** EVENT_RETENTION_DAYS: an event older than that has lost its records (retention.ts), so is not told apart. */
  retentionDays: number;
};

/**
 * Queues the skipped events of `endpoint` (at most `limit`, oldest first) as pending records due now, in the
 * caller's transaction, which holds the endpoint's row lock (two replays at once would both find the same events
 * without a record). The caller wakes the endpoint. Answers how many were queued and whether more remain.
 */
export async function replaySkipped(
  tx: TransactionSql,
  companyId: string,
  endpoint: ReplayEndpoint,
  window: ReplayWindow,
  opts: { limit?: number } = {},
): Promise<{ skipped: number; remaining: boolean }> {
  const limit = opts.limit ?? REPLAY_LIMIT;
  // as text both ways: postgres.js would hand a timestamptz to JavaScript's Date, which keeps no microseconds
  const since = pgTimestamptz(window.since);
  const until = window.until ? pgTimestamptz(window.until) : null;
  const [bounds] = await tx<{ periods: number; lo: string; hi: string; empty: boolean }[]>`
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
  if (bounds.periods === 0 || bounds.empty) return { skipped: 0, remaining: false };
  const lo = tx`${bounds.lo}::timestamptz`;
  const hi = tx`${bounds.hi}::timestamptz`;
  // as the fan-out decides (events.ts, `enables`): a type named, or `*` for all but the operational ones, which are
  // never sent to the endpoint they are about
  const types = endpoint.enabled_events.includes("*")
    ? tx`and (e.type = any(${endpoint.enabled_events}::text[]) or e.type <> all(${OPERATIONAL_EVENT_TYPES}::text[]))`
    : tx`and e.type = any(${endpoint.enabled_events}::text[])`;
  const notAbout =
    tx`and (e.type <> all(${OPERATIONAL_EVENT_TYPES}::text[]) or e.data->>'endpoint_id' <> ${endpoint.id})`;
  const filter = endpoint.filter ?? null;
  // Without a filter every candidate is taken, so one statement reads all that one call may queue (and one more,
  // to know whether more remain); with one, pages are read until `limit` pass it.
  const page = filter === null ? limit + 1 : FILTERED_PAGE;

  const chosen: string[] = [];
  let remaining = false;
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const rows = await tx<{ id: string; type: string; data?: Record<string, unknown> }[]>`
      select e.id, e.type ${filter === null ? tx`` : tx`, e.data`}
      from events e
      where e.company_id = ${companyId} and e.inserted_at >= ${lo} and e.inserted_at < ${hi} and e.id > ${after}
        and e.only_endpoint_id is null ${types} ${notAbout}
        and exists (
          select 1 from webhook_endpoint_disabled_periods p
          where p.company_id = ${companyId} and p.endpoint_id = ${endpoint.id}
            and e.inserted_at > p.disabled_from and e.inserted_at < coalesce(p.disabled_until, 'infinity'))
        -- a record is written with its event's instant (event_data.ts): one index probe per status
        and not exists (
          select 1 from webhook_deliveries d
          where d.company_id = ${companyId} and d.endpoint_id = ${endpoint.id}
            and d.status in ('pending', 'succeeded', 'failed') and d.inserted_at = e.inserted_at and d.event_id = e.id)
      order by e.id
      limit ${page}`;
    for (const r of rows) {
      // as emitEvent decides (events.ts): the stored data are what the fan-out's filter saw
      if (filter !== null && !passesFilter(filter, r.type, r.data ?? {})) continue;
      if (chosen.length === limit) {
        remaining = true;
        break;
      }
      chosen.push(r.id);
    }
    if (remaining || rows.length < page) break;
    after = rows[rows.length - 1].id;
  }
  if (chosen.length === 0) return { skipped: 0, remaining: false };

  // Set-based, each record at its event's instant. Its id keeps the first 11 bytes of the event's (the UUIDv7's
  // milliseconds and the whole counter that orders ids made in the same millisecond: its last 6 bits are in the 11th
  // byte) and takes the rest at random: the replayed records sort among the endpoint's others by event, which is the
  // order both delivery modes take records due at the same instant in.
  const [{ queued }] = await tx<{ queued: number }[]>`
    with queued as (
      insert into webhook_deliveries (id, company_id, event_id, endpoint_id, type, next_attempt_at, inserted_at)
      select encode(overlay(uuid_send(gen_random_uuid()) placing substring(uuid_send(e.id) from 1 for 11) from 1 for 11),
          'hex')::uuid,
        ${companyId}, e.id, ${endpoint.id}, e.type, now(), e.inserted_at
      from events e
      where e.company_id = ${companyId} and e.inserted_at >= ${lo} and e.inserted_at < ${hi}
        and e.id = any(${chosen}::uuid[])
      returning 1
    )
    select count(*)::int as queued from queued`;
  return { skipped: queued, remaining };
}
