/**
 * What a claim hands the drain loop: the leased record with its event's data, read by a statement after the claiming
 * one (event_data.ts says why events are read apart). Shared by the first claim and the recorder's hand-over.
 */

import { type Sql, whileUnreachable } from "../../../infra/db.ts";
import type { EndpointRow } from "../../endpoints/endpoint_row.ts";
import { eventRows } from "../../outbox/event_data.ts";
import type { ClaimRow } from "./fill_slots.ts";

/** A record leased with one slot of its endpoint, with its event's data: what one attempt sends. */
export type ClaimedDelivery = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  slot: number;
  token: string;
  /** The trace of the request that emitted the event, which the attempt continues (null when none was traced). */
  traceparent?: string | null;
  /** When its event happened (the record's instant is its event's): the body's `timestamp` (payload_versions.ts). */
  occurredAt?: Date | null;
  /**
   * Attempts of its schedule made before this one (the record's `schedule_attempts` when claimed): whether this one
   * is the last, so whether its failure may exhaust the record (`delivery.exhausted`). Absent: unknown.
   */
  scheduleAttempts?: number;
  /**
   * A batch (docs/webhooks.md, "Batches"): the records it carries, in event order, the first being the one above;
   * every one leased with `token` and the slot. Absent for a record sent alone.
   */
  batch?: { id: string; records: BatchedRecord[]; /** Formed by this claim: its first attempt. */ fresh?: boolean };
};

/** One record of a batch, with its event's data. */
export type BatchedRecord = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  traceparent?: string | null;
  occurredAt?: Date | null;
  scheduleAttempts?: number;
};

/** The endpoint as a claim saw it, and the record leased (null when nothing may start now). */
export type Claim = {
  endpoint: EndpointRow;
  delivery: ClaimedDelivery | null;
  /**
   * With no record leased: in how many milliseconds the endpoint's throttle gives its next turn, when a record waits
   * for it (docs/webhooks.md, "Throttle"); null or absent otherwise.
   */
  throttleWaitMs?: number | null;
  /**
   * With no record leased: in how many milliseconds a batched endpoint's partial batch will have waited its
   * `max_wait_ms` (claim_batch.ts); null or absent otherwise.
   */
  batchWaitMs?: number | null;
};

/**
 * The claims of `rows` with their events' data, read in one statement after the claiming one (event_data.ts says why
 * events are read apart). The claims are made by then: a read that fails is made again while the database is away,
 * up to `until`, rather than claiming twice.
 */
export async function toClaims(sql: Sql, rows: ClaimRow[], until: number): Promise<Claim[]> {
  const keys = rows.flatMap((r) =>
    r.delivery_id && r.event_id && r.event_inserted_at
      ? [{ event_id: r.event_id, company_id: r.company_id, inserted_at: r.event_inserted_at }]
      : []
  );
  const events = keys.length ? await whileUnreachable(() => eventRows(sql, keys), until) : new Map();
  return rows.map((row) => {
    const {
      delivery_id,
      delivery_type,
      event_id,
      event_inserted_at,
      slot,
      lease_token,
      delivery_schedule_attempts,
      throttle_wait_ms,
      ...endpoint
    } = row;
    const event = event_id ? events.get(event_id) : undefined;
    return {
      endpoint,
      delivery: delivery_id && slot !== null && lease_token
        ? {
          id: delivery_id,
          type: delivery_type!,
          data: event?.data ?? {},
          slot,
          token: lease_token,
          traceparent: event?.traceparent ?? null,
          occurredAt: event_inserted_at ?? null,
          scheduleAttempts: delivery_schedule_attempts ?? undefined,
        }
        : null,
      throttleWaitMs: throttle_wait_ms ?? null,
    };
  });
}
