/**
 * Exchanges: the day's batch of cleared pay-ins of one subject and currency to convert, over batches.ts as wires.ts is.
 */
import type { TransactionSql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import { joinBatch } from "./batches.ts";

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
