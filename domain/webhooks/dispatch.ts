import type postgres from "postgres";
import type { Sql } from "../platform/db.ts";
import { newId } from "../platform/ids.ts";
import { DELIVER_TASK } from "./events.ts";
import type { EndpointRow } from "./endpoints.ts";

/**
 * How deliveries are handed to workers, across every process sharing the database.
 *
 * A `deliver_webhook` job drains one endpoint: it claims a concurrency slot of the endpoint together with the next
 * deliverable record, attempts it, then records the attempt and in the same statement hands its slot to the next
 * due record, until nothing is due (the slot is freed) or every slot is taken. Jobs are wake-up calls, not units of
 * work: emitEvent, a failed attempt (at its next due time), acknowledge and retry each add one; a job that finds
 * nothing to do ends at once, and a queued job whose record another drainer already leased is deleted unrun.
 *
 * Why no wake-up is lost: a job that finds every slot taken ends, trusting the holders. A holder that frees its
 * slot (a committed statement) claims once more afterwards, so that claim starts after the job looked and sees the
 * record the job was woken for. A crashed holder's leases carry its process id (`leased_by`): the recovery sweep
 * frees them as soon as the process is found dead (domain/webhook_recovery.ts), and they run out anyway.
 *
 * - parallel: slots 0..max_concurrency-1; the claim takes the pending record due first, skipping records in flight.
 * - sequential: slot 0 only; the claim takes the oldest pending record (by id, i.e. event order) and only if it is
 *   due, so a failing head holds the rest until it succeeds, is acknowledged or fails for good.
 */

/** Attempts per schedule (docs/webhooks.md, Retries and the schedule). */
export const MAX_ATTEMPTS = 10;

export type ClaimedDelivery = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  slot: number;
  token: string;
};

export type Claim = { endpoint: EndpointRow; delivery: ClaimedDelivery | null };

type ClaimRow = EndpointRow & {
  cancelled_jobs?: string;
  delivery_id: string | null;
  delivery_type: string | null;
  event_data: Record<string, unknown> | null;
  slot: number | null;
};

/**
 * The CTEs `next_parallel`, `head` and `next` choosing the record to lease next, given CTEs `ep` (the endpoint) and
 * `gate` (a row when a slot is held), leaving out `exclude` (the record just attempted, still pending in this
 * statement's snapshot). `headAllowed` is false while that record stays the head of a sequential endpoint.
 */
function nextCtes(sql: Sql, endpointId: string, exclude: string | null, headAllowed: postgres.Fragment) {
  const other = exclude ? sql`and d.id <> ${exclude}` : sql``;
  return sql`
    next_parallel as (
      select d.id from webhook_deliveries d
      where (select delivery_mode from ep) = 'parallel' and exists (select 1 from gate)
        and d.endpoint_id = ${endpointId} and d.status = 'pending' and d.next_attempt_at <= now()
        and (d.leased_until is null or d.leased_until < now()) ${other}
      order by d.next_attempt_at, d.id limit 1
      for update skip locked
    ), head as (
      select d.id, d.next_attempt_at, d.leased_until from webhook_deliveries d
      where (select delivery_mode from ep) = 'sequential' and exists (select 1 from gate) and ${headAllowed}
        and d.endpoint_id = ${endpointId} and d.status = 'pending' ${other}
      order by d.id limit 1
    ), next as (
      select id from next_parallel
      union all
      select id from head where next_attempt_at <= now() and (leased_until is null or leased_until < now())
    )`;
}

/** Leases the chosen record with `token`, and deletes the drain job added for it if it is still queued. */
function takeCte(sql: Sql, token: string, lease: postgres.Fragment, owner: string) {
  return sql`
    taken as (
      update webhook_deliveries d set lease_token = ${token}, leased_until = ${lease}, leased_by = ${owner}
      from next where d.id = next.id
      returning d.id, d.type, d.event_id, d.company_id, d.wake_job_id
    ), cancelled_job as (
      select graphile_worker.complete_jobs(array[wake_job_id]) from taken where wake_job_id is not null
    )`;
}

function toClaim(row: ClaimRow | undefined, token: string): Claim | null {
  if (!row) return null;
  const { delivery_id, delivery_type, event_data, slot, cancelled_jobs: _, ...endpoint } = row;
  return {
    endpoint,
    delivery: delivery_id && slot !== null
      ? { id: delivery_id, type: delivery_type!, data: event_data ?? {}, slot, token }
      : null,
  };
}

/**
 * One statement: re-reads the endpoint (so a rotation or a disable is seen at once), leases a free slot and the next
 * record. Null when the endpoint does not exist; `delivery` null when nothing is due or no slot is free.
 *
 * Delivery bookkeeping commits asynchronously (no wait for the WAL flush): after a database crash the worst case is
 * an attempt made again, which at-least-once delivery allows. Events and their records, written by the producers'
 * transactions, stay synchronous.
 */
export async function claimNext(
  sql: Sql,
  endpointId: string,
  opts: { leaseMs: number; owner: string },
): Promise<Claim | null> {
  const token = newId();
  const lease = sql`now() + ${opts.leaseMs} * interval '1 millisecond'`;
  const [row] = await sql<ClaimRow[]>`
    with ep as (
      select * from webhook_endpoints where id = ${endpointId}
    ), commit_mode as (
      select set_config('synchronous_commit', 'off', true)
    ), gate as (
      select s.slot from webhook_slots s
      where s.endpoint_id = ${endpointId}
        and s.slot < (select case when status <> 'active' then 0 when delivery_mode = 'sequential' then 1
          else max_concurrency end from ep)
        and (s.leased_until is null or s.leased_until < now())
      order by s.slot limit 1
      for update skip locked
    ), ${nextCtes(sql, endpointId, null, sql`true`)}, ${takeCte(sql, token, lease, opts.owner)}, taken_slot as (
      update webhook_slots s set delivery_id = next.id, leased_until = ${lease}, leased_by = ${opts.owner}
      from next, gate where s.endpoint_id = ${endpointId} and s.slot = gate.slot
      returning s.slot
    )
    select ep.*, taken.id as delivery_id, taken.type as delivery_type, e.data as event_data, taken_slot.slot,
      (select count(*) from cancelled_job) as cancelled_jobs
    from ep
    cross join commit_mode
    left join taken on true
    left join taken_slot on true
    left join events e on e.id = taken.event_id and e.company_id = taken.company_id`;
  return toClaim(row, token);
}

export type AttemptOutcome = { ok: boolean; httpStatus: number; responseBody: string; durationMs: number };

export type Recorded = {
  /** The record's status after this attempt; null when its lease had been lost (the attempt is still stored). */
  status: string | null;
  /** The endpoint as it is now, with the next record leased on the same slot, if any was due. */
  next: Claim | null;
};

type RecordItem = { endpointId: string; delivery: ClaimedDelivery; outcome: AttemptOutcome };
/** `owner`: the worker process (worker_processes.id) that leases the next records; a crash frees its leases. */
type RecordOptions = { retrySchedule: number[]; leaseMs: number; owner: string };

/**
 * Stores the attempt, moves the record on (succeeded; failed after the tenth attempt of its schedule; else pending
 * with its next due time and a job to wake the endpoint then), and hands the slot to the next due record or frees
 * it. A record acknowledged or failed (disabled endpoint) meanwhile keeps its status unless this attempt succeeded.
 * A freed slot obliges the caller to claim once more (see the protocol above).
 *
 * Attempts finishing while a previous write is in flight are written together in one statement (natural batching:
 * no waiting when the process is quiet, fewer round trips and commits when it is busy).
 */
export function recordAndClaimNext(
  sql: Sql,
  endpointId: string,
  delivery: ClaimedDelivery,
  outcome: AttemptOutcome,
  opts: RecordOptions,
): Promise<Recorded> {
  const key = `${opts.owner}|${opts.leaseMs}|${opts.retrySchedule.join(",")}`;
  let byOpts = batchers.get(sql);
  if (!byOpts) batchers.set(sql, byOpts = new Map());
  let batcher = byOpts.get(key);
  if (!batcher) byOpts.set(key, batcher = new RecordBatcher(sql, opts));
  return batcher.submit({ endpointId, delivery, outcome });
}

const batchers = new WeakMap<Sql, Map<string, RecordBatcher>>();
/** Statements in flight per process, and attempts per statement. */
const MAX_WRITERS = 2;
const MAX_BATCH = 64;

class RecordBatcher {
  private queue: { item: RecordItem; resolve: (r: Recorded) => void; reject: (e: unknown) => void }[] = [];
  private writers = 0;

  constructor(private sql: Sql, private opts: RecordOptions) {}

  submit(item: RecordItem): Promise<Recorded> {
    const { promise, resolve, reject } = Promise.withResolvers<Recorded>();
    this.queue.push({ item, resolve, reject });
    if (this.writers < MAX_WRITERS) this.write();
    return promise;
  }

  private async write() {
    this.writers++;
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          const results = await recordBatch(this.sql, batch.map((b) => b.item), this.opts);
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

type RecordRow = ClaimRow & { idx: number; delivery_status: string | null; next_token: string | null };

/** One statement for a batch of attempts; results in the order of `items`. */
async function recordBatch(
  sql: Sql,
  items: RecordItem[],
  opts: RecordOptions,
): Promise<Recorded[]> {
  const lease = sql`now() + ${opts.leaseMs} * interval '1 millisecond'`;
  const giveUp = sql`d.status <> 'pending' or d.schedule_attempts + 1 >= ${MAX_ATTEMPTS}`;
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
        ${items.map((i) => String(i.outcome.ok))}::text[]::bool[],
        ${items.map((i) => i.outcome.httpStatus)}::int[],
        ${items.map((i) => i.outcome.responseBody)}::text[],
        ${items.map((i) => Math.round(i.outcome.durationMs))}::int[],
        ${items.map(() => newId())}::uuid[]
      ) as r(idx, endpoint_id, delivery_id, token, slot, ok, http_status, response_body, duration_ms, attempt_id)
    ), attempt as (
      insert into webhook_attempts (id, delivery_id, company_id, attempt_number, http_status, response_body, duration_ms)
      select r.attempt_id, d.id, d.company_id, d.attempts + 1, r.http_status, r.response_body, r.duration_ms
      from r join webhook_deliveries d on d.id = r.delivery_id
    ), updated as (
      update webhook_deliveries d set
        attempts = d.attempts + 1,
        schedule_attempts = d.schedule_attempts + 1,
        status = case when r.ok then 'succeeded' when ${giveUp} then
          case when d.status = 'pending' then 'failed' else d.status end else 'pending' end,
        next_attempt_at = case when r.ok or ${giveUp} then null
          else now() + (${opts.retrySchedule}::float8[])[d.schedule_attempts + 1] * interval '1 second' end,
        lease_token = null,
        leased_until = null,
        leased_by = null,
        updated_at = now()
      from r where d.id = r.delivery_id and d.lease_token = r.token
      returning r.idx, d.status, d.next_attempt_at, d.endpoint_id
    ), retry_job as (
      select graphile_worker.add_job(${DELIVER_TASK}, json_build_object('endpoint_id', endpoint_id),
        run_at := next_attempt_at)
      from updated where next_attempt_at is not null
    ), ep as (
      select * from webhook_endpoints where id in (select endpoint_id from r)
    ), gate as (
      -- The slots that stay taken: their endpoint is still active and the slot within its limit.
      select r.idx, r.endpoint_id, r.slot, r.delivery_id, u.status as new_status, ep.delivery_mode
      from r join updated u on u.idx = r.idx join ep on ep.id = r.endpoint_id
      where ep.status = 'active'
        and r.slot < case when ep.delivery_mode = 'sequential' then 1 else ep.max_concurrency end
    ), wanted as (
      select endpoint_id, count(*)::int as k from gate where delivery_mode = 'parallel' group by endpoint_id
    ), next_parallel as (
      select w.endpoint_id, c.id, row_number() over (partition by w.endpoint_id order by c.next_attempt_at, c.id) as rn
      from wanted w cross join lateral (
        select d.id, d.next_attempt_at from webhook_deliveries d
        where d.endpoint_id = w.endpoint_id and d.status = 'pending' and d.next_attempt_at <= now()
          and (d.leased_until is null or d.leased_until < now())
        order by d.next_attempt_at, d.id limit w.k
        for update skip locked
      ) c
    ), next_sequential as (
      -- The head of a sequential endpoint, unless the record just attempted is still pending (and so still the head).
      select g.endpoint_id, h.id, 1::bigint as rn
      from gate g cross join lateral (
        select d.id, d.next_attempt_at, d.leased_until from webhook_deliveries d
        where d.endpoint_id = g.endpoint_id and d.status = 'pending' and d.id <> g.delivery_id
        order by d.id limit 1
      ) h
      where g.delivery_mode = 'sequential' and g.new_status <> 'pending'
        and h.next_attempt_at <= now() and (h.leased_until is null or h.leased_until < now())
    ), paired as (
      select g.idx, n.id as next_id
      from (select idx, endpoint_id, row_number() over (partition by endpoint_id order by slot) as rn from gate) g
      join (select * from next_parallel union all select * from next_sequential) n
        on n.endpoint_id = g.endpoint_id and n.rn = g.rn
    ), taken as (
      update webhook_deliveries d set lease_token = gen_random_uuid(), leased_until = ${lease}, leased_by = ${opts.owner}
      from paired p where d.id = p.next_id
      returning p.idx, d.id, d.type, d.event_id, d.company_id, d.wake_job_id, d.lease_token
    ), cancelled_job as (
      select graphile_worker.complete_jobs(array_agg(wake_job_id)) from taken where wake_job_id is not null
    ), moved_slot as (
      update webhook_slots s set
        delivery_id = p.next_id,
        leased_until = case when p.next_id is not null then ${lease} end,
        leased_by = case when p.next_id is not null then ${opts.owner}::uuid end
      from r left join paired p on p.idx = r.idx
      where s.endpoint_id = r.endpoint_id and s.slot = r.slot and s.delivery_id = r.delivery_id
    )
    select ep.*, r.idx, u.status as delivery_status, t.id as delivery_id, t.type as delivery_type,
      t.lease_token as next_token, e.data as event_data, r.slot,
      (select count(*) from retry_job) as retry_jobs, (select count(*) from cancelled_job) as cancelled_jobs
    from r
    cross join commit_mode
    left join updated u on u.idx = r.idx
    left join ep on ep.id = r.endpoint_id
    left join taken t on t.idx = r.idx
    left join events e on e.id = t.event_id and e.company_id = t.company_id`;
  const results: Recorded[] = items.map(() => ({ status: null, next: null }));
  for (const row of rows) {
    const { idx, delivery_status, next_token, retry_jobs: _, ...claimRow } = row as RecordRow & { retry_jobs: string };
    results[idx] = {
      status: delivery_status,
      next: claimRow.id ? toClaim(claimRow, next_token ?? "") : null,
    };
  }
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
