/**
 * Sandbox routes for a pending pay-in: the payer pays it, or it expires unpaid (docs/sandbox.md). Both answer 201, as
 * every sandbox action does (docs/sandbox.md, "Common to every call").
 */

import { createRoute, z } from "@hono/zod-openapi";
import { expirePayment, payPayment, presentPayment } from "../../domain/rails/payments.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { emptyBodyAsObject } from "../policy/optional_body.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import { PayBody, Payment } from "../rails/payment_schemas.ts";

const one = <T extends z.ZodType>(description: string, schema: T) =>
  jsonResponse(description, z.object({ data: schema }));

const sandboxPay = createRoute({
  operationId: "paySandboxTransaction",
  method: "post",
  path: "/api/sandbox/transactions/{id}/pay",
  tags: ["Sandbox"],
  summary: "The payer pays a pending pay-in: identified (or, a third party refused, payment_refunded)",
  middleware: [emptyBodyAsObject] as const,
  request: { params: IdParam, body: jsonBody(PayBody, { payer_document_number: null }) },
  responses: { 201: one("The transaction", Payment), ...bodyErrorResponses },
});

const sandboxExpire = createRoute({
  operationId: "expireSandboxTransaction",
  method: "post",
  path: "/api/sandbox/transactions/{id}/expire",
  tags: ["Sandbox"],
  summary: "A pending pay-in was not paid in time: payment_expired",
  request: { params: IdParam },
  responses: { 201: one("The transaction", Payment), ...bodyErrorResponses },
});

/** The sandbox's side of the transactions API: the bank paying or expiring a pending pay-in. */
export function sandboxTransactionRoutes({ sql }: Deps) {
  return newRouter()
    .openapi(sandboxPay, async (c) => {
      const companyId = c.get("companyId");
      const { id } = c.req.valid("param");
      const paid = await sql.begin((tx) => payPayment(tx, companyId, id, c.req.valid("json")));
      return c.json({ data: await presentPayment(sql, companyId, paid) }, 201);
    })
    .openapi(sandboxExpire, async (c) => {
      const companyId = c.get("companyId");
      const expired = await sql.begin((tx) => expirePayment(tx, companyId, c.req.valid("param").id));
      return c.json({ data: await presentPayment(sql, companyId, expired) }, 201);
    });
}
