/**
 * Exchanges and wires are batches: transactions of one subject in one currency (and, for a wire, to one account)
 * travel together, in one open batch per day whose value is the total of what it carries.
 */
import type postgres from "postgres";
import type { Tx } from "../infra/db.ts";

const MEMBER_COLUMN = { exchanges: "exchange_id", wires: "wire_id" } as const;
export type BatchTable = keyof typeof MEMBER_COLUMN;

type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * Today's (UTC) open batch that `match` selects, locked so that two transactions joining it take turns, or the
 * one `create` makes when there is none.
 */
export async function openBatch(
  tx: Tx,
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
  tx: Tx,
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
export async function batchMembers(tx: Tx, table: BatchTable, companyId: string, batchId: string) {
  const rows = await tx<{ id: string }[]>`
    select id from transactions where company_id = ${companyId} and ${tx(MEMBER_COLUMN[table])} = ${batchId}
    order by id`;
  return rows.map((r) => r.id);
}
