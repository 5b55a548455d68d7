/**
 * What a pull stream's consumer reads (docs/webhooks.md, "Pull streams"): a page of messages after a cursor, each the
 * body an endpoint of the same settings would receive and the headers that sign it, in the stream's order; the
 * stream's backlog for its stats; and what the retention leaves of its log. A message is an event of the company read
 * back through the stream's log (sql/0048), never a record of its own.
 */

import { createHash } from "node:crypto";
import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import { ApiError } from "../../basics/errors.ts";
import { isoUtc } from "../../basics/time.ts";
import { eventRows } from "../outbox/event_data.ts";
import { evaluateFilter } from "../outbox/filters.ts";
import { chargeFilterTime, FILTER_SLICE_MS } from "../outbox/filter_time.ts";
import { signPayload, standardWebhookHeaders } from "../endpoints/signature.ts";
import { renderBody } from "../engine/body.ts";
import { before, encodeCursor, type Position } from "./cursors.ts";
import { committedOf, floorOf, MAX_STREAM_BACKLOG, NIL, type StreamRow, streamSecret } from "./streams.ts";

/** Messages a page holds at most. */
export const MAX_PAGE = 100;
/** Log rows one read looks at: a selective filter or type list ends a page early, its cursor past what it skipped. */
export const SCAN_LIMIT = 1_000;

export type StreamMessage = {
  /** The message's id, which `webhook-id` carries: the same each time it is read. */
  id: string;
  cursor: string;
  event_id: string;
  type: string;
  occurred_at: string;
  /** The exact text the signatures cover. */
  body: string;
  headers: Record<string, string>;
};

export type Page = { data: StreamMessage[]; next_cursor: string; has_more: boolean };

/** A page as answered, and the position its `next_cursor` names, for a reader that goes on without decoding it. */
export type Read = { page: Page; next: Position };

/** A message's id: a UUID derived from the stream's and the event's (version 8, RFC 9562's custom layout). */
export function messageId(streamId: string, eventId: string): string {
  const hex = createHash("sha256").update(`${streamId}:${eventId}`).digest("hex").slice(0, 32).split("");
  hex[12] = "8";
  hex[16] = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** 410 Gone: the cursor is before the oldest message still kept, which `oldest_cursor` names. */
export function cursorGone(oldest: string): ApiError {
  return new ApiError(410, {
    detail: "The messages after this cursor are gone (past the stream's backlog cap or the retention): read on " +
      "from oldest_cursor",
    oldest_cursor: oldest,
  });
}

type LogRow = { txid: string; event_id: string; type: string; event_inserted_at: Date };

/**
 * The messages after `after` (the committed position when null), at most `limit`: read from the log below the oldest
 * transaction still running (so none commits later behind the cursor), by the stream's types, then its filter, each
 * rendered and signed now. `next_cursor` is after the last row looked at, matched or not.
 */
export async function readPage(
  sql: Sql,
  box: SecretBox,
  stream: StreamRow,
  after: Position | null,
  limit: number,
): Promise<Read> {
  const secret = await streamSecret(box, stream);
  const floor = floorOf(stream);
  const from = after ?? committedOf(stream);
  if (before(from, floor)) throw cursorGone(encodeCursor(stream.id, secret, floor));
  const all = stream.enabled_events.includes("*");
  // Both reads on one connection, in one read-only transaction: the events of the log rows read are then always there
  // (they were written together), even while a failover moves the pool's connections between servers; read on two
  // connections, a lagging one could miss an event whose log row the other saw, and the cursor would pass it.
  const { rows, events } = await sql.begin("read only", async (tx) => {
    const rows = await tx<LogRow[]>`
      select txid::text as txid, event_id, type, event_inserted_at from stream_log
      where company_id = ${stream.company_id}
        and (txid, event_id) > (${from.txid}::xid8, ${from.event ?? NIL}::uuid)
        and txid < (${horizon(tx)})
        ${all ? tx`` : tx`and type = any(${stream.enabled_events})`}
      order by txid, event_id
      limit ${SCAN_LIMIT + 1}`;
    const keys = rows.slice(0, SCAN_LIMIT).map((r) => ({
      event_id: r.event_id,
      company_id: stream.company_id,
      inserted_at: r.event_inserted_at,
    }));
    return { rows, events: await eventRows(tx, keys) };
  });
  touch(sql, stream);
  const scanned = rows.slice(0, SCAN_LIMIT);
  const data: StreamMessage[] = [];
  let last: Position = from;
  for (const row of scanned) {
    if (data.length >= limit) break;
    last = { txid: row.txid, event: row.event_id };
    const event = events.get(row.event_id);
    // an event the retention took, its log row not yet retired: gone with its day
    if (!event) continue;
    if (stream.filter && !passes(stream, row.type, event.data)) continue;
    data.push(render(stream, secret, row, event.data, last));
  }
  const more = rows.length > SCAN_LIMIT || scanned.some((r) => before(last, { txid: r.txid, event: r.event_id }));
  return { page: { data, next_cursor: encodeCursor(stream.id, secret, last), has_more: more }, next: last };
}

/**
 * Below what transaction id every log row is committed and visible to this statement: the oldest transaction still
 * running when its snapshot was taken, leaving out those another database's session is running now (they cannot
 * write this database's log), so one long transaction of another database does not hold every stream back. A
 * transaction that is not found running elsewhere counts, whatever it is: one that ended since the snapshot may be
 * this database's, whose rows the snapshot does not see yet. A role that may not see other sessions' transaction ids
 * (pg_read_all_stats) gets the plain oldest running transaction.
 */
function horizon(sql: SqlOrTransaction) {
  return sql`
    select coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
    from pg_snapshot_xip(pg_current_snapshot()) x
    where (x::text::bigint % 4294967296) not in (
      select backend_xid::text::bigint from pg_stat_activity
      where backend_xid is not null and datname is distinct from current_database())`;
}

/** The stream's filter on one event, within the company's filter time (docs/webhooks.md, "Filters"). */
function passes(stream: StreamRow, type: string, data: Record<string, unknown>): boolean {
  const started = performance.now();
  const outcome = evaluateFilter(stream.filter!, type, data, { maxMs: FILTER_SLICE_MS });
  chargeFilterTime(stream.company_id, performance.now() - started);
  return outcome.passes;
}

function render(
  stream: StreamRow,
  secret: string,
  row: LogRow,
  data: Record<string, unknown>,
  position: Position,
): StreamMessage {
  const id = messageId(stream.id, row.event_id);
  const body = renderBody({
    event_payload_type: "snapshot",
    wrap_in_notification: false,
    inject_secret_in_body: false,
    event_mapping: null,
    payload_version: stream.payload_version,
    secret: "",
  }, { id, type: row.type, data, occurredAt: row.event_inserted_at });
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    id,
    cursor: encodeCursor(stream.id, secret, position),
    event_id: row.event_id,
    type: row.type,
    occurred_at: isoUtc(row.event_inserted_at),
    body,
    headers: {
      "service-signature": signPayload(body, secret, { timestamp }),
      ...standardWebhookHeaders(id, timestamp, body, [secret]),
    },
  };
}

/** When the stream was last read, written at most once a minute (a `listen` stream unread for a week goes). */
function touch(sql: Sql, stream: StreamRow) {
  if (stream.last_read_at && Date.now() - stream.last_read_at.getTime() < 60_000) return;
  stream.last_read_at = new Date();
  sql`update webhook_streams set last_read_at = now() where company_id = ${stream.company_id} and id = ${stream.id}`
    .catch(() => {});
}

/** What the stream's consumer has not acknowledged: messages of its types (its filter aside), counted up to the cap. */
export async function backlogOf(sql: Sql, stream: StreamRow): Promise<{ backlog: number; capped: boolean }> {
  const from = committedOf(stream);
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (
      select 1 from stream_log
      where company_id = ${stream.company_id}
        and (txid, event_id) > (${from.txid}::xid8, ${from.event ?? NIL}::uuid)
        ${stream.enabled_events.includes("*") ? sql`` : sql`and type = any(${stream.enabled_events})`}
      limit ${MAX_STREAM_BACKLOG + 1}
    ) l`;
  return { backlog: Math.min(row.n, MAX_STREAM_BACKLOG), capped: row.n > MAX_STREAM_BACKLOG };
}
