/**
 * The shapes of the transactions API (rails/payments.ts): the body that creates a transaction and its example, a
 * payment, a void, a balance, a wire, the list's query. Apart from the routes: the sandbox's pay-in routes take some.
 */

import { z } from "@hono/zod-openapi";
import { uuid } from "../openapi/schemas.ts";
import { API_STATUSES } from "../../domain/rails/payments.ts";
import { BankAccount } from "../bank_accounts/schemas.ts";
import { CompanyCustomer, Person } from "../subjects/schemas.ts";
import { amount, currency, KIND_FILTER, sameKind } from "./schemas.ts";

const nullableUuid = uuid.nullish();
const sn = z.string().nullable();

export const TransactionBody = z.object({
  transaction: z.object({
    subject_id: uuid,
    from_bank_account_id: nullableUuid.openapi({
      description: "Pay-in: the payer's account; pay-out: your internal account in `currency` (the default)",
    }),
    to_bank_account_id: uuid.openapi({
      description: "Pay-in: your internal account in `exchange_currency`; pay-out: an account of the subject",
    }),
    currency,
    exchange_currency: currency,
    value: amount,
    use_dynamic_pix: z.boolean().nullish().openapi({
      description: "Pay-in in BRL: answer a dynamic PIX code (BR Code)",
    }),
    dynamic_pix_expires_at: z.coerce.date().nullish().openapi({
      type: "string",
      format: "date-time",
      description: "When the PIX code expires; one hour from now by default",
    }),
    refuse_third_party: z.boolean().nullish().openapi({
      description: "A PIX payment from anyone but the subject is refunded",
    }),
  }),
}).openapi("TransactionRequest");

export const TRANSACTION_EXAMPLE = {
  transaction: {
    subject_id: "01a20fdf-dce3-7688-b91a-4f6c7498e3d3",
    from_bank_account_id: null,
    to_bank_account_id: "01a20fe1-c2b6-7138-bb0e-3253e9c3f6c2",
    currency: "BRL" as const,
    exchange_currency: "BRL" as const,
    value: "150.00",
    // No dynamic_pix_expires_at: a fixed instant in an example stops being valid the day it passes (the default is
    // an hour from now).
    use_dynamic_pix: true,
  },
};

export const OwnBankAccount = BankAccount.extend({
  internal: z.boolean().openapi({ description: "One of the internal accounts opened with the company" }),
}).openapi("OwnBankAccount");

const TransactionAccount = OwnBankAccount.extend({
  bank: BankAccount.shape.bank.nullable(),
  owner_company: BankAccount.shape.owner_company.nullable(),
});

export const Payment = z.object({
  id: z.string().uuid(),
  value: z.string(),
  status: z.enum(API_STATUSES),
  transaction_kind: z.string(),
  kind: z.string().openapi({ description: "The same as `transaction_kind`: the sandbox's name" }),
  currency: z.string(),
  exchange_currency: z.string(),
  exchanged_value: sn,
  subject_id: z.string().uuid(),
  subject: z.union([Person, CompanyCustomer]),
  subject_is_receiver: z.boolean(),
  to_bank_account: TransactionAccount.nullable(),
  from_bank_account: TransactionAccount.nullable(),
  source_name: z.string(),
  source_document_type: z.string(),
  source_document_number: z.string(),
  cleared: z.boolean(),
  for_exchange: z.boolean(),
  dynamic_pix_code: sn.openapi({ description: "BR Code (PIX copia e cola) of a pay-in made with use_dynamic_pix" }),
  dynamic_pix_expires_at: sn,
  exchange_id: sn,
  wire_id: sn,
  refund_of: sn.openapi({ description: "On a refund: the pay-in it refunds" }),
  canceled_reason: sn,
  canceled_at: sn,
  inserted_at: z.string(),
}).openapi("PaymentTransaction");

export const Void = z.object({
  id: z.string().uuid(),
  reason: sn,
  inserted_at: z.string(),
  status: z.literal("canceled"),
  transaction_kind: z.string(),
  kind: z.string().openapi({ description: "The same as `transaction_kind`: the sandbox's name" }),
  bank_transaction: z.record(z.string(), z.unknown()),
}).openapi("Void");

export const Balance = z.object({
  currency: z.string(),
  credit_value: z.string(),
  credit_transactions: z.number().int(),
  debit_value: z.string(),
  debit_transactions: z.number().int(),
  balance: z.string(),
}).openapi("Balance");

export const WireView = z.object({
  id: z.string().uuid(),
  status: z.string(),
  value: z.string(),
  currency: z.string(),
  bank_account_id: z.string().uuid(),
  transaction_ids: z.array(z.string().uuid()),
  error_code: sn,
  inserted_at: z.string(),
}).openapi("Wire");

export const PaymentListQuery = z.object({
  subject_id: uuid.optional(),
  status: z.enum(API_STATUSES).optional(),
  ...KIND_FILTER,
  last_id: uuid.optional().openapi({ description: "Id of the last transaction of the previous page" }),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
}).superRefine(sameKind("kind"));

export const RefundParams = z.object({
  id: uuid.openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The pay-in's id" }),
  refund_id: uuid.openapi({ param: { name: "refund_id", in: "path" }, format: "uuid", description: "The refund's id" }),
});

export const PayBody = z.object({
  payer_document_number: z.string().trim().max(40).nullish().openapi({
    description: "Who paid; someone other than the subject on a pay-in refusing third parties is refunded",
  }),
}).openapi("SandboxTransactionPayment");
