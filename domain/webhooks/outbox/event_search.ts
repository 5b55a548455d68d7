/**
 * Finds the events an id names, for the events list's `event_id` and `transaction_id` filters (docs/webhooks.md, "Search
 * by event or transaction id"). Its own file: it is the only read of events by what their data says. An event is read
 * by its id within the days its id's instant allows (UUIDv7); a transaction's events through `event_transactions`
 * (sql/0045), which a trigger fills as events are written, and those written before that table by a bounded read.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";

/** How many of the events naming one transaction a search reads at most, oldest first. */
export const TRANSACTION_SEARCH_EVENTS = 10_000;

/**
 * How far an event's `inserted_at` may lie before the instant in its id: the row takes its transaction's start and the
 * id is made later in that transaction, by a clock of another machine. The same margin after it, for the clocks.
 */
export const ID_INSTANT_MARGIN_MS = 10 * 60_000;

/**
 * An event found: its id and its instant, which locate its delivery records (they are written with it). The instant
 * as Postgres writes it: a Date would drop its microseconds, and the records would no longer match it.
 */
export type FoundEvent = { id: string; instant: string };

/**
 * The instant a UUIDv7 carries in its first 48 bits (milliseconds since 1970); null for another version, which no id
 * of ours is (domain/basics/ids.ts), so nothing of ours can be found by it.
 */
export function uuidV7Instant(id: string): Date | null {
  const hex = id.replaceAll("-", "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex) || hex[12] !== "7") return null;
  return new Date(parseInt(hex.slice(0, 12), 16));
}

/**
 * When a row whose id is `id` can have been written: the id's instant, ID_INSTANT_MARGIN_MS either side. Null when no
 * row of ours can have it yet: not a UUIDv7, or an instant past the present. 48 bits reach the year 10889, and an
 * instant past 9999 is no timestamp Postgres reads (the statement failed: a 500); any UUID a client sends is one it
 * may ask about, and finds nothing.
 */
export function idWindow(id: string, now = new Date()): { from: Date; to: Date } | null {
  const at = uuidV7Instant(id);
  if (!at || at.getTime() > now.getTime() + ID_INSTANT_MARGIN_MS) return null;
  return { from: new Date(at.getTime() - ID_INSTANT_MARGIN_MS), to: new Date(at.getTime() + ID_INSTANT_MARGIN_MS) };
}

/** The lowest UUID whose first 48 bits are `at`: every UUIDv7 made at or after `at` sorts after it. */
function lowestIdAt(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, "0") + "0".repeat(20);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The event `eventId` of the company, read within the days its id's instant allows (none for another company's). */
export async function findEvent(sql: SqlOrTransaction, companyId: string, eventId: string): Promise<FoundEvent[]> {
  const window = idWindow(eventId);
  if (!window) return [];
  return [
    ...await sql<FoundEvent[]>`
    select id, inserted_at::text as instant from events
    where company_id = ${companyId} and id = ${eventId}
      and inserted_at >= ${window.from} and inserted_at < ${window.to}`,
  ];
}

/**
 * The company's events whose data names the transaction (`transaction_id`, or one of `transaction_ids`): at most
 * TRANSACTION_SEARCH_EVENTS of them, the oldest, read from `event_transactions` by its key, whatever the transaction's
 * id. Events written before that table existed (`event_transactions_since`) have no rows there: for a transaction
 * whose id's instant comes before it, they are looked for as they were before it, among the first
 * TRANSACTION_SEARCH_EVENTS events of the company from the transaction's creation up to that instant.
 */
export async function findTransactionEvents(
  sql: SqlOrTransaction,
  companyId: string,
  transactionId: string,
): Promise<FoundEvent[]> {
  const rows = await sql<{ since: string; since_ms: number; id: string | null; instant: string | null }[]>`
    select s.since::text as since, (extract(epoch from s.since) * 1000)::float8 as since_ms, f.id, f.instant
    from event_transactions_since s
    left join lateral (
      select t.event_id as id, t.inserted_at::text as instant from event_transactions t
      where t.company_id = ${companyId} and t.transaction_id = ${transactionId}
      order by t.inserted_at, t.event_id
      limit ${TRANSACTION_SEARCH_EVENTS}
    ) f on true`;
  const found = rows.flatMap((r) => r.id && r.instant ? [{ id: r.id, instant: r.instant }] : []);
  const window = idWindow(transactionId);
  if (!rows[0] || !window || window.from.getTime() >= rows[0].since_ms) return found;
  const earlier = await writtenBefore(sql, companyId, transactionId, window.from, rows[0]);
  return [...found, ...earlier.filter((e) => !found.some((f) => f.id === e.id))];
}

/**
 * The events naming the transaction among the company's first TRANSACTION_SEARCH_EVENTS written from `from` up to
 * the lookup's start, read in id order through the events' (company_id, id) index (an event about a transaction comes
 * after it), between the lowest ids those instants allow.
 */
async function writtenBefore(
  sql: SqlOrTransaction,
  companyId: string,
  transactionId: string,
  from: Date,
  lookup: { since: string; since_ms: number },
): Promise<FoundEvent[]> {
  const until = new Date(lookup.since_ms + ID_INSTANT_MARGIN_MS);
  // `since` as text: postgres.js would hand a timestamptz parameter to JavaScript's Date, which drops its microseconds
  return [
    ...await sql<FoundEvent[]>`
    select id, inserted_at::text as instant from (
      select id, inserted_at, data from events
      where company_id = ${companyId} and id >= ${lowestIdAt(from)} and id < ${lowestIdAt(until)}
        and inserted_at >= ${from} and inserted_at < ${lookup.since}::text::timestamptz
      order by id
      limit ${TRANSACTION_SEARCH_EVENTS}
    ) e
    where e.data->>'transaction_id' = ${transactionId}
      or jsonb_typeof(e.data->'transaction_ids') = 'array' and e.data->'transaction_ids' ? ${transactionId}`,
  ];
}
