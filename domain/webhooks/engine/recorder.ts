/**
 * The process's recorder of finished attempts: decides what each answer means (decisions.ts), writes attempts finishing
 * together in one statement (record.ts) and emits the operational events they cause. record.ts holds only the SQL.
 */

import { Batcher } from "../../basics/batcher.ts";
import { log } from "../../basics/log.ts";
import { newId } from "../../basics/ids.ts";
import { afterDeadlock, type Sql, whileUnreachable } from "../../infra/db.ts";
import type { DisabledReason, EndpointRow } from "../endpoints/endpoint_row.ts";
import type { SendResult } from "./sender.ts";
import { type Claim, type ClaimedDelivery, toClaims } from "./statements/claim_data.ts";
import {
  disablesAtOnce,
  endpointHealth,
  endpointHoldSeconds,
  type FailingAlert,
  failureReason,
  failuresInARow,
  retryPlan,
} from "../endpoints/decisions.ts";
import type { ClaimRow } from "./statements/fill_slots.ts";
import { type Lease, LEASE_SLACK_MS } from "./statements/lease.ts";
import { type EndpointVerdict, recordAttempts, type RecordItem, type RecordRow } from "./statements/record.ts";
import { type AttemptTransitions, emitAttemptEvents } from "../outbox/operational.ts";

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

export type RecorderOptions = Lease & FailingAlert & { retrySchedule: number[]; disableAfterSeconds: number };

/** What the drain loop's record step needs: the attempt, the endpoint its claim saw. */
type Submitted = RecordItem & { seen: Pick<EndpointRow, "status" | "failing_since"> };

/**
 * What attempts of an endpoint came to when their batch could not apply the endpoint's verdict (another transaction
 * held its row: record.ts, `endpoint_deferred`): added to the endpoint's next batch in this process, as if its
 * attempts had been in it. The attempts themselves are recorded either way.
 */
type Carried = { anyOk: boolean; gone: boolean; failed: number };

/**
 * Records attempts (record.ts) as they finish, in batches: attempts finishing while a previous write is in flight are
 * written together (domain/basics/batcher.ts), one of each endpoint before a second of any. One per process, made by
 * the drain loop; what an answer decides is decided here (decisions.ts), before the statement.
 */
export function attemptRecorder(sql: Sql, opts: RecorderOptions) {
  const carried = new Map<string, Carried>();
  const batcher = new Batcher<Submitted, Recorded>((items) => writeBatch(sql, items, opts, carried), {
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
        holdSeconds: endpointHoldSeconds(result),
        seen: endpoint,
      });
    },
  };
}

/**
 * The verdict of each endpoint of a batch, from all its attempts in the batch and what an earlier batch carried over
 * for it (taken here: a batch that defers it again carries the sum). Each with the outcome it was decided from.
 */
function verdictsOf(
  items: Submitted[],
  opts: RecorderOptions,
  carried: Map<string, Carried>,
): (EndpointVerdict & { outcome: Carried })[] {
  const byEndpoint = new Map<
    string,
    { seen: Submitted["seen"]; anyOk: boolean; gone: boolean; results: SendResult[] }
  >();
  for (const item of items) {
    const outcome = byEndpoint.get(item.endpointId) ?? { seen: item.seen, anyOk: false, gone: false, results: [] };
    outcome.anyOk ||= item.result.ok;
    outcome.gone ||= disablesAtOnce(item.result.httpStatus, item.result.permanent);
    outcome.results.push(item.result);
    byEndpoint.set(item.endpointId, outcome);
  }
  const nowMs = Date.now();
  return [...byEndpoint].map(([endpointId, { seen, anyOk, gone, results }]) => {
    const before = carried.get(endpointId);
    carried.delete(endpointId);
    const outcome = mergeCarried(before, { anyOk, gone, failed: failuresInARow(results) });
    return {
      endpointId,
      health: endpointHealth(
        { status: seen.status, failingSince: seen.failing_since ?? null },
        outcome,
        { nowMs, disableAfterSeconds: opts.disableAfterSeconds },
      ),
      seenFailingSince: seen.failing_since ?? null,
      failedAttempts: outcome.failed,
      outcome,
    };
  });
}

/** Two outcomes of one endpoint as one batch's: a success among them ends the streak (`failuresInARow`). */
function mergeCarried(a: Carried | undefined, b: Carried): Carried {
  if (!a) return b;
  const anyOk = a.anyOk || b.anyOk;
  return { anyOk, gone: a.gone || b.gone, failed: anyOk ? 0 : a.failed + b.failed };
}

/**
 * One batch: the statement, made again while the database is away (an attempt made is stored even then), within the
 * lease: after it, another process may already be making the attempt again.
 */
async function writeBatch(
  sql: Sql,
  submitted: Submitted[],
  opts: RecorderOptions,
  carried: Map<string, Carried>,
): Promise<Recorded[]> {
  let tries = 0;
  // one verdict per request, a batch's included (its failure is one in a row); one item per record
  const verdicts = verdictsOf(submitted, opts, carried);
  const { items, origins } = perRecord(submitted);
  const until = Date.now() + LEASE_SLACK_MS * 0.8;
  // A batch that may disable an endpoint or exhaust a record is written in a transaction with the operational events
  // it causes (operational.ts); any other batch, successes and most failures alike, stays one statement.
  const inTransaction = mayDisableOrExhaust(items, verdicts);
  const write = inTransaction
    ? (firstMayHaveCommitted: boolean) =>
      sql.begin(async (tx) => {
        const rows = await recordAttempts(tx as unknown as Sql, items, verdicts, opts, firstMayHaveCommitted);
        const transitions = transitionsOf(items, rows);
        if (transitions) await emitAttemptEvents(tx, transitions);
        return rows;
      }) as Promise<RecordRow[]>
    : (firstMayHaveCommitted: boolean) => recordAttempts(sql, items, verdicts, opts, firstMayHaveCommitted);
  const rows = await whileUnreachable(() => afterDeadlock(() => write(tries++ > 0)), until);
  // the verdicts another transaction's lock kept from being applied: carried to each endpoint's next batch
  const carriedNow = new Map<string, Carried>();
  for (const row of rows) {
    if (!row.endpoint_deferred) continue;
    const endpointId = items[row.idx].endpointId;
    const outcome = verdicts.find((v) => v.endpointId === endpointId)?.outcome;
    if (outcome && !carriedNow.has(endpointId)) carriedNow.set(endpointId, outcome);
  }
  for (const [endpointId, outcome] of carriedNow) {
    carried.set(endpointId, mergeCarried(carried.get(endpointId), outcome));
  }
  const later = transitionsOf(items, rows);
  if (!inTransaction && later) await announceInOwnTransaction(sql, later, until);
  // each request answers by its first record's row: a batch's records all got its outcome
  return await toRecorded(
    sql,
    submitted.length,
    rows.filter((r) => origins[r.idx].first).map((r) => ({
      ...r,
      idx: origins[r.idx].submitted,
    })),
    until,
  );
}

/**
 * A batch's request as one item per record (docs/webhooks.md, "Batches"): each record gets the attempt's result,
 * under an attempt id of its own, leased with the batch's token and slot. `origins` says which request each item
 * came from, and whether it is its first.
 */
function perRecord(submitted: Submitted[]): {
  items: Submitted[];
  origins: { submitted: number; first: boolean }[];
} {
  if (!submitted.some((s) => s.delivery.batch)) {
    return { items: submitted, origins: submitted.map((_, i) => ({ submitted: i, first: true })) };
  }
  const items: Submitted[] = [];
  const origins: { submitted: number; first: boolean }[] = [];
  submitted.forEach((item, i) => {
    const batch = item.delivery.batch;
    if (!batch) {
      items.push(item);
      origins.push({ submitted: i, first: true });
      return;
    }
    batch.records.forEach((record, k) => {
      items.push({
        ...item,
        delivery: { ...item.delivery, ...record, batch: undefined },
        attemptId: k === 0 ? item.attemptId : newId(),
        batch: { id: batch.id, first: k === 0 },
      });
      origins.push({ submitted: i, first: k === 0 });
    });
  });
  return { items, origins };
}

/**
 * Whether a batch may disable an endpoint (its verdict says so before the statement) or exhaust a record (a failed
 * attempt that is the last of its record's schedule, as claimed; a manual retry meanwhile only lowers the count).
 */
function mayDisableOrExhaust(items: Submitted[], verdicts: EndpointVerdict[]): boolean {
  return verdicts.some((v) => v.health.disable !== null) ||
    items.some((i) => !i.result.ok && (i.delivery.scheduleAttempts ?? Infinity) >= i.plan.length);
}

/**
 * A failing streak found by a batch written as one statement is announced in a transaction of its own, which marks
 * it (operational.ts). Should that fail, the streak stays unannounced and the endpoint's next failure finds it again:
 * the attempts are recorded either way.
 */
async function announceInOwnTransaction(sql: Sql, t: AttemptTransitions, until: number) {
  try {
    await whileUnreachable(() => afterDeadlock(() => sql.begin((tx) => emitAttemptEvents(tx, t))), until);
  } catch (err) {
    log.warn("operational events not emitted", { error: err instanceof Error ? err.message : String(err) });
  }
}

/** What a statement changed that operational events report, by the rows it answered; null when nothing did (most batches). */
function transitionsOf(items: Submitted[], rows: RecordRow[]): AttemptTransitions | null {
  const t: AttemptTransitions = { failing: [], disabled: [], exhausted: [] };
  const failing = new Map<string, { companyId: string; endpointId: string; lastError: string }>();
  const disabled = new Map<string, { companyId: string; endpointId: string }>();
  for (const row of rows) {
    const item = items[row.idx];
    const key = { companyId: row.company_id, endpointId: item.endpointId };
    const reason = failureReason(item.result);
    if (row.endpoint_failing && reason !== null) failing.set(item.endpointId, { ...key, lastError: reason });
    if (row.endpoint_disabled) disabled.set(item.endpointId, key);
    if (row.exhausted) t.exhausted.push({ companyId: row.company_id, deliveryId: item.delivery.id });
  }
  t.failing = [...failing.values()];
  t.disabled = [...disabled.values()];
  return t.failing.length === 0 && t.disabled.length === 0 && t.exhausted.length === 0 ? null : t;
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
      exhausted: _exhausted,
      endpoint_failing: _failing,
      endpoint_deferred: _deferred,
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
