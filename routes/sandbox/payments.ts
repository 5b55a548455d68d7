/**
 * Sandbox routes that play the payment rails: money arriving (payins, bank transfers, PIX QR codes, card payments)
 * and payouts leaving, each through the domain function a real rail would call (docs/sandbox.md).
 */

import { createRoute, z } from "@hono/zod-openapi";
import {
  checkBankTransaction,
  presentBankTransaction,
  receiveBankTransaction,
} from "../../domain/rails/bank_transactions.ts";
import { recordCardPayment } from "../../domain/rails/card_payments.ts";
import { receivePayin } from "../../domain/rails/payins.ts";
import { checkPayout, sendPayout } from "../../domain/rails/payouts.ts";
import { expirePixCharge, payPixCharge, presentPixCharge } from "../../domain/rails/pix_charges.ts";
import { createPixChargeOnClock } from "../../domain/rails/test_clocks.ts";
import { presentTransaction } from "../../domain/rails/transactions.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { transaction } from "../../domain/infra/db.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import { emptyBodyAsObject } from "../policy/optional_body.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import {
  BankTransaction,
  BankTransactionBody,
  CardPaymentBody,
  PayinBody,
  PayoutBody,
  PixCharge,
  PixChargeBody,
  PixPaymentBody,
  SANDBOX_EXAMPLES,
} from "./schemas.ts";
import { Transaction } from "../rails/schemas.ts";

const tags = ["Sandbox"];
const envelope = <T extends z.ZodType>(description: string, schema: T) => ({
  201: jsonResponse(description, z.object({ data: schema })),
  ...bodyErrorResponses,
});

const post = <B extends z.ZodType, R extends z.ZodType>(
  operationId: string,
  path: string,
  summary: string,
  body: B,
  example: z.input<B>,
  answer: R,
) =>
  createRoute({
    method: "post",
    path,
    operationId,
    tags,
    summary,
    request: { body: jsonBody(body, example) },
    responses: envelope("Created", answer),
  });

const payin = post(
  "createSandboxPayin",
  "/api/sandbox/payins",
  "Funds for a subject arrive: identified (and exchange_created with exchange: true)",
  PayinBody,
  SANDBOX_EXAMPLES.payin,
  Transaction,
);
const payout = post(
  "createSandboxPayout",
  "/api/sandbox/payouts",
  "Pay a subject out: identified, then wire_created (or wire_waiting_correction with fail_with)",
  PayoutBody,
  SANDBOX_EXAMPLES.payout,
  Transaction,
);
const cardPayment = post(
  "createSandboxCardPayment",
  "/api/sandbox/card_payments",
  "A card payment: payment_approved or payment_failed",
  CardPaymentBody,
  SANDBOX_EXAMPLES.cardPayment,
  Transaction,
);
const pixCharge = post(
  "createSandboxPixCharge",
  "/api/sandbox/pix_charges",
  "Issue a dynamic PIX QR code (pending)",
  PixChargeBody,
  SANDBOX_EXAMPLES.pixCharge,
  PixCharge,
);
const payCharge = createRoute({
  operationId: "paySandboxPixCharge",
  method: "post",
  path: "/api/sandbox/pix_charges/{id}/pay",
  tags,
  summary: "Pay the QR code: identified, or payment_refunded for a refused third-party payer",
  middleware: [emptyBodyAsObject] as const,
  request: { params: IdParam, body: { ...jsonBody(PixPaymentBody, SANDBOX_EXAMPLES.pixPayment), required: false } },
  responses: envelope("Paid", Transaction),
});
const expireCharge = createRoute({
  operationId: "expireSandboxPixCharge",
  method: "post",
  path: "/api/sandbox/pix_charges/{id}/expire",
  tags,
  summary: "The QR code expires unpaid: payment_expired",
  request: { params: IdParam },
  responses: envelope("Expired", PixCharge),
});
const bankTransaction = post(
  "createSandboxBankTransaction",
  "/api/sandbox/bank_transactions",
  "A transfer from a payer: non_identified_bank_transaction, or identified when the payer is registered",
  BankTransactionBody,
  SANDBOX_EXAMPLES.bankTransaction,
  BankTransaction,
);

export function sandboxPaymentRoutes({ sql }: Deps) {
  return newRouter()
    .openapi(payin, async (c) => {
      // BEGIN and COMMIT in the writes of the pay-in's statements (docs/performance.md, "What changed")
      const row = await transaction(sql, (tx) => receivePayin(tx, c.get("companyId"), c.req.valid("json")));
      return c.json({ data: presentTransaction(row) }, 201);
    })
    .openapi(payout, async (c) => {
      const row = await sql.begin((tx) => sendPayout(tx, c.get("companyId"), c.req.valid("json")));
      return c.json({ data: presentTransaction(row) }, 201);
    }, alsoCheck(PayoutBody, (body, c) => checkPayout(sql, c.get("companyId"), body)))
    .openapi(cardPayment, async (c) => {
      const row = await sql.begin((tx) => recordCardPayment(tx, c.get("companyId"), c.req.valid("json")));
      return c.json({ data: presentTransaction(row) }, 201);
    })
    .openapi(pixCharge, async (c) => {
      const { charge, clock } = await sql.begin((tx) =>
        createPixChargeOnClock(tx, c.get("companyId"), c.req.valid("json"))
      );
      return c.json({ data: { ...presentPixCharge(charge), ...clock } }, 201);
    })
    .openapi(payCharge, async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json") ?? {};
      const row = await sql.begin((tx) => payPixCharge(tx, c.get("companyId"), id, input));
      return c.json({ data: presentTransaction(row) }, 201);
    })
    .openapi(expireCharge, async (c) => {
      const { id } = c.req.valid("param");
      const row = await sql.begin((tx) => expirePixCharge(tx, c.get("companyId"), id));
      return c.json({ data: presentPixCharge(row) }, 201);
    })
    .openapi(bankTransaction, async (c) => {
      const row = await sql.begin((tx) => receiveBankTransaction(tx, c.get("companyId"), c.req.valid("json")));
      return c.json({
        data: { ...presentBankTransaction(row), status: row.status, transaction_id: row.transaction_id },
      }, 201);
    }, alsoCheck(BankTransactionBody, (body) => checkBankTransaction(body)));
}
