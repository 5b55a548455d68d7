/**
 * Finds the events an id names, for the events list's `event_id` and `transaction_id` filters (docs/webhooks.md, "Search
 * by event or transaction id"). Its own file: it is the only read of events by what their data says, and it is bounded
 * by the ids' own instants (UUIDv7), since no index of events or records serves either id.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";

/** How many of the company's events a transaction search reads, from the transaction's creation on. */
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

/** The lowest UUID whose first 48 bits are `at`: every UUIDv7 made at or after `at` sorts after it. */
function lowestIdAt(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, "0") + "0".repeat(20);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The event `eventId` of the company, read within the days its id's instant allows (none for another company's). */
export async function findEvent(sql: SqlOrTransaction, companyId: string, eventId: string): Promise<FoundEvent[]> {
  const at = uuidV7Instant(eventId);
  if (!at) return [];
  return [
    ...await sql<FoundEvent[]>`
    select id, inserted_at::text as instant from events
    where company_id = ${companyId} and id = ${eventId}
      and inserted_at >= ${new Date(at.getTime() - ID_INSTANT_MARGIN_MS)}
      and inserted_at < ${new Date(at.getTime() + ID_INSTANT_MARGIN_MS)}`,
  ];
}

/**
 * The company's events whose data names the transaction (`transaction_id`, or one of `transaction_ids`), among its
 * first TRANSACTION_SEARCH_EVENTS events from the transaction's creation on, read in id order through the events'
 * (company_id, id) index: an event about a transaction comes after it.
 */
export async function findTransactionEvents(
  sql: SqlOrTransaction,
  companyId: string,
  transactionId: string,
): Promise<FoundEvent[]> {
  const at = uuidV7Instant(transactionId);
  if (!at) return [];
  const since = new Date(at.getTime() - ID_INSTANT_MARGIN_MS);
  return [
    ...await sql<FoundEvent[]>`
    select id, inserted_at::text as instant from (
      select id, inserted_at, data from events
      where company_id = ${companyId} and id >= ${lowestIdAt(since)} and inserted_at >= ${since}
      order by id
      limit ${TRANSACTION_SEARCH_EVENTS}
    ) e
    where e.data->>'transaction_id' = ${transactionId}
      or jsonb_typeof(e.data->'transaction_ids') = 'array' and e.data->'transaction_ids' ? ${transactionId}`,
  ];
}
