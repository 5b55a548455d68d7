/**
 * Pull streams as the integrator keeps them (docs/webhooks.md, "Pull streams"): make, list, show, update and delete,
 * the stream object of the API, the committed position an acknowledgement moves, and the upkeep that keeps a backlog
 * to its cap and lets a `listen` stream nobody reads go. What a stream's messages are is messages.ts.
 */

import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import { ErrorBag, notFound } from "../../basics/errors.ts";
import { newId } from "../../basics/ids.ts";
import { isoUtc, isoUtcOrNull } from "../../basics/time.ts";
import { newSecret } from "../endpoints/credentials.ts";
import { checkEndpointQuota, type EndpointQuota } from "../endpoints/quotas.ts";
import { checkFilter } from "../outbox/filters.ts";
import { payloadVersionOf } from "../outbox/payload_versions.ts";
import { before, decodeCursor, encodeCursor, type Position } from "./cursors.ts";

/** Messages a stream keeps unacknowledged: past them its oldest go, counted (docs/webhooks.md, "Pull streams"). */
export const MAX_STREAM_BACKLOG = 100_000;
/** A `listen` stream nobody read for this long is deleted by the upkeep. */
export const LISTEN_STREAM_IDLE_DAYS = 7;

export type StreamRow = {
  id: string;
  company_id: string;
  kind: "api" | "listen";
  name: string | null;
  description: string | null;
  enabled_events: string[];
  filter: string | null;
  payload_version: string | null;
  sealed_secret: string;
  floor_txid: string;
  floor_event: string | null;
  dropped: string;
  acked_txid: string | null;
  acked_event: string | null;
  last_read_at: Date | null;
  inserted_at: Date;
  updated_at: Date;
};

export type StreamSettings = {
  enabled_events?: string[] | null;
  filter?: string | null;
  payload_version?: string | null;
  description?: string | null;
};

const sealContext = (streamId: string) => `webhook_streams:${streamId}`;

/** The stream's secret, opened: it signs its messages and its cursors. */
export function streamSecret(box: SecretBox, s: Pick<StreamRow, "id" | "sealed_secret">): Promise<string> {
  return box.open(s.sealed_secret, sealContext(s.id));
}

/** Where the stream starts: its floor, the oldest position still readable. */
export const floorOf = (s: Pick<StreamRow, "floor_txid" | "floor_event">): Position => ({
  txid: s.floor_txid,
  event: s.floor_event,
});

/** The committed position: the last message acknowledged, or the floor when none was (or the floor passed it). */
export function committedOf(s: Pick<StreamRow, "floor_txid" | "floor_event" | "acked_txid" | "acked_event">): Position {
  const floor = floorOf(s);
  if (s.acked_txid === null) return floor;
  const acked = { txid: s.acked_txid, event: s.acked_event };
  return before(acked, floor) ? floor : acked;
}

/** The stream object of the API: its settings, its secret, and where its consumer stands. */
export async function presentStream(box: SecretBox, s: StreamRow) {
  const secret = await streamSecret(box, s);
  return {
    id: s.id,
    company_id: s.company_id,
    kind: s.kind,
    name: s.name,
    description: s.description,
    enabled_events: s.enabled_events,
    filter: s.filter,
    payload_version: payloadVersionOf(s.payload_version),
    secret,
    cursor: encodeCursor(s.id, secret, committedOf(s)),
    dropped: Number(s.dropped),
    last_read_at: isoUtcOrNull(s.last_read_at),
    inserted_at: isoUtc(s.inserted_at),
    updated_at: isoUtc(s.updated_at),
  };
}

/**
 * Makes a stream, counted in the company's endpoint quota (it takes no delivery concurrency). Under the company's row
 * lock, which the quota takes anyway and which the event log's trigger relies on (sql/0048): the stream starts with the
 * transactions that get their id after it, and every event of those is in its log.
 */
export async function createStream(
  sql: Sql,
  box: SecretBox,
  companyId: string,
  input: StreamSettings & { kind?: "api" | "listen"; name?: string | null },
  opts: { quota: EndpointQuota },
): Promise<StreamRow> {
  const errors = new ErrorBag();
  checkFilter(errors, input.filter);
  errors.throwIfAny(422);
  const id = newId();
  const sealed = await box.seal(newSecret(), sealContext(id));
  return await sql.begin(async (tx) => {
    await checkEndpointQuota(tx, companyId, opts.quota, { maxConcurrency: 0 });
    const [row] = await tx<StreamRow[]>`
      insert into webhook_streams (
        id, company_id, kind, name, description, enabled_events, filter, payload_version, sealed_secret, floor_txid
      ) values (
        ${id}, ${companyId}, ${input.kind ?? "api"}, ${input.name ?? null}, ${input.description ?? null},
        ${input.enabled_events ?? ["*"]}, ${input.filter ?? null}, ${input.payload_version ?? null}, ${sealed},
        pg_snapshot_xmax(pg_current_snapshot())
      ) returning *`;
    return row;
  });
}

/** The `listen` stream of machine `name`, made if there is none (`deno task listen`). */
export async function listenStream(
  sql: Sql,
  box: SecretBox,
  companyId: string,
  input: { name: string; enabled_events?: string[] | null },
  opts: { quota: EndpointQuota },
): Promise<{ stream: StreamRow; created: boolean }> {
  const [existing] = await sql<StreamRow[]>`
    select * from webhook_streams where company_id = ${companyId} and kind = 'listen' and name = ${input.name}`;
  if (existing) return { stream: existing, created: false };
  const stream = await createStream(sql, box, companyId, {
    ...input,
    kind: "listen",
    description: `deno task listen on ${input.name}`,
  }, opts);
  return { stream, created: true };
}

export async function getStream(sql: SqlOrTransaction, companyId: string, id: string): Promise<StreamRow> {
  const [row] = await sql<StreamRow[]>`select * from webhook_streams where company_id = ${companyId} and id = ${id}`;
  if (!row) throw notFound();
  return row;
}

export function listStreams(sql: Sql, companyId: string): Promise<StreamRow[]> {
  return sql<StreamRow[]>`select * from webhook_streams where company_id = ${companyId} order by id`;
}

/** Changes what the stream subscribes to; absent leaves a setting, null resets it (filter, description). */
export async function updateStream(
  sql: Sql,
  companyId: string,
  id: string,
  input: StreamSettings,
): Promise<StreamRow> {
  const errors = new ErrorBag();
  checkFilter(errors, input.filter);
  errors.throwIfAny(422);
  const changes: Record<string, unknown> = {};
  if (input.enabled_events != null) changes.enabled_events = input.enabled_events;
  for (const key of ["filter", "payload_version", "description"] as const) {
    if (input[key] !== undefined) changes[key] = input[key];
  }
  const [row] = Object.keys(changes).length
    ? await sql<StreamRow[]>`
        update webhook_streams set ${sql(changes)}, updated_at = now()
        where company_id = ${companyId} and id = ${id} returning *`
    : await sql<StreamRow[]>`select * from webhook_streams where company_id = ${companyId} and id = ${id}`;
  if (!row) throw notFound();
  return row;
}

export async function deleteStream(sql: Sql, companyId: string, id: string): Promise<void> {
  const deleted = await sql`delete from webhook_streams where company_id = ${companyId} and id = ${id}`;
  if (deleted.count === 0) throw notFound();
}

/**
 * Moves the committed position forward to `cursor` (never back: an older cursor leaves it, as an acknowledgement
 * already given stays given). 422 naming `cursor` when it is not one of this stream's.
 */
export async function acknowledge(
  sql: Sql,
  box: SecretBox,
  companyId: string,
  id: string,
  cursor: string,
): Promise<StreamRow> {
  const stream = await getStream(sql, companyId, id);
  const position = decodeCursor(id, await streamSecret(box, stream), cursor);
  if (!position) {
    const errors = new ErrorBag();
    errors.add("cursor", "is not a cursor of this stream");
    errors.throwIfAny(422);
  }
  const [row] = await sql<StreamRow[]>`
    update webhook_streams set acked_txid = ${position!.txid}::xid8, acked_event = ${position!.event}::uuid,
      updated_at = now()
    where company_id = ${companyId} and id = ${id}
      and (acked_txid is null or (acked_txid, coalesce(acked_event, ${NIL})::uuid)
        < (${position!.txid}::xid8, coalesce(${position!.event}::uuid, ${NIL}::uuid)))
    returning *`;
  return row ?? await getStream(sql, companyId, id);
}

/** The nil UUID: before every event of a transaction. */
export const NIL = "00000000-0000-0000-0000-000000000000";

/**
 * `committedOf` in SQL, for a log row `l` of a stream `s`: the row is after the committed position, which is the last
 * acknowledgement or the floor, whichever is further (the floor passes an old acknowledgement when it moves on).
 */
function afterCommitted(sql: SqlOrTransaction) {
  const floorAhead = sql`(s.acked_txid is null or (s.acked_txid, coalesce(s.acked_event, ${NIL}::uuid))
    < (s.floor_txid, coalesce(s.floor_event, ${NIL}::uuid)))`;
  return sql`(l.txid, l.event_id) > (
    case when ${floorAhead} then s.floor_txid else s.acked_txid end,
    case when ${floorAhead} then coalesce(s.floor_event, ${NIL}::uuid) else coalesce(s.acked_event, ${NIL}::uuid) end)`;
}

/**
 * The upkeep of streams (jobs/index.ts, every sweep): a stream whose unacknowledged backlog passed MAX_STREAM_BACKLOG
 * has its floor moved to keep the newest ones, counting what it dropped; a `listen` stream nobody read for
 * LISTEN_STREAM_IDLE_DAYS goes. One statement each, over every company (a maintenance pass: no tenant's request).
 */
export async function keepStreams(sql: Sql, opts: { cap?: number } = {}): Promise<void> {
  await sql`
    delete from webhook_streams
    where kind = 'listen' and coalesce(last_read_at, inserted_at) < now() - ${LISTEN_STREAM_IDLE_DAYS} * interval '1 day'`;
  await sql`
    with over as (
      select s.id, cut.txid, cut.event_id, (
        select count(*) from stream_log l
        where l.company_id = s.company_id
          and ${afterCommitted(sql)}
          and (l.txid, l.event_id) <= (cut.txid, cut.event_id)
          and ('*' = any(s.enabled_events) or l.type = any(s.enabled_events))
      ) as dropped
      from webhook_streams s cross join lateral (
        select l.txid, l.event_id from stream_log l
        where l.company_id = s.company_id
          and ${afterCommitted(sql)}
          and ('*' = any(s.enabled_events) or l.type = any(s.enabled_events))
        order by l.txid desc, l.event_id desc
        offset ${opts.cap ?? MAX_STREAM_BACKLOG} limit 1
      ) cut
    )
    update webhook_streams s set floor_txid = over.txid, floor_event = over.event_id,
      dropped = s.dropped + over.dropped, updated_at = now()
    from over where s.id = over.id`;
}

/** Log rows deleted per statement by the retention. */
const RETIRE_BATCH = 5_000;

/**
 * The retention of the streams' log (jobs/index.ts, with the webhook history's): its rows of events older than
 * `cutoff` go, and first each stream whose committed position is before the last of them has its floor moved past
 * them, counting the messages of its types it never acknowledged as dropped, so a cursor into them answers 410
 * instead of skipping them silently. A maintenance pass over every company. Answers the rows deleted.
 */
export async function retireStreamLog(sql: Sql, cutoff: Date): Promise<number> {
  await sql`
    with gone as (
      select s.id, last.txid, last.event_id, (
        select count(*) from stream_log l
        where l.company_id = s.company_id and l.event_inserted_at < ${cutoff}
          and ${afterCommitted(sql)}
          and ('*' = any(s.enabled_events) or l.type = any(s.enabled_events))
      ) as dropped
      from webhook_streams s cross join lateral (
        select l.txid, l.event_id from stream_log l
        where l.company_id = s.company_id and l.event_inserted_at < ${cutoff}
          and (l.txid, l.event_id) > (s.floor_txid, coalesce(s.floor_event, ${NIL}::uuid))
        order by l.txid desc, l.event_id desc limit 1
      ) last
    )
    update webhook_streams s set floor_txid = gone.txid, floor_event = gone.event_id,
      dropped = s.dropped + gone.dropped, updated_at = now()
    from gone where s.id = gone.id`;
  let deleted = 0;
  for (;;) {
    const batch = await sql`
      delete from stream_log where ctid = any(array(
        select ctid from stream_log where event_inserted_at < ${cutoff} limit ${RETIRE_BATCH}))`;
    deleted += batch.count;
    if (batch.count < RETIRE_BATCH) return deleted;
  }
}
