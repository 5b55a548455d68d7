/** Sandbox bodies are plain JSON objects (no wrapper key); field errors name the field. */

import { z } from "@hono/zod-openapi";
import { REPROVAL_ITEMS, REQUIRED_DOCUMENTS } from "../../domain/subjects/status.ts";
import { WIRE_ERROR_CODES } from "../../domain/rails/wires.ts";
import { DOCUMENT_TYPES } from "../../domain/subjects/person_rules.ts";
import { MAX_TEST_DOCUMENTS, TEST_DOCUMENT_TYPES } from "../../domain/rails/test_documents.ts";
import { optionalText, requiredText, uuid } from "../openapi/schemas.ts";
import { amount, currency } from "../rails/schemas.ts";
import { CLOCKED_PIX_CHARGE_FIELDS, CLOCKED_SUBSCRIPTION_FIELDS } from "./test_clock_schemas.ts";

/** An enum whose absence reads "can't be blank" (a bare z.enum would answer "must be one of" for it). */
const oneOf = <T extends readonly [string, ...string[]]>(values: T) =>
  z.string().trim().pipe(z.enum(values)).openapi({ type: "string", enum: [...values] });
const flag = z.boolean().nullish();

export const PayinBody = z.object({
  subject_id: uuid,
  value: amount,
  currency,
  exchange: flag.openapi({ description: "Convert the funds: the payin joins its subject's exchange" }),
}).openapi("SandboxPayin");

export const PayoutBody = z.object({
  subject_id: uuid,
  bank_account_id: uuid,
  value: amount,
  currency,
  fail_with: oneOf(WIRE_ERROR_CODES).nullish().openapi({
    type: ["string", "null"],
    enum: [...WIRE_ERROR_CODES, null],
    description: "The receiving bank refuses the account",
  }),
}).openapi("SandboxPayout");

export const CardPaymentBody = z.object({
  subject_id: uuid,
  value: amount,
  currency,
  outcome: oneOf(["approved", "failed"] as const),
}).openapi("SandboxCardPayment");

export const PixChargeBody = z.object({
  subject_id: uuid,
  value: amount,
  refuse_third_party: flag,
  ...CLOCKED_PIX_CHARGE_FIELDS,
}).openapi("SandboxPixCharge");

export const PixPaymentBody = z.object({
  payer_document_number: optionalText(40).openapi({ description: "Absent: the charge's subject paid it" }),
}).openapi("SandboxPixPayment");

export const BankTransactionBody = z.object({
  value: amount,
  currency,
  payer: z.object({
    document_number: requiredText(40),
    document_type: z.string().trim().toLowerCase().pipe(z.enum(DOCUMENT_TYPES))
      .openapi({ type: "string", enum: [...DOCUMENT_TYPES], example: "cpf" }),
    name: requiredText(),
    bank_account: z.object({
      bank: optionalText(),
      branch_number: optionalText(20),
      account_number: optionalText(40),
      account_type: optionalText(40),
    }).nullish(),
  }),
  spei_concepto_de_pago: optionalText(40).openapi({ description: "MXN only" }),
}).openapi("SandboxBankTransaction");

export const ReproveBody = z.object({
  items: z.array(oneOf(REPROVAL_ITEMS)).min(1),
  reason: optionalText(500),
}).openapi("SandboxReprove");

export const RequestDocumentsBody = z.object({
  required_documents: z.array(oneOf(REQUIRED_DOCUMENTS)).min(1),
}).openapi("SandboxRequestDocuments");

export const SubscriptionBody = z.object({
  subject_id: uuid,
  cycles: z.number().int().min(1).max(1200),
  ...CLOCKED_SUBSCRIPTION_FIELDS,
}).openapi("SandboxSubscription");

export const CancelSubscriptionBody = z.object({
  by_payer: flag.openapi({ description: "true: cancelled by the payer; false or absent: by the merchant" }),
  reason: optionalText(500),
}).openapi("SandboxCancelSubscription");

const sn = z.string().nullable();

export const PixCharge = z.object({
  id: z.string().uuid(),
  transaction_id: z.string().uuid(),
  subject_id: z.string().uuid(),
  value: z.string(),
  currency: z.literal("BRL"),
  status: z.enum(["pending", "paid", "refunded", "expired"]),
  refuse_third_party: z.boolean(),
  qr_code: z.string(),
  test_clock_id: z.string().uuid().optional().openapi({ description: "Created on this test clock (creation only)" }),
  expires_at: z.string().optional().openapi({ description: "On a test clock: when it expires (creation only)" }),
  inserted_at: z.string(),
  updated_at: z.string(),
}).openapi("SandboxPixChargeRecord");

export const BankTransaction = z.object({
  id: z.string().uuid(),
  value: z.string(),
  currency: z.string(),
  movement_date: z.string(),
  bank_account_id: z.string().uuid(),
  paid_at: z.string(),
  spei_concepto_de_pago: z.string().optional(),
  subject: z.object({
    document_number: z.string(),
    document_type: z.string(),
    name: z.string(),
    bank_account: z.object({ bank: sn, branch_number: sn, account_number: sn, account_type: sn }),
  }),
  status: z.enum(["pending", "identified"]),
  transaction_id: z.string().uuid().nullable(),
}).openapi("SandboxBankTransactionRecord");

export const Subscription = z.object({
  id: z.string().uuid(),
  status: z.enum(["pending", "active", "canceled", "completed"]),
  subject_id: z.string().uuid(),
  qr_code: z.string(),
  cycles: z.number().int(),
  paid_cycles: z.number().int(),
  canceled_by_payer: z.boolean(),
  canceled_reason: z.string(),
  invoice: z.object({
    id: z.string().uuid(),
    status: z.literal("paid"),
    subject_id: z.string().uuid(),
    subscription_id: z.string().uuid(),
  }).optional().openapi({ description: "The invoice just paid (pay_invoice only)" }),
  test_clock_id: z.string().uuid().optional().openapi({ description: "Created on this test clock (creation only)" }),
  interval: z.string().optional().openapi({ description: "On a test clock: the time between cycles (creation only)" }),
  fail_at_cycle: z.number().int().nullable().optional().openapi({
    description: "On a test clock: the cycle whose invoice is not paid (creation only)",
  }),
  inserted_at: z.string(),
  updated_at: z.string(),
}).openapi("SandboxSubscriptionRecord");

/** Ids in the examples below stand for a person and one of their accounts registered beforehand. */
const SUBJECT_ID = "0193a6e4-5b1c-7d2e-8f3a-4b5c6d7e8f90";
const BANK_ACCOUNT_ID = "0193a6e4-6c2d-7e3f-9a4b-5c6d7e8f9a01";

export const SANDBOX_EXAMPLES = {
  payin: { subject_id: SUBJECT_ID, value: "1500.00", currency: "BRL" },
  payout: { subject_id: SUBJECT_ID, bank_account_id: BANK_ACCOUNT_ID, value: "250.00", currency: "BRL" },
  cardPayment: { subject_id: SUBJECT_ID, value: "99.90", currency: "BRL", outcome: "approved" },
  pixCharge: { subject_id: SUBJECT_ID, value: "45.00" },
  pixPayment: {},
  bankTransaction: {
    value: "300.00",
    currency: "BRL",
    payer: { document_number: "52998224725", document_type: "cpf", name: "Ana Souza" },
  },
  reprove: { items: ["proof_of_address_missing"], reason: "No proof of address on file" },
  requestDocuments: { required_documents: ["proof_of_address"] },
  subscription: { subject_id: SUBJECT_ID, cycles: 12 },
  cancelSubscription: { by_payer: false, reason: "Plan discontinued" },
} satisfies {
  payin: z.input<typeof PayinBody>;
  payout: z.input<typeof PayoutBody>;
  cardPayment: z.input<typeof CardPaymentBody>;
  pixCharge: z.input<typeof PixChargeBody>;
  pixPayment: z.input<typeof PixPaymentBody>;
  bankTransaction: z.input<typeof BankTransactionBody>;
  reprove: z.input<typeof ReproveBody>;
  requestDocuments: z.input<typeof RequestDocumentsBody>;
  subscription: z.input<typeof SubscriptionBody>;
  cancelSubscription: z.input<typeof CancelSubscriptionBody>;
};

/**
 * `GET /api/sandbox/test_documents`: which type and how many (docs/sandbox.md, "Test documents"). A missing type is a
 * 400 naming `type`, an unknown one or a count out of 1..100 a 422 naming the field.
 */
export const TestDocumentsQuery = z.object({
  type: oneOf(TEST_DOCUMENT_TYPES).openapi({
    type: "string",
    enum: [...TEST_DOCUMENT_TYPES],
    example: "cpf",
    description: 'The document type (docs/sandbox.md, "Test documents")',
  }),
  count: z.coerce.number().int().min(1).max(MAX_TEST_DOCUMENTS).default(1).openapi({
    type: "integer",
    minimum: 1,
    maximum: MAX_TEST_DOCUMENTS,
    default: 1,
    description: "How many distinct values",
  }),
});

export const TestDocument = z.object({
  type: z.enum(TEST_DOCUMENT_TYPES),
  value: z.string().openapi({ example: "52998224725", description: "Valid, in the form the service stores it" }),
}).openapi("SandboxTestDocument");
