/**
 * Reads events back by the records that point at them, a second statement bounded by the records' instants
 * (docs/webhooks.md, "Reading the events back"). Its own file: the delivery claim and deliveries.ts's reads share it.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";

/** Where an event is: its id, its company and its instant (a delivery record is written with its event's). */
export type EventKey = { event_id: string; company_id: string; inserted_at: Date };

/**
 * The data of the events `keys` locate, by event id. The keys' instants bound the statement by values Postgres knows
 * when it plans it, so it plans only the days between them; a join from the delivery records to `events` makes it
 * plan every day partition of the retention on each call, a cost that grows with the days kept (docs/webhooks.md,
 * "Reading the events back"). A Date keeps milliseconds, Postgres microseconds: the bounds are a millisecond wider.
 */
export async function eventData(
  sql: SqlOrTransaction,
  keys: EventKey[],
): Promise<Map<string, Record<string, unknown>>> {
  const rows = await eventRows(sql, keys);
  return new Map([...rows].map(([id, row]) => [id, row.data]));
}

/** An event as an attempt needs it: its data and the trace it continues (sql/0029, docs/webhooks.md "Tracing"). */
export type EventRow = { data: Record<string, unknown>; traceparent: string | null };

/** `eventData` with each event's `traceparent`, by the same statement. */
export async function eventRows(sql: SqlOrTransaction, keys: EventKey[]): Promise<Map<string, EventRow>> {
  if (keys.length === 0) return new Map();
  const instants = keys.map((k) => k.inserted_at.getTime());
  const rows = await sql<({ id: string } & EventRow)[]>`
    select id, data, traceparent from events
    where inserted_at >= ${new Date(Math.min(...instants) - 1)} and inserted_at < ${new Date(Math.max(...instants) + 1)}
      and id = any(${keys.map((k) => k.event_id)}::uuid[])
      and company_id = any(${[...new Set(keys.map((k) => k.company_id))]}::uuid[])`;
  return new Map(rows.map((r) => [r.id, { data: r.data, traceparent: r.traceparent }]));
}
