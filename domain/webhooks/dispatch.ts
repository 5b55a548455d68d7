import type postgres from "postgres";
import { type Sql, type Tx, whileUnreachable } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import type { DisabledReason, EndpointRow } from "./endpoints.ts";
import { eventData } from "./event_data.ts";
import { addDrainJobs, drainJobKey, RETRY_LANE } from "./queue.ts";
import type { SendResult } from "./sender.ts";

/**
 * How deliveries are handed to workers, across every process sharing the database.
 *
 * A drain job (domain/webhooks/queue.ts) runs the drain loop (domain/webhooks/drain.ts) for one endpoint: it claims
 * a concurrency slot of the endpoint together with the next deliverable record, attempts it, then records the
 * attempt and in the same statement hands its slot to the next due record, until nothing is due (the slot is
 * freed) or every slot is taken. emitEvent, acknowledge and retry add a drain job on one of the endpoint's lanes, a
 * first claim that leaves more due wakes the next lane, and the endpoint's retry job waits for its next due record
 * (domain/webhooks/queue.ts): the queue holds at most one waiting job per lane, whatever the backlog.
 *
 * Why no wake-up is lost: a job that finds every slot taken ends, trusting the holders. A holder that frees its
 * slot (a committed statement) claims once more afterwards, so that claim starts after the job looked and sees the
 * record the job was woken for. A crashed holder's leases carry its process id (`leased_by`): the recovery sweep
 * frees them as soon as the process is found dead (domain/webhooks/recovery.ts), and they run out anyway.
 *
 * Which record is next and whether it may start now is decided in one place, `fillSlots`, for both the first
 * claim and the hand-over after an attempt.
 */

/** Attempts per schedule (docs/webhooks.md, Retries and the schedule). */
export const MAX_ATTEMPTS = 10;

/** Slack beyond the request timeout before a lease (slot and record) counts as abandoned by a crashed worker. */
const LEASE_SLACK_MS = 30_000;

/** How long a drainer holds a slot and its record for one attempt made with this request timeout. */
export function leaseMsFor(timeoutMs: number): number {
  return timeoutMs + LEASE_SLACK_MS;
}

/** Who leases, for how long: `owner` is the worker process (worker_processes.id), whose crash frees its leases. */
export type Lease = { leaseMs: number; owner: string };

/** How many slots of the endpoint row `ep` may be in use: none once it is disabled, one when it is sequential. */
export function slotLimit(sql: Tx, ep: string): postgres.Fragment {
  const e = sql(ep);
  return sql`case when ${e}.status <> 'active' then 0 when ${e}.delivery_mode = 'sequential' then 1
    else ${e}.max_concurrency end`;
}

/** A slot or a record may be leased when nobody holds it, or its holder let the lease run out (a crash). */
export function leaseFree(sql: Tx, row: string): postgres.Fragment {
  const r = sql(row);
  return sql`(${r}.leased_until is null or ${r}.leased_until < now())`;
}

/**
 * The CTEs that fill slots, given a CTE `gate` (idx, endpoint_id, slot, delivery_mode, attempted, still_pending):
 * one row per slot held and to be filled, `attempted` being the record the slot just carried (null on a first
 * claim; still pending in this statement's snapshot) and `still_pending` whether it stays pending after this
 * attempt. They end in `paired` (idx, next_id) and `taken` (idx, id, type, event_id, company_id, lease_token).
 *
 * - parallel: the pending records due first that nobody holds, one per slot, skipping those another drainer is
 *   locking right now;
 * - sequential: the oldest pending record (by id, i.e. event order), and only when it is due and nobody holds it,
 *   so a failing head holds the rest until it succeeds, is acknowledged or fails for good.
 */
function fillSlots(sql: Tx, lease: postgres.Fragment, owner: string): postgres.Fragment {
  return sql`
    wanted as (
      select endpoint_id, delivery_mode, count(*)::int as k, bool_or(still_pending) as head_held,
        coalesce(array_agg(attempted) filter (where attempted is not null), '{}') as attempted
      from gate group by endpoint_id, delivery_mode
    ), next as (
      select w.endpoint_id, n.id, n.rn from wanted w cross join lateral (
        select c.id, row_number() over (order by c.next_attempt_at, c.id) as rn from (
          select d.id, d.next_attempt_at from webhook_deliveries d
          where w.delivery_mode = 'parallel' and d.endpoint_id = w.endpoint_id and d.status = 'pending'
            and d.next_attempt_at <= now() and ${leaseFree(sql, "d")} and d.id <> all(w.attempted)
          order by d.next_attempt_at, d.id limit w.k
          for update skip locked
        ) c
        union all
        select h.id, 1 from (
          select d.id, d.next_attempt_at, d.leased_until from webhook_deliveries d
          where w.delivery_mode = 'sequential' and not w.head_held
            and d.endpoint_id = w.endpoint_id and d.status = 'pending' and d.id <> all(w.attempted)
          order by d.id limit 1
        ) h
        where h.next_attempt_at <= now() and ${leaseFree(sql, "h")}
      ) n
    ), paired as (
      select g.idx, n.id as next_id
      from (select idx, endpoint_id, row_number() over (partition by endpoint_id order by slot) as rn from gate) g
      join next n on n.endpoint_id = g.endpoint_id and n.rn = g.rn
    ), taken as (
      update webhook_deliveries d set lease_token = gen_random_uuid(), leased_until = ${lease}, leased_by = ${owner}
      from paired p where d.id = p.next_id
      returning p.idx, d.id, d.type, d.event_id, d.company_id, d.lease_token, d.inserted_at
    )`;
}

/** A lease of `ms` milliseconds from now, as SQL. */
const leaseUntil = (sql: Tx, ms: number) => sql`now() + ${ms} * interval '1 millisecond'`;

export type ClaimedDelivery = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  slot: number;
  token: string;
};

export type Claim = { endpoint: EndpointRow; delivery: ClaimedDelivery | null };

type ClaimRow = EndpointRow & {
  spread_jobs?: string;
  delivery_id: string | null;
  delivery_type: string | null;
  /** Where the record's event is (read by a statement of its own: domain/webhooks/event_data.ts). */
  event_id: string | null;
  event_inserted_at: Date | null;
  slot: number | null;
  lease_token: string | null;
};

/** The columns of a claimed record, from the `taken` of `fillSlots` as `t`. */
const claimedColumns = (sql: Tx) =>
  sql`t.id as delivery_id, t.type as delivery_type, t.event_id, t.inserted_at as event_inserted_at, t.lease_token`;

/**
 * The claims of `rows` with their events' data, read in one statement after the claiming one. The claims are made
 * by then: a read that fails is made again while the database is away, up to `until`, rather than claiming twice.
 */
async function toClaims(sql: Sql, rows: ClaimRow[], until: number): Promise<Claim[]> {
  const keys = rows.flatMap((r) =>
    r.delivery_id && r.event_id && r.event_inserted_at
      ? [{ event_id: r.event_id, company_id: r.company_id, inserted_at: r.event_inserted_at }]
      : []
  );
  const data = keys.length ? await whileUnreachable(() => eventData(sql, keys), until) : new Map();
  return rows.map((row) => {
    const {
      delivery_id,
      delivery_type,
      event_id,
      event_inserted_at: _at,
      slot,
      lease_token,
      spread_jobs: _,
      ...endpoint
    } = row;
    return {
      endpoint,
      delivery: delivery_id && slot !== null && lease_token
        ? { id: delivery_id, type: delivery_type!, data: data.get(event_id) ?? {}, slot, token: lease_token }
        : null,
    };
  });
}

/**
 * One statement: re-reads the endpoint (so a rotation or a disable is seen at once), leases a free slot and the next
 * record. Null when the endpoint does not exist; `delivery` null when nothing is due or no slot is free.
 *
 * Delivery bookkeeping commits asynchronously (no wait for the WAL flush): after a database crash the worst case is
 * an attempt made again, which at-least-once delivery allows. Events and their records, written by the producers'
 * transactions, stay synchronous.
 */
export async function claimNext(sql: Sql, endpointId: string, opts: Lease): Promise<Claim | null> {
  const lease = leaseUntil(sql, opts.leaseMs);
  const [row] = await sql<ClaimRow[]>`
    with ep as (
      select * from webhook_endpoints where id = ${endpointId}
    ), commit_mode as (
      select set_config('synchronous_commit', 'off', true)
    ), free_slot as (
      select s.slot from webhook_slots s
      where s.endpoint_id = ${endpointId} and s.slot < (select ${slotLimit(sql, "ep")} from ep)
        and ${leaseFree(sql, "s")}
      order by s.slot limit 1
      for update skip locked
    ), gate as (
      select 0 as idx, ep.id as endpoint_id, f.slot, ep.delivery_mode, null::uuid as attempted, false as still_pending
      from ep cross join free_slot f
    ), ${fillSlots(sql, lease, opts.owner)}, taken_slot as (
      update webhook_slots s set delivery_id = p.next_id, leased_until = ${lease}, leased_by = ${opts.owner}
      from paired p join gate g on g.idx = p.idx
      where s.endpoint_id = g.endpoint_id and s.slot = g.slot
      returning s.slot
    ), next_lane as (
      -- More is due than this slot carries, and the endpoint has slots beyond it: wake the next lane, so a backlog
      -- fans out over the slots one job at a time, whoever woke the endpoint.
      select ${endpointId}::uuid, (ts.slot + 1)::text, null::timestamptz
      from taken_slot ts cross join ep
      where ts.slot + 1 < ${slotLimit(sql, "ep")} and exists (
        select 1 from webhook_deliveries d
        where d.endpoint_id = ${endpointId} and d.status = 'pending' and d.next_attempt_at <= now()
          and ${leaseFree(sql, "d")} and d.id not in (select id from taken)
      )
    ), spread as (
      select count(*) from ${addDrainJobs(sql, sql`select * from next_lane`)}
    )
    select ep.*, ${claimedColumns(sql)}, taken_slot.slot, (select count(*) from spread) as spread_jobs
    from ep
    cross join commit_mode
    left join taken t on true
    left join taken_slot on true`;
  return row ? (await toClaims(sql, [row], Date.now() + opts.leaseMs / 2))[0] : null;
}

export type Recorded = {
  /** The record's status after this attempt; null when its lease had been lost (the attempt is still stored). */
  status: string | null;
  /** The endpoint as it is now, with the next record leased on the same slot, if any was due. */
  next: Claim | null;
  /** When the record is due again; null once it is no longer pending (or its lease had been lost). */
  nextAttemptAt: Date | null;
  /** Set when this attempt disabled the endpoint: a 410 answer, or the last of days of failures. */
  disabled: DisabledReason | null;
  /** This attempt's number in the life of the record; null when its lease had been lost. */
  attempt: number | null;
};

type RecordItem = { endpointId: string; delivery: ClaimedDelivery; result: SendResult; attemptId: string };
type RecordOptions = Lease & { retrySchedule: number[]; disableAfterSeconds: number };

/**
 * Stores the attempt, moves the record on (succeeded; failed after the tenth attempt of its schedule; else pending
 * with its next due time and a job to wake the endpoint then), and hands the slot to the next due record or frees
 * it. The next due time is the schedule's, or later when a 429 or 503 asked for it (Retry-After).
 *
 * It also keeps the endpoint's health (docs/webhooks.md, When an endpoint is disabled): a 410 disables the endpoint
 * at once (`gone`), and a failure when every attempt has failed for `disableAfterSeconds` disables it (`failing`);
 * either fails the record and leases nothing more, and the drain loop's next claim fails what is still pending.
 * `failing_since` is written only when it changes, so a healthy endpoint's row is not updated per attempt. A record acknowledged or failed (disabled endpoint) meanwhile keeps its status unless this attempt succeeded.
 * A freed slot obliges the caller to claim once more (see the protocol above).
 *
 * Attempts finishing while a previous write is in flight are written together in one statement (natural batching:
 * no waiting when the process is quiet, fewer round trips and commits when it is busy).
 */
export function recordAndClaimNext(
  sql: Sql,
  endpointId: string,
  delivery: ClaimedDelivery,
  result: SendResult,
  opts: RecordOptions,
): Promise<Recorded> {
  const key = `${opts.owner}|${opts.leaseMs}|${opts.retrySchedule.join(",")}|${opts.disableAfterSeconds}`;
  let byOpts = batchers.get(sql);
  if (!byOpts) batchers.set(sql, byOpts = new Map());
  let batcher = byOpts.get(key);
  if (!batcher) byOpts.set(key, batcher = new RecordBatcher(sql, opts));
  return batcher.submit({ endpointId, delivery, result, attemptId: newId() });
}

const batchers = new WeakMap<Sql, Map<string, RecordBatcher>>();
/** Statements in flight per process, and attempts per statement. */
const MAX_WRITERS = 2;
const MAX_BATCH = 64;

type Waiting = { item: RecordItem; resolve: (r: Recorded) => void; reject: (e: unknown) => void };

/**
 * The attempts waiting to be written, queued per endpoint and taken round-robin: a statement carries one attempt of
 * each waiting endpoint before a second of any, so a sequential endpoint's one attempt is in the next statement
 * rather than behind a parallel endpoint's backlog (docs/webhooks.md, Fair delivery under backlog).
 */
class RecordBatcher {
  private waiting = new Map<string, Waiting[]>();
  private writers = 0;

  constructor(private sql: Sql, private opts: RecordOptions) {}

  submit(item: RecordItem): Promise<Recorded> {
    const { promise, resolve, reject } = Promise.withResolvers<Recorded>();
    const queue = this.waiting.get(item.endpointId);
    if (queue) queue.push({ item, resolve, reject });
    else this.waiting.set(item.endpointId, [{ item, resolve, reject }]);
    if (this.writers < MAX_WRITERS) this.write();
    return promise;
  }

  /** Up to MAX_BATCH attempts, one per endpoint in turn; an endpoint served goes to the back of the line. */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    while (batch.length < MAX_BATCH && this.waiting.size) {
      for (const [endpointId, queue] of this.waiting) {
        batch.push(queue.shift()!);
        this.waiting.delete(endpointId);
        if (queue.length) this.waiting.set(endpointId, queue);
        if (batch.length === MAX_BATCH) break;
      }
    }
    return batch;
  }

  private async write() {
    this.writers++;
    try {
      for (let batch = this.take(); batch.length; batch = this.take()) {
        try {
          // An attempt made is stored even when the database went away meanwhile: the statement is made again
          // until it is back, within the lease (after it, another process may already be making the attempt again).
          let tries = 0;
          const items = batch.map((b) => b.item);
          const until = Date.now() + LEASE_SLACK_MS * 0.8;
          const rows = await whileUnreachable(() => recordBatch(this.sql, items, this.opts, tries++ > 0), until);
          const results = await toRecorded(this.sql, items, rows, until);
          batch.forEach((b, i) => b.resolve(results[i]));
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.writers--;
    }
  }
}

type RecordRow = ClaimRow & {
  idx: number;
  delivery_status: string | null;
  retry_jobs: string;
  delivery_next_attempt_at: Date | null;
  endpoint_disabled: DisabledReason | null;
  attempt_number: number | null;
};

/** One statement for a batch of attempts; results in the order of `items`. */
async function recordBatch(
  sql: Sql,
  items: RecordItem[],
  opts: RecordOptions,
  again = false,
): Promise<RecordRow[]> {
  const lease = leaseUntil(sql, opts.leaseMs);
  const giveUp = sql`d.status <> 'pending' or d.schedule_attempts + 1 >= ${MAX_ATTEMPTS} or v.disable is not null`;
  // The endpoint's one retry job waits for its earliest record due later (this batch's failures included).
  const retries = addDrainJobs(sql, sql`select endpoint_id, ${RETRY_LANE}, run_at from next_retry_due`, "retry");
  const rows = await sql<RecordRow[]>`
    with commit_mode as (
      select set_config('synchronous_commit', 'off', true)
    ), r as (
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
        ${items.map((i) => i.result.retryAfterSeconds ?? 0)}::float8[]
      ) as r(idx, endpoint_id, delivery_id, token, slot, ok, http_status, response_body, duration_ms, attempt_id,
        response_headers, retry_after)
    ), attempt as (
      insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms,
        response_headers)
      select r.attempt_id, d.id, d.company_id, d.attempts + 1, r.http_status, r.response_body, r.duration_ms,
        r.response_headers::jsonb
      from r join webhook_deliveries d on d.id = r.delivery_id
      ${
    again
      // made again after a lost connection: the first may have committed before the answer was lost
      ? sql`where not exists (select 1 from webhook_attempts a where a.delivery_id = r.delivery_id and a.id = r.attempt_id)`
      : sql``
  }
    ), verdict as (
      -- Per endpoint: whether these attempts disable it, as of this statement's snapshot.
      select a.endpoint_id, a.any_ok, e.failing_since,
        case when e.status <> 'active' then null when a.any_gone then 'gone'
          when not a.any_ok and e.failing_since <= now() - ${opts.disableAfterSeconds} * interval '1 second'
          then 'failing' end as disable
      from (
        select endpoint_id, bool_or(ok) as any_ok, bool_or(http_status = 410) as any_gone from r group by endpoint_id
      ) a join webhook_endpoints e on e.id = a.endpoint_id
    ), health as (
      update webhook_endpoints e set
        failing_since = case when v.any_ok or v.disable is not null then null else coalesce(e.failing_since, now()) end,
        status = case when v.disable is not null then 'disabled' else e.status end,
        disabled_reason = coalesce(v.disable, e.disabled_reason),
        disabled_at = case when v.disable is not null then now() else e.disabled_at end,
        updated_at = case when v.disable is not null then now() else e.updated_at end
      from verdict v
      where e.id = v.endpoint_id and e.status = 'active'
        and (v.disable is not null or (v.any_ok and e.failing_since is not null)
          or (not v.any_ok and e.failing_since is null))
      returning e.id, v.disable
    ), updated as (
      update webhook_deliveries d set
        attempts = d.attempts + 1,
        schedule_attempts = d.schedule_attempts + 1,
        status = case when r.ok then 'succeeded' when ${giveUp} then
          case when d.status = 'pending' then 'failed' else d.status end else 'pending' end,
        next_attempt_at = case when r.ok or ${giveUp} then null
          else now() + greatest((${opts.retrySchedule}::float8[])[d.schedule_attempts + 1], r.retry_after)
            * interval '1 second' end,
        lease_token = null,
        leased_until = null,
        leased_by = null,
        updated_at = now()
      from r join verdict v on v.endpoint_id = r.endpoint_id
      where d.id = r.delivery_id and d.lease_token = r.token
      returning r.idx, d.status, d.next_attempt_at, d.endpoint_id, d.attempts
    ), next_retry as (
      select b.endpoint_id, least(
        (select min(u.next_attempt_at) from updated u where u.endpoint_id = b.endpoint_id),
        (select min(d.next_attempt_at) from webhook_deliveries d
          where d.endpoint_id = b.endpoint_id and d.status = 'pending' and d.next_attempt_at > now()
            and d.id <> all(b.delivery_ids))
      ) as run_at
      from (select endpoint_id, array_agg(delivery_id) as delivery_ids from r group by endpoint_id) b
    ), next_retry_due as (
      -- Unless that job already waits for that time: a healthy stretch of a backlog does not rewrite it per batch.
      select n.* from next_retry n
      where n.run_at is not null and not exists (
        select 1 from graphile_worker.jobs j
        where j.key = ${drainJobKey(sql, sql`n.endpoint_id`, sql`${RETRY_LANE}`)} and j.run_at = n.run_at
          and j.locked_at is null
      )
    ), retry_job as (
      select count(*) from ${retries}
    ), ep as (
      select * from webhook_endpoints where id in (select endpoint_id from r)
    ), gate as (
      -- The slots that stay taken: their attempt was recorded, their endpoint still allows them.
      select r.idx, r.endpoint_id, r.slot, ep.delivery_mode, r.delivery_id as attempted,
        u.status = 'pending' as still_pending
      from r join updated u on u.idx = r.idx join ep on ep.id = r.endpoint_id
      where r.slot < ${slotLimit(sql, "ep")} and r.endpoint_id not in (select id from health where disable is not null)
    ), ${fillSlots(sql, lease, opts.owner)}, moved_slot as (
      update webhook_slots s set
        delivery_id = p.next_id,
        leased_until = case when p.next_id is not null then ${lease} end,
        leased_by = case when p.next_id is not null then ${opts.owner}::uuid end
      from r left join paired p on p.idx = r.idx
      where s.endpoint_id = r.endpoint_id and s.slot = r.slot and s.delivery_id = r.delivery_id
    )
    select ep.*, r.idx, u.status as delivery_status, u.next_attempt_at as delivery_next_attempt_at,
      u.attempts as attempt_number,
      h.disable as endpoint_disabled, ${claimedColumns(sql)}, r.slot,
      (select count(*) from retry_job) as retry_jobs
    from r
    cross join commit_mode
    left join updated u on u.idx = r.idx
    left join ep on ep.id = r.endpoint_id
    left join health h on h.id = r.endpoint_id and h.disable is not null
    left join taken t on t.idx = r.idx`;
  return rows;
}

/**
 * What each attempt of a batch came to, from the rows of its statement, with the events of the records handed over
 * (read after it: see `toClaims`).
 */
async function toRecorded(sql: Sql, items: RecordItem[], rows: RecordRow[], until: number): Promise<Recorded[]> {
  const results: Recorded[] = items.map(() => ({
    status: null,
    next: null,
    nextAttemptAt: null,
    disabled: null,
    attempt: null,
  }));
  const handedOver: { idx: number; claim: ClaimRow }[] = [];
  for (const row of rows) {
    const {
      idx,
      delivery_status,
      retry_jobs: _,
      delivery_next_attempt_at,
      endpoint_disabled,
      attempt_number,
      ...claim
    } = row;
    results[idx] = {
      status: delivery_status,
      next: null,
      nextAttemptAt: delivery_next_attempt_at,
      disabled: endpoint_disabled,
      attempt: attempt_number,
    };
    if (claim.id) handedOver.push({ idx, claim }); // the endpoint is still there
  }
  const claims = await toClaims(sql, handedOver.map((h) => h.claim), until);
  handedOver.forEach(({ idx }, i) => results[idx].next = claims[i]);
  return results;
}

/** Frees a slot without recording an attempt (the attempt could not start, e.g. during shutdown). */
export async function releaseClaim(sql: Sql, endpointId: string, delivery: ClaimedDelivery) {
  await sql`
    with freed as (
      update webhook_slots set delivery_id = null, leased_until = null, leased_by = null
      where endpoint_id = ${endpointId} and slot = ${delivery.slot} and delivery_id = ${delivery.id}
    )
    update webhook_deliveries set lease_token = null, leased_until = null, leased_by = null
    where id = ${delivery.id} and lease_token = ${delivery.token}`;
}
