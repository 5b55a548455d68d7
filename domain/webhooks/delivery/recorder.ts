import { Batcher } from "../../basics/batcher.ts";
import { newId } from "../../basics/ids.ts";
import { type Sql, whileUnreachable } from "../../infra/db.ts";
import type { DisabledReason, EndpointRow } from "../endpoints.ts";
import type { SendResult } from "../sender.ts";
import { type Claim, type ClaimedDelivery, toClaims } from "./claim_data.ts";
import { disablesAtOnce, endpointHealth, retryPlan } from "./decisions.ts";
import type { ClaimRow } from "./fill_slots.ts";
import { type Lease, LEASE_SLACK_MS } from "./lease.ts";
import { type EndpointVerdict, recordAttempts, type RecordItem, type RecordRow } from "./record.ts";

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

export type RecorderOptions = Lease & { retrySchedule: number[]; disableAfterSeconds: number };

/** What the drain loop's record step needs: the attempt, the endpoint its claim saw. */
type Submitted = RecordItem & { seen: Pick<EndpointRow, "status" | "failing_since"> };

/**
 * Records attempts (record.ts) as they finish, in batches: attempts finishing while a previous write is in flight are
 * written together (domain/basics/batcher.ts), one of each endpoint before a second of any. One per process, made by
 * the delivery task; what an answer decides is decided here (decisions.ts), before the statement.
 */
export function attemptRecorder(sql: Sql, opts: RecorderOptions) {
  const batcher = new Batcher<Submitted, Recorded>((items) => writeBatch(sql, items, opts), {
    keyOf: (item) => item.endpointId,
    maxBatch: 64,
    maxWriters: 2,
  });
  return {
    /** Stores the attempt and hands its slot to the next record that may start, or frees the slot. */
    record(
      endpoint: Pick<EndpointRow, "id" | "status" | "failing_since">,
      delivery: ClaimedDelivery,
      result: SendResult,
    ): Promise<Recorded> {
      return batcher.submit({
        endpointId: endpoint.id,
        delivery,
        result,
        attemptId: newId(),
        plan: retryPlan(opts.retrySchedule, result.retryAfterSeconds),
        seen: endpoint,
      });
    },
  };
}

/** The verdict of each endpoint of a batch, from all its attempts in the batch. */
function verdictsOf(items: Submitted[], opts: RecorderOptions): EndpointVerdict[] {
  const byEndpoint = new Map<string, { seen: Submitted["seen"]; anyOk: boolean; gone: boolean }>();
  for (const item of items) {
    const outcome = byEndpoint.get(item.endpointId) ?? { seen: item.seen, anyOk: false, gone: false };
    outcome.anyOk ||= item.result.ok;
    outcome.gone ||= disablesAtOnce(item.result.httpStatus);
    byEndpoint.set(item.endpointId, outcome);
  }
  const nowMs = Date.now();
  return [...byEndpoint].map(([endpointId, { seen, anyOk, gone }]) => ({
    endpointId,
    health: endpointHealth(
      { status: seen.status, failingSince: seen.failing_since ?? null },
      { anyOk, gone },
      { nowMs, disableAfterSeconds: opts.disableAfterSeconds },
    ),
    seenFailingSince: seen.failing_since ?? null,
  }));
}

/**
 * One batch: the statement, made again while the database is away (an attempt made is stored even then), within the
 * lease: after it, another process may already be making the attempt again.
 */
async function writeBatch(sql: Sql, items: Submitted[], opts: RecorderOptions): Promise<Recorded[]> {
  let tries = 0;
  const verdicts = verdictsOf(items, opts);
  const until = Date.now() + LEASE_SLACK_MS * 0.8;
  const rows = await whileUnreachable(() => recordAttempts(sql, items, verdicts, opts, tries++ > 0), until);
  return await toRecorded(sql, items.length, rows, until);
}

/**
 * What each attempt of a batch came to, from the rows of its statement, with the events of the records handed over
 * (read after it: claim_data.ts).
 */
async function toRecorded(sql: Sql, count: number, rows: RecordRow[], until: number): Promise<Recorded[]> {
  const results: Recorded[] = Array.from({ length: count }, () => ({
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
