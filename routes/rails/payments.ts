/**
 * The transactions API: create, list, show, void and refund a transaction, the company's own bank accounts and their
 * balances, and a wire with the transactions it carries. The shapes are payment_schemas.ts.
 */

import { createRoute, z } from "@hono/zod-openapi";
import {
  accountBalance,
  createPayment,
  listPayments,
  loadPayment,
  loadRefund,
  presentPayment,
  presentVoid,
  refundPayment,
  voidPayment,
} from "../../domain/rails/payments.ts";
import {
  getOwnBankAccount,
  listOwnBankAccounts,
  presentOwnBankAccount,
} from "../../domain/bank_accounts/bank_accounts.ts";
import { getWireView } from "../../domain/rails/wires.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { bodyErrorResponses, errorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import {
  Balance,
  OwnBankAccount,
  Payment,
  PaymentListQuery,
  RefundParams,
  TRANSACTION_EXAMPLE,
  TransactionBody,
  Void,
  WireView,
} from "./payment_schemas.ts";
import { kindOf } from "./schemas.ts";

const tags = ["Transactions"];
const one = <T extends z.ZodType>(description: string, schema: T) =>
  jsonResponse(description, z.object({ data: schema }));

const create = createRoute({
  operationId: "createTransaction",
  method: "post",
  path: "/api/v1/transactions",
  tags,
  summary: "Create a pay-in (to your internal account; pending until paid) or a pay-out (to the subject's account)",
  request: { body: jsonBody(TransactionBody, TRANSACTION_EXAMPLE) },
  responses: { 201: one("The transaction", Payment), ...bodyErrorResponses },
});

const list = createRoute({
  operationId: "listTransactions",
  method: "get",
  path: "/api/v1/transactions",
  tags,
  summary: "Your transactions, newest first; filter by subject_id and status, page with last_id",
  request: { query: PaymentListQuery },
  responses: { 200: jsonResponse("A page", z.object({ data: z.array(Payment) })), ...errorResponses },
});

const show = createRoute({
  operationId: "getTransaction",
  method: "get",
  path: "/api/v1/transactions/{id}",
  tags,
  summary: "One transaction",
  request: { params: IdParam },
  responses: { 200: one("The transaction", Payment), ...errorResponses },
});

const cancel = createRoute({
  operationId: "voidTransaction",
  method: "get",
  path: "/api/v1/transactions/{id}/refund",
  tags,
  summary: "Void a pending transaction (422 for any other status)",
  request: { params: IdParam },
  responses: { 200: one("The cancellation", Void), ...errorResponses },
});

const refund = createRoute({
  operationId: "refundReceivedTransaction",
  method: "get",
  path: "/api/v1/transactions/{id}/refund_received_transaction",
  tags,
  summary: "Refund a received pay-in in full, once (emits payment_refunded); answers the refund",
  request: { params: IdParam },
  responses: { 200: one("The refund, a transaction of its own", Payment), ...errorResponses },
});

const refundShow = createRoute({
  operationId: "getRefund",
  method: "get",
  path: "/api/v1/transactions/{id}/refund_received_transaction/{refund_id}",
  tags,
  summary: "A refund of the pay-in",
  request: { params: RefundParams },
  responses: { 200: one("The refund", Payment), ...errorResponses },
});

const ownAccounts = createRoute({
  operationId: "listOwnBankAccounts",
  method: "get",
  path: "/api/v1/bank_accounts",
  tags: ["Bank accounts"],
  summary: "Your company's own accounts: one internal account per currency, and the international ones you registered",
  responses: { 200: jsonResponse("The accounts", z.object({ data: z.array(OwnBankAccount) })), ...errorResponses },
});

const ownAccount = createRoute({
  operationId: "getOwnBankAccount",
  method: "get",
  path: "/api/v1/bank_accounts/{id}",
  tags: ["Bank accounts"],
  summary: "One of your company's own accounts",
  request: { params: IdParam },
  responses: { 200: one("The account", OwnBankAccount), ...errorResponses },
});

const balance = createRoute({
  operationId: "getOwnBankAccountBalance",
  method: "get",
  path: "/api/v1/bank_accounts/{id}/balance",
  tags: ["Bank accounts"],
  summary: "What credited and debited one of your own accounts, and the balance",
  request: { params: IdParam },
  responses: { 200: one("The balance", Balance), ...errorResponses },
});

const wire = createRoute({
  operationId: "getWire",
  method: "get",
  path: "/api/v1/wires/{id}",
  tags: ["Wires"],
  summary: "A wire and the transactions it carries",
  request: { params: IdParam },
  responses: { 200: one("The wire", WireView), ...errorResponses },
});

export function paymentRoutes({ sql, config }: Deps) {
  return newRouter()
    .openapi(create, async (c) => {
      const companyId = c.get("companyId");
      const input = c.req.valid("json").transaction;
      const made = await sql.begin((tx) => createPayment(tx, companyId, input, { sandbox: config.sandbox }));
      return c.json({ data: await presentPayment(sql, companyId, made) }, 201);
    })
    .openapi(list, async (c) => {
      const companyId = c.get("companyId");
      const query = c.req.valid("query");
      const page = await listPayments(sql, companyId, { ...query, kind: kindOf(query) });
      return c.json({ data: await Promise.all(page.map((p) => presentPayment(sql, companyId, p))) }, 200);
    })
    .openapi(show, async (c) => {
      const companyId = c.get("companyId");
      const loaded = await loadPayment(sql, companyId, c.req.valid("param").id);
      return c.json({ data: await presentPayment(sql, companyId, loaded) }, 200);
    })
    .openapi(cancel, async (c) => {
      const companyId = c.get("companyId");
      const row = await sql.begin((tx) => voidPayment(tx, companyId, c.req.valid("param").id));
      return c.json({ data: await presentVoid(sql, companyId, row) }, 200);
    })
    .openapi(refund, async (c) => {
      const companyId = c.get("companyId");
      const made = await sql.begin((tx) => refundPayment(tx, companyId, c.req.valid("param").id));
      return c.json({ data: await presentPayment(sql, companyId, made) }, 200);
    })
    .openapi(refundShow, async (c) => {
      const companyId = c.get("companyId");
      const { id, refund_id } = c.req.valid("param");
      return c.json(
        { data: await presentPayment(sql, companyId, await loadRefund(sql, companyId, id, refund_id)) },
        200,
      );
    })
    .openapi(ownAccounts, async (c) => {
      const rows = await listOwnBankAccounts(sql, c.get("companyId"));
      return c.json({ data: rows.map(presentOwnBankAccount) }, 200);
    })
    .openapi(ownAccount, async (c) => {
      const row = await getOwnBankAccount(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentOwnBankAccount(row) }, 200);
    })
    .openapi(balance, async (c) => {
      return c.json({ data: await accountBalance(sql, c.get("companyId"), c.req.valid("param").id) }, 200);
    })
    .openapi(wire, async (c) => {
      return c.json({ data: await getWireView(sql, c.get("companyId"), c.req.valid("param").id) }, 200);
    });
}
