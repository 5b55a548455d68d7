/**
 * The one path every kind of transaction takes (`moveMoney`): valued in USD, cleared or held, stored, then settled. The
 * kinds (payins.ts, payouts.ts, pix_charges.ts...) only say what moves, so the rest is decided in one place.
 */
import { commitNow, type Sql, type TransactionSql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import { applyClearance, type Clearance, decideClearance, movedThisYear, TRANSACTED_STATUSES } from "./clearance.ts";
import { emitEvent, type EventType, type Subscriber, subscribersColumn } from "../webhooks/outbox/events.ts";
import { attachToExchange } from "./batches.ts";
import { assertPerson } from "../subjects/people.ts";
import { approveSubject } from "../subjects/status.ts";
import { attachToWire, failWire, type WireErrorCode } from "./wires.ts";

/** Currencies of the rate table (sql/0005); a transaction in any other currency is refused. */
export const CURRENCIES = ["BRL", "MXN", "COP", "CLP", "EUR", "USD"] as const;
export type Currency = typeof CURRENCIES[number];

export type TransactionKind = "payin" | "payout" | "card_payment" | "pix_charge" | "refund";
export type TransactionStatus =
  | "pending"
  | "identified"
  | "approved"
  | "failed"
  | "refunded"
  | "expired"
  | "exchanged"
  | "wired"
  | "waiting_correction"
  | "canceled";

export type TransactionRow = {
  id: string;
  company_id: string;
  subject_id: string;
  kind: TransactionKind;
  status: TransactionStatus;
  currency: string;
  value: string;
  usd_value: string;
  cleared: boolean;
  wants_exchange: boolean;
  bank_account_id: string | null;
  exchange_id: string | null;
  wire_id: string | null;
  exchange_currency: string | null;
  exchanged_value: string | null;
  from_bank_account_id: string | null;
  to_bank_account_id: string | null;
  dynamic_pix_expires_at: Date | null;
  refund_of: string | null;
  inserted_at: Date;
  updated_at: Date;
};

/**
 * An entry of GET /subject/:id/transactions, and what sandbox payment calls answer. `kind` is this shape's name for
 * the kind, `transaction_kind` the transactions API's: both are answered (docs/sandbox.md, "`kind` and
 * `transaction_kind`").
 */
export function presentTransaction(t: TransactionRow) {
  return {
    id: t.id,
    kind: t.kind,
    transaction_kind: t.kind,
    status: t.status,
    currency: t.currency,
    value: t.value,
    usd_value: t.usd_value,
    cleared: t.cleared,
    exchange_id: t.exchange_id,
    wire_id: t.wire_id,
    inserted_at: naiveUtc(t.inserted_at),
  };
}

/** Whether a transaction in this status moved money, and so counts towards the subject's yearly total. */
const countsTowardsLimit = (status: TransactionStatus) => (TRANSACTED_STATUSES as readonly string[]).includes(status);

/**
 * USD value of an amount by the rate table, rounded to cents in NUMERIC (never a float), as SQL: an expression the
 * clearance's total and the row's value both read in the round trip that takes the lock, not a figure asked for first.
 */
function usdValueOf(tx: TransactionSql, currency: string, value: string) {
  return tx`(select round(${value}::numeric * usd_per_unit, 2)::numeric(30, 2) from usd_rates where currency = ${currency})`;
}

/** The value in `exchangeCurrency` by the rate table, rounded to cents; null when nothing is converted. */
async function exchangedValueOf(tx: TransactionSql, m: Movement): Promise<string | null> {
  if (!m.exchangeCurrency || m.exchangeCurrency === m.currency) return null;
  const [row] = await tx<{ value: string }[]>`
    select round(${m.value}::numeric * f.usd_per_unit / t.usd_per_unit, 2)::numeric(30, 2) as value
    from usd_rates f, usd_rates t where f.currency = ${m.currency} and t.currency = ${m.exchangeCurrency}`;
  return row.value;
}

/** Money that moves for a subject: a new transaction, and what the rails must do with it. */
export type Movement = {
  id?: string;
  subjectId: string;
  kind: TransactionKind;
  status: TransactionStatus;
  currency: string;
  value: string;
  /** The event telling the integrator of this status ({transaction_id}); none while the money waits (pending). */
  event: EventType | null;
  /** A payout's destination: once cleared it leaves in the wire to this account. */
  bankAccountId?: string | null;
  /** A payin to convert: once cleared it joins its subject's exchange. */
  wantsExchange?: boolean;
  /** The receiving bank refuses the account data (sandbox): the wire waits for a correction instead. */
  wireError?: WireErrorCode | null;
  /** What the transactions API records (docs/api.md, "Transactions"): the currency it converts to, the accounts. */
  exchangeCurrency?: string | null;
  fromBankAccountId?: string | null;
  toBankAccountId?: string | null;
  dynamicPixExpiresAt?: Date | null;
  refundOf?: string | null;
};

/**
 * The one way money moves: stores the transaction with its clearance decided once, under the subject's lock, then
 * settles it (event, consequences of a hold, exchange or wire). Answers the transaction as it ends up.
 * Money that did not move (pending, failed) does not count towards the yearly total and is cleared only while
 * the subject is approved.
 *
 * Two round trips hold the subject's lock before the commit, each a batch of statements sent together, pipelined
 * (docs/performance.md, "Statement by statement" and "What changed"): `decideUnderLock`, then `storeWithEvent`. Every
 * round trip made under the lock is time each other pay-in of the subject waits, so the steps hand SQL and answers on
 * instead of asking again. `endsTransaction`: the caller sends nothing after this, so when settling needs nothing more
 * (no hold, nothing that goes on to an exchange or a wire) COMMIT goes in the same write as the row and its event
 * (`commitNow`, in a transaction of `transaction()`), and the lock is held one round trip less.
 */
export async function moveMoney(
  tx: TransactionSql,
  companyId: string,
  movement: Movement,
  opts: { endsTransaction?: boolean } = {},
): Promise<TransactionRow> {
  const id = movement.id ?? newId();
  const { usdValue, clearance, subscribers } = await decideUnderLock(tx, companyId, movement);
  // a round trip of its own only for a conversion (the transactions API); none for a pay-in
  const exchangedValue = await exchangedValueOf(tx, movement);
  const newRow: NewTransaction = {
    id,
    company_id: companyId,
    subject_id: movement.subjectId,
    kind: movement.kind,
    status: movement.status,
    currency: movement.currency,
    value: movement.value,
    usd_value: usdValue,
    cleared: clearance.cleared,
    wants_exchange: movement.wantsExchange ?? false,
    bank_account_id: movement.bankAccountId ?? null,
    exchange_currency: movement.exchangeCurrency ?? null,
    exchanged_value: exchangedValue,
    from_bank_account_id: movement.fromBankAccountId ?? null,
    to_bank_account_id: movement.toBankAccountId ?? null,
    dynamic_pix_expires_at: movement.dynamicPixExpiresAt ?? null,
    refund_of: movement.refundOf ?? null,
  };
  const event = movement.event && subscribers ? { type: movement.event, subscribers } : null;
  const last = (opts.endsTransaction ?? false) && clearance.missing.length === 0 && !goesOn(newRow);
  const row = await storeWithEvent(tx, companyId, newRow, event, last);
  return last ? row : await settle(tx, companyId, row, clearance, null, movement.wireError);
}

/** What the round trip that takes the lock answers: the USD value, the clearance, the endpoints of the event. */
type DecidedUnderLock = { usdValue: string; clearance: Clearance; subscribers: Subscriber[] | null };

/**
 * The first round trip of `moveMoney`: the subject's lock and, behind it in one statement, the year's total against the
 * limit (`decideClearance`, which sends the two together), the USD value by the rate table and the endpoints the event
 * goes to, pipelined.
 * Postgres runs each statement after the one before has finished, with a snapshot of its own, so the total is read
 * under the lock. The USD value goes to the total as SQL, so it needs no round trip before this one.
 */
async function decideUnderLock(tx: TransactionSql, companyId: string, movement: Movement): Promise<DecidedUnderLock> {
  const usdValueSql = usdValueOf(tx, movement.currency, movement.value);
  // a refund gives back money counted when it came in: it is weighed like money that does not move
  const weighedAgainstLimit = countsTowardsLimit(movement.status) && movement.kind !== "refund";
  // the USD value and the event's endpoints read in the statement behind the lock, with the year's total (two
  // statements fewer per pay-in: docs/performance.md, "The money path")
  const subscribers = movement.event ? subscribersColumn(tx, companyId, movement.event) : tx`null::json`;
  const { also, ...clearance } = await decideClearance<{ usd_value: string; subscribers: Subscriber[] | null }>(
    tx,
    companyId,
    movement.subjectId,
    weighedAgainstLimit ? usdValueSql : null,
    tx`${usdValueSql} as usd_value, ${subscribers} as subscribers`,
  );
  return { usdValue: also.usd_value, clearance, subscribers: also.subscribers };
}

/** A transactions row as `moveMoney` inserts it (the timestamps are the table's defaults). */
type NewTransaction = Omit<TransactionRow, "exchange_id" | "wire_id" | "inserted_at" | "updated_at">;

/**
 * The second round trip of `moveMoney`: the row and its event, pipelined. The event names the row by id, so it waits
 * for no answer of the insert; it still comes first in the receiver's order, as settle would emit it (docs/webhooks.md,
 * Ordering). The event goes to the endpoints the first round trip read, so `emitEvent` does not read them again.
 * `last`: COMMIT follows them in the same write; every statement is handed to the connection first (`execute()`).
 */
async function storeWithEvent(
  tx: TransactionSql,
  companyId: string,
  row: NewTransaction,
  event: { type: EventType; subscribers: Subscriber[] } | null,
  last: boolean,
): Promise<TransactionRow> {
  const inserted = tx<TransactionRow[]>`insert into transactions ${tx(row)} returning *`.execute();
  const emitted = event
    ? emitEvent(tx, companyId, event.type, { transaction_id: row.id }, {
      subscribers: event.subscribers, // read in the first round trip (decideUnderLock)
    })
    : null;
  if (last) commitNow(tx);
  const [[stored]] = await Promise.all([inserted, emitted]);
  return stored;
}

/**
 * Moves a transaction to a new status (a PIX charge paid, refunded or expired). When the new status moves
 * money, clearance is decided now, as for a new transaction, and the rest follows the same path.
 */
export async function changeTransactionStatus(
  tx: TransactionSql,
  companyId: string,
  id: string,
  status: TransactionStatus,
  event: EventType,
): Promise<TransactionRow> {
  const current = await getTransaction(tx, companyId, id);
  // the value stored with the row goes to the year's total as SQL, as a new transaction's does
  const clearance: Clearance = countsTowardsLimit(status)
    ? await decideClearance(tx, companyId, current.subject_id, tx`${current.usd_value}::numeric`)
    : { cleared: current.cleared, missing: [] };
  const [row] = await tx<TransactionRow[]>`
    update transactions set status = ${status}, cleared = ${clearance.cleared}, updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  return await settle(tx, companyId, row, clearance, event);
}

/**
 * What follows a decided transaction, in the order a receiver sees it: its own event, the subject's reproval and
 * document request when it was held, then the exchange or wire that carries it on.
 */
async function settle(
  tx: TransactionSql,
  companyId: string,
  row: TransactionRow,
  clearance: Clearance,
  event: EventType | null,
  wireError?: WireErrorCode | null,
): Promise<TransactionRow> {
  if (event) await emitEvent(tx, companyId, event, { transaction_id: row.id });
  await applyClearance(tx, companyId, row.subject_id, clearance);
  const forwarded = await forwardCleared(tx, companyId, [row], wireError);
  return forwarded ? await getTransaction(tx, companyId, row.id) : row;
}

export async function getTransaction(tx: TransactionSql, companyId: string, id: string): Promise<TransactionRow> {
  const [row] = await tx<TransactionRow[]>`
    select * from transactions where company_id = ${companyId} and id = ${id}`;
  if (!row) throw new Error(`transaction ${id} vanished`);
  return row;
}

/**
 * What cleared transactions still need from the rails: a payin asked to be converted joins its subject's open
 * exchange; a payout joins the open wire to its destination account (or, with `wireError`, a wire that waits for
 * a correction). Answers whether any transaction moved on.
 */
async function forwardCleared(
  tx: TransactionSql,
  companyId: string,
  rows: TransactionRow[],
  wireError?: WireErrorCode | null,
): Promise<boolean> {
  const groups = new Map<string, { rows: TransactionRow[]; kind: "exchange" | "wire" }>();
  const join = (key: string, kind: "exchange" | "wire", row: TransactionRow) => {
    const group = groups.get(key) ?? { rows: [], kind };
    group.rows.push(row);
    groups.set(key, group);
  };
  for (const row of rows) {
    // a conversion first (a pay-in, or a pay-out in another currency than it is paid in), then the wire
    if (joinsExchange(row)) join(`exchange:${row.currency}`, "exchange", row);
    if (joinsWire(row)) join(`wire:${row.bank_account_id}:${row.currency}`, "wire", row);
  }
  const ordered = [...groups.values()].sort((a, b) => a.kind === b.kind ? 0 : a.kind === "exchange" ? -1 : 1);
  for (const { rows: group, kind } of ordered) {
    const first = group[0];
    const transactionIds = group.map((r) => r.id);
    if (kind === "exchange") {
      await attachToExchange(tx, companyId, { subjectId: first.subject_id, currency: first.currency, transactionIds });
      continue;
    }
    const batch = {
      subjectId: first.subject_id,
      bankAccountId: first.bank_account_id!,
      currency: first.currency,
      transactionIds,
    };
    if (wireError) await failWire(tx, companyId, { ...batch, errorCode: wireError });
    else await attachToWire(tx, companyId, batch);
  }
  return groups.size > 0;
}

/** What `forwardCleared` reads of a transaction (a new one has no exchange or wire yet). */
type Forwardable = Pick<TransactionRow, "cleared" | "status" | "wants_exchange" | "kind" | "bank_account_id"> & {
  exchange_id?: string | null;
  wire_id?: string | null;
};
const joinsExchange = (row: Forwardable) =>
  row.cleared && row.status === "identified" && row.wants_exchange && !row.exchange_id;
const joinsWire = (row: Forwardable) =>
  row.cleared && row.status === "identified" && row.kind === "payout" && !!row.bank_account_id && !row.wire_id;
/** Whether a cleared transaction still goes on to an exchange or a wire (`forwardCleared`). */
const goesOn = (row: Forwardable) => joinsExchange(row) || joinsWire(row);

/** Back office approves the subject, and the money held for it moves on in the same transaction. */
export async function approveAndRelease(tx: TransactionSql, companyId: string, subjectId: string) {
  await approveSubject(tx, companyId, subjectId);
  await releaseHeldTransactions(tx, companyId, subjectId);
}

/** Once a subject is approved again, its held money moves on: grouped into one exchange or wire per destination. */
async function releaseHeldTransactions(tx: TransactionSql, companyId: string, subjectId: string) {
  const released = await tx<TransactionRow[]>`
    update transactions set cleared = true, updated_at = now()
    where company_id = ${companyId} and subject_id = ${subjectId} and not cleared
    returning *`;
  await forwardCleared(tx, companyId, released.sort((a, b) => a.id.localeCompare(b.id)));
}

const PAGE_SIZE = 100;

/** A subject's transactions, oldest first, 100 per page after `lastId`. */
export async function listSubjectTransactions(
  sql: Sql,
  companyId: string,
  subjectId: string,
  page: { lastId?: string; kind?: string } = {},
) {
  await assertPerson(sql, companyId, subjectId);
  return await sql<TransactionRow[]>`
    select * from transactions
    where company_id = ${companyId} and subject_id = ${subjectId}
      ${page.lastId ? sql`and id > ${page.lastId}` : sql``}
      ${page.kind ? sql`and kind = ${page.kind}` : sql``}
    order by id
    limit ${PAGE_SIZE}`;
}

/** The subject's money moved this calendar year (UTC), one row per currency. */
export async function subjectTransactionValues(sql: Sql, companyId: string, subjectId: string) {
  await assertPerson(sql, companyId, subjectId);
  return await sql<{ currency: string; value: string; usd_value: string; count: number }[]>`
    select currency, value, usd_value, count
    from (${movedThisYear(sql, companyId, subjectId)}) as moved
    where count > 0
    order by currency`;
}
