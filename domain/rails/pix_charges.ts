/**
 * Dynamic PIX charges: a QR code the subject pays or lets expire, its transaction pending until then. Also issues the
 * code a pay-in of the transactions API answers with `use_dynamic_pix` (payments.ts).
 */
import type { TransactionSql } from "../infra/db.ts";
import { notFound, validationFailed } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import { bareDocument } from "../basics/tax_ids.ts";
import { brCode } from "./pix_qr.ts";
import { changeTransactionStatus, moveMoney } from "./transactions.ts";

export type PixChargeRow = {
  id: string;
  company_id: string;
  subject_id: string;
  value: string;
  status: "pending" | "paid" | "refunded" | "expired";
  refuse_third_party: boolean;
  payer_document_number: string | null;
  qr_code: string;
  inserted_at: Date;
  updated_at: Date;
};

/** A dynamic PIX charge; its id is also the id of its transaction (the transaction_id of its events). */
export function presentPixCharge(p: PixChargeRow) {
  return {
    id: p.id,
    transaction_id: p.id,
    subject_id: p.subject_id,
    value: p.value,
    currency: "BRL" as const,
    status: p.status,
    refuse_third_party: p.refuse_third_party,
    qr_code: p.qr_code,
    inserted_at: naiveUtc(p.inserted_at),
    updated_at: naiveUtc(p.updated_at),
  };
}

export type PixChargeInput = { subject_id: string; value: string; refuse_third_party?: boolean | null };

/** Issues a dynamic QR code for the subject to pay; the transaction waits (pending) for the payment. */
export async function createPixCharge(tx: TransactionSql, companyId: string, input: PixChargeInput) {
  const id = newId();
  await moveMoney(tx, companyId, {
    id,
    subjectId: input.subject_id,
    kind: "pix_charge",
    status: "pending",
    currency: "BRL" as const,
    value: input.value,
    event: null,
  });
  return await issuePixCode(tx, companyId, { id, ...input });
}

/**
 * The dynamic QR code (a BR Code) of a pending BRL transaction with the same id: what the sandbox pays or expires
 * and what a pay-in created with `use_dynamic_pix` answers as `dynamic_pix_code`.
 */
export async function issuePixCode(
  tx: TransactionSql,
  companyId: string,
  input: PixChargeInput & { id: string },
): Promise<PixChargeRow> {
  const { id } = input;
  const [row] = await tx<PixChargeRow[]>`
    insert into pix_charges ${
    tx({
      id,
      company_id: companyId,
      subject_id: input.subject_id,
      value: input.value,
      status: "pending",
      refuse_third_party: input.refuse_third_party ?? false,
      qr_code: brCode({ url: `pix.sandbox.example/qr/v2/${id}`, txid: id, amount: input.value }),
    })
  }
    returning *`;
  return row;
}

async function lockPendingCharge(tx: TransactionSql, companyId: string, id: string) {
  const [charge] = await tx<(PixChargeRow & { subject_document: string })[]>`
    select c.*, p.document_number as subject_document
    from pix_charges c join people p on p.id = c.subject_id
    where c.company_id = ${companyId} and c.id = ${id}
    for update of c`;
  if (!charge) throw notFound();
  if (charge.status !== "pending") {
    throw validationFailed({ status: [`is ${charge.status}`] }, 422);
  }
  return charge;
}

/**
 * The QR code is paid. Paid by the subject (or anyone, when third-party payments are accepted) the money is
 * identified; paid by someone else while third-party payments are refused, the payer is refunded.
 */
export async function payPixCharge(
  tx: TransactionSql,
  companyId: string,
  id: string,
  input: { payer_document_number?: string | null },
) {
  const charge = await lockPendingCharge(tx, companyId, id);
  // compared as people are stored: separators dropped, letters (passports, CURPs) upper-cased
  const payer = input.payer_document_number ? bareDocument(input.payer_document_number).toUpperCase() : null;
  const thirdParty = payer !== null && payer !== bareDocument(charge.subject_document).toUpperCase();
  const refused = thirdParty && charge.refuse_third_party;
  await tx`update pix_charges set status = ${refused ? "refunded" : "paid"}, payer_document_number = ${payer},
                                  updated_at = now()
           where company_id = ${companyId} and id = ${id}`;
  return refused
    ? await changeTransactionStatus(tx, companyId, id, "refunded", "payment_refunded")
    : await changeTransactionStatus(tx, companyId, id, "identified", "identified");
}

/** The QR code was not paid by its date. */
export async function expirePixCharge(tx: TransactionSql, companyId: string, id: string) {
  await lockPendingCharge(tx, companyId, id);
  const [row] = await tx<PixChargeRow[]>`
    update pix_charges set status = 'expired', updated_at = now()
    where company_id = ${companyId} and id = ${id}
    returning *`;
  await changeTransactionStatus(tx, companyId, id, "expired", "payment_expired");
  return row;
}
