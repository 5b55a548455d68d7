import type { TransactionSql } from "../platform/db.ts";
import { newId } from "../platform/ids.ts";
import { emitEvent } from "../webhooks/events.ts";

/**
 * Puts cleared payins of one subject and currency into that subject's open exchange of the day (operations
 * convert once a day per subject), creating it when there is none, and tells the integrator which transactions
 * the exchange now serves. The exchange carries their total.
 */
export async function attachToExchange(
  tx: TransactionSql,
  companyId: string,
  subjectId: string,
  currency: string,
  transactionIds: string[],
) {
  let [exchange] = await tx<{ id: string }[]>`
    select id from exchanges
    where company_id = ${companyId} and subject_id = ${subjectId} and currency = ${currency} and status = 'open'
      and inserted_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
    order by id desc
    limit 1
    for update`;
  if (!exchange) {
    [exchange] = await tx<{ id: string }[]>`
      insert into exchanges (id, company_id, subject_id, currency)
      values (${newId()}, ${companyId}, ${subjectId}, ${currency})
      returning id`;
  }
  await tx`update transactions set exchange_id = ${exchange.id}, status = 'exchanged', updated_at = now()
           where company_id = ${companyId} and id in ${tx(transactionIds)}`;
  const members = await tx<{ id: string }[]>`
    select id from transactions where company_id = ${companyId} and exchange_id = ${exchange.id} order by id`;
  await tx`update exchanges set updated_at = now(), value = (
             select coalesce(sum(value), 0) from transactions
             where company_id = ${companyId} and exchange_id = ${exchange.id})
           where company_id = ${companyId} and id = ${exchange.id}`;
  await emitEvent(tx, companyId, "exchange_created", {
    exchange_id: exchange.id,
    transaction_ids: members.map((m) => m.id),
  });
  return exchange.id;
}
