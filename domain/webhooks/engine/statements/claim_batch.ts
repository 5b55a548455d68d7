/**
 * The claim of a batched endpoint (docs/webhooks.md, "Batches"): a slot and a whole batch of records, formed here at
 * its first attempt and kept across its retries. Apart from claim.ts, whose one-record statement endpoints without
 * `batch` keep unchanged: the drain steps branch on the endpoint's row (jobs/drain_webhooks.ts).
 */

import { type Sql, type SqlOrTransaction, whileUnreachable } from "../../../infra/db.ts";
import type { EndpointRow } from "../../endpoints/endpoint_row.ts";
import { eventRows } from "../../outbox/event_data.ts";
import { wakeEndpoints } from "../../outbox/wake.ts";
import type { Claim, ClaimedDelivery } from "./claim_data.ts";
import type { Lease } from "./lease.ts";

type Candidate = {
  id: string;
  batch_id: string | null;
  ready: boolean;
  /** In how many ms this record has waited `max_wait_ms` (0 or less: it has). */
  wait_ms: number;
};

type LeasedRow = {
  id: string;
  type: string;
  event_id: string;
  company_id: string;
  inserted_at: Date;
  schedule_attempts: number;
};

/**
 * Leases a free slot of a batched endpoint and a batch to carry, in one transaction (a batched endpoint's request
 * carries many records, so its claim may take a few statements): a batch due again (its records, kept by
 * `batch_id`, as they were at its first attempt) or a new one of the records due, at most `max_events`, in the order
 * of the endpoint's mode. A new batch goes once it is full or its oldest record has waited `max_wait_ms`; before,
 * `batchWaitMs` says when, and nothing is leased. A sequential endpoint's batch is the oldest pending records, held
 * by a head not due, leased or in another batch as a single record is; a parallel endpoint's, the records due first.
 * Null when the endpoint does not exist.
 */
export async function claimBatch(
  sql: Sql,
  endpointId: string,
  opts: Lease & { batchId: string },
): Promise<Claim | null> {
  const claimed = await sql.begin(async (tx) => {
    const [endpoint] = await tx<EndpointRow[]>`select * from webhook_endpoints where id = ${endpointId}`;
    if (!endpoint) return null;
    const batch = endpoint.batch;
    if (endpoint.status !== "active" || !batch) return { endpoint, rows: [], slot: null, token: null, batchId: null };
    const nothing = (batchWaitMs: number | null = null) => ({
      endpoint,
      rows: [],
      slot: null,
      token: null,
      batchId: null,
      batchWaitMs,
    });
    // a receiver's 429 with Retry-After holds the whole endpoint (decisions.ts, `endpointHoldSeconds`), batched too;
    // a batched endpoint has no rate_limit, so its throttle row is only ever such a hold
    const [held] = await tx<{ wait_ms: number }[]>`
      select ceil(extract(epoch from next_send_at - now()) * 1000)::float8 as wait_ms
      from webhook_endpoint_throttles where endpoint_id = ${endpointId} and next_send_at > now()`;
    if (held) return nothing(held.wait_ms);
    const [free] = await tx<{ slot: number; slots: number }[]>`
      select s.slot, endpoint_slot_base(e.transport, e.batch)
          + endpoint_slot_limit(e.status, e.delivery_mode, e.max_concurrency) as slots
      from webhook_slots s join webhook_endpoints e on e.id = s.endpoint_id
      where s.endpoint_id = ${endpointId} and s.slot >= endpoint_slot_base(e.transport, e.batch)
        and s.slot < endpoint_slot_base(e.transport, e.batch)
          + endpoint_slot_limit(e.status, e.delivery_mode, e.max_concurrency)
        and lease_is_free(s.leased_until)
      order by s.slot limit 1
      for update of s skip locked`;
    if (!free) return nothing();
    const max = batch.max_events;
    // float8: a record deferred by its filter is due in 9999 (filter_deferrals.ts), out of an int's range
    const waited = tx`ceil(extract(epoch from d.next_attempt_at - now()) * 1000 + ${batch.max_wait_ms})::float8`;
    const candidates = endpoint.delivery_mode === "sequential"
      ? await tx<Candidate[]>`
          select d.id, d.batch_id, d.next_attempt_at <= now() and lease_is_free(d.leased_until) as ready,
            ${waited} as wait_ms
          from webhook_deliveries d
          where d.endpoint_id = ${endpointId} and d.status = 'pending'
          order by d.id limit ${max}`
      : await tx<Candidate[]>`
          select d.id, d.batch_id, true as ready, ${waited} as wait_ms
          from webhook_deliveries d
          where d.endpoint_id = ${endpointId} and d.status = 'pending' and d.next_attempt_at <= now()
            and lease_is_free(d.leased_until)
          order by d.next_attempt_at, d.id limit ${max + 1}
          for update skip locked`;
    const head = candidates[0];
    if (!head || !head.ready) return nothing();
    let ids: string[];
    let batchId: string;
    let fresh = false;
    if (head.batch_id) {
      // a batch due again: its records as they were at its first attempt, those still pending
      batchId = head.batch_id;
      const [kept] = await tx<{ delivery_ids: string[] }[]>`
        select delivery_ids from webhook_batches where id = ${batchId}`;
      ids = kept?.delivery_ids ?? [head.id];
    } else {
      const leading = candidates.slice(0, max);
      const stop = leading.findIndex((c) => c.batch_id !== null || !c.ready);
      const taken = stop < 0 ? leading : leading.slice(0, stop);
      if (taken.length < max && head.wait_ms > 0) return nothing(head.wait_ms);
      ids = taken.map((c) => c.id);
      batchId = opts.batchId;
      fresh = true;
    }
    const token = crypto.randomUUID();
    const rows = await tx<LeasedRow[]>`
      update webhook_deliveries d set batch_id = ${batchId}, lease_token = ${token},
        leased_until = lease_until(${opts.leaseMs}), leased_by = ${opts.owner}
      where d.id = any(${ids}::uuid[]) and d.endpoint_id = ${endpointId} and d.status = 'pending'
        and lease_is_free(d.leased_until) and (d.batch_id is null or d.batch_id = ${batchId})
      returning d.id, d.type, d.event_id, d.company_id, d.inserted_at, d.schedule_attempts`;
    if (rows.length === 0) return nothing();
    rows.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    if (fresh) {
      await tx`
        insert into webhook_batches (id, company_id, endpoint_id, delivery_ids)
        values (${batchId}, ${endpoint.company_id}, ${endpointId}, ${rows.map((r) => r.id)}::uuid[])`;
    }
    await tx`
      update webhook_slots set delivery_id = ${rows[0].id}, leased_until = lease_until(${opts.leaseMs}),
        leased_by = ${opts.owner}
      where endpoint_id = ${endpointId} and slot = ${free.slot}`;
    // more due than this batch: another drain loop takes the next slot (claim.ts fans out the same way)
    if (endpoint.delivery_mode === "parallel" && candidates.length > rows.length && free.slot + 1 < free.slots) {
      await wakeEndpoints(tx, [endpointId]);
    }
    return { endpoint, rows, slot: free.slot, token, batchId, fresh };
  });
  if (!claimed) return null;
  const { endpoint, rows, slot, token, batchId } = claimed;
  const fresh = "fresh" in claimed && claimed.fresh === true;
  if (!rows.length || slot === null || !token || !batchId) {
    return { endpoint, delivery: null, batchWaitMs: "batchWaitMs" in claimed ? claimed.batchWaitMs : null };
  }
  const events = await whileUnreachable(
    () =>
      eventRows(sql, rows.map((r) => ({ event_id: r.event_id, company_id: r.company_id, inserted_at: r.inserted_at }))),
    Date.now() + opts.leaseMs / 2,
  );
  const records = rows.map((r) => ({
    id: r.id,
    type: r.type,
    data: events.get(r.event_id)?.data ?? {},
    traceparent: events.get(r.event_id)?.traceparent ?? null,
    occurredAt: r.inserted_at,
    scheduleAttempts: r.schedule_attempts,
  }));
  const delivery: ClaimedDelivery = {
    ...records[0],
    slot,
    token,
    batch: { id: batchId, records, fresh },
  };
  return { endpoint, delivery };
}

/**
 * Takes the records of a new batch from `keep` on out of it (its array would pass the size bound: batches.ts), before
 * its first attempt: they go back to the queue as records due, for the next batch, and the batch's list keeps the rest.
 */
export async function shortenBatch(
  sql: SqlOrTransaction,
  delivery: ClaimedDelivery,
  keep: number,
): Promise<void> {
  const batch = delivery.batch!;
  const dropped = batch.records.slice(keep).map((r) => r.id);
  if (!dropped.length) return;
  await sql`
    with kept as (
      update webhook_batches set delivery_ids = ${batch.records.slice(0, keep).map((r) => r.id)}::uuid[]
      where id = ${batch.id}
    )
    update webhook_deliveries set batch_id = null, lease_token = null, leased_until = null, leased_by = null
    where id = any(${dropped}::uuid[]) and lease_token = ${delivery.token}`;
}
