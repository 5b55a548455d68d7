/**
 * Exchanges and wires are batches: transactions of one subject in one currency (and, for a wire, to one account)
 * travel together, in one open batch per day whose value is the total of what it carries. Joining one (open, fill,
 * announce) is written here once, for both. An exchange is nothing more than that, so it is written here too
 * (`attachToExchange`); a wire has rules of its own (its destination, corrections, retries) and builds on this in
 * wires.ts.
 */
import type postgres from "postgres";
import type { SqlOrTransaction, TransactionSql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import { emitEvent } from "../webhooks/outbox/events.ts";

const MEMBER_COLUMN = { exchanges: "exchange_id", wires: "wire_id" } as const;
export type BatchTable = keyof typeof MEMBER_COLUMN;

/** The event that tells the integrator what a batch carries now, and the key that names the batch in it. */
const ANNOUNCED_AS = {
  exchanges: { type: "exchange_created", key: "exchange_id" },
  wires: { type: "wire_created", key: "wire_id" },
} as const;

type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * The steps an exchange and a wire share: transactions join today's open batch that `match` selects (or the one
 * `create` makes), take `status`, and the batch's event lists every transaction it now carries. Answers the batch's id.
 */
export async function joinBatch(
  tx: TransactionSql,
  table: BatchTable,
  companyId: string,
  batch: { match: Fragment; create: () => Promise<string>; transactionIds: string[]; status: string },
): Promise<string> {
  const batchId = await openBatch(tx, table, companyId, batch.match, batch.create);
  const members = await fillBatch(tx, table, companyId, batchId, batch.transactionIds, batch.status);
  await announceBatch(tx, table, companyId, batchId, members);
  return batchId;
}

/** The batch's event (`exchange_created`, `wire_created`) with the ids of every transaction it carries. */
export async function announceBatch(
  tx: TransactionSql,
  table: BatchTable,
  companyId: string,
  batchId: string,
  transactionIds: string[],
) {
  const { type, key } = ANNOUNCED_AS[table];
  await emitEvent(tx, companyId, type, { [key]: batchId, transaction_ids: transactionIds });
}

/**
 * Today's (UTC) open batch that `match` selects, locked so that two transactions joining it take turns, or the
 * one `create` makes when there is none.
 */
async function openBatch(
  tx: SqlOrTransaction,
  table: BatchTable,
  companyId: string,
  match: Fragment,
  create: () => Promise<string>,
): Promise<string> {
  const [open] = await tx<{ id: string }[]>`
    select id from ${tx(table)}
    where company_id = ${companyId} and ${match}
      and inserted_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
    order by id desc
    limit 1
    for update`;
  return open?.id ?? await create();
}

/**
 * Puts transactions on a batch with their new status, sets the batch's value to the total of everything it now
 * carries, and answers the ids of every transaction it carries, oldest first (what its event lists).
 */
export async function fillBatch(
  tx: SqlOrTransaction,
  table: BatchTable,
  companyId: string,
  batchId: string,
  transactionIds: string[],
  status: string,
): Promise<string[]> {
  const member = tx(MEMBER_COLUMN[table]);
  await tx`update transactions set ${member} = ${batchId}, status = ${status}, updated_at = now()
           where company_id = ${companyId} and id in ${tx(transactionIds)}`;
  await tx`update ${tx(table)} set updated_at = now(), value = (
             select coalesce(sum(value), 0) from transactions where company_id = ${companyId} and ${member} = ${batchId})
           where company_id = ${companyId} and id = ${batchId}`;
  return await batchMembers(tx, table, companyId, batchId);
}

/** The ids of the transactions a batch carries, oldest first. */
export async function batchMembers(tx: SqlOrTransaction, table: BatchTable, companyId: string, batchId: string) {
  const rows = await tx<{ id: string }[]>`
    select id from transactions where company_id = ${companyId} and ${tx(MEMBER_COLUMN[table])} = ${batchId}
    order by id`;
  return rows.map((r) => r.id);
}

/**
 * Puts cleared payins of one subject and currency into that subject's open exchange of the day (operations
 * convert once a day per subject), creating it when there is none, and tells the integrator which transactions
 * the exchange now serves. The exchange carries their total.
 */
export async function attachToExchange(
  tx: TransactionSql,
  companyId: string,
  batch: { subjectId: string; currency: string; transactionIds: string[] },
) {
  const { subjectId, currency } = batch;
  return await joinBatch(tx, "exchanges", companyId, {
    match: tx`subject_id = ${subjectId} and currency = ${currency} and status = 'open'`,
    create: async () => {
      const [created] = await tx<{ id: string }[]>`
        insert into exchanges (id, company_id, subject_id, currency)
        values (${newId()}, ${companyId}, ${subjectId}, ${currency})
        returning id`;
      return created.id;
    },
    transactionIds: batch.transactionIds,
    status: "exchanged",
  });
}
