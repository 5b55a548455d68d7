/** Sandbox routes for automatic PIX subscriptions: create one, pay its next invoice, cancel it (docs/sandbox.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { cancelSubscription, payInvoice, presentSubscription } from "../../domain/rails/subscriptions.ts";
import { createSubscriptionOnClock } from "../../domain/rails/test_clocks.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { emptyBodyAsObject } from "../policy/optional_body.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import { CancelSubscriptionBody, SANDBOX_EXAMPLES, Subscription, SubscriptionBody } from "./schemas.ts";

const tags = ["Sandbox"];
const responses = { 201: jsonResponse("The subscription", z.object({ data: Subscription })), ...bodyErrorResponses };

const create = createRoute({
  operationId: "createSandboxSubscription",
  method: "post",
  path: "/api/sandbox/subscriptions",
  tags,
  summary: "An automatic PIX subscription awaiting authorization: subscription_qr_code_generated",
  request: { body: jsonBody(SubscriptionBody, SANDBOX_EXAMPLES.subscription) },
  responses,
});

const pay = createRoute({
  operationId: "paySandboxSubscriptionInvoice",
  method: "post",
  path: "/api/sandbox/subscriptions/{id}/pay_invoice",
  tags,
  summary: "The next invoice is paid: invoice_paid; the first activates, the last completes the subscription",
  request: { params: IdParam },
  responses,
});

const cancel = createRoute({
  operationId: "cancelSandboxSubscription",
  method: "post",
  path: "/api/sandbox/subscriptions/{id}/cancel",
  tags,
  summary: "Cancelled by the merchant or the payer: subscription_canceled",
  middleware: [emptyBodyAsObject] as const,
  request: {
    params: IdParam,
    body: { ...jsonBody(CancelSubscriptionBody, SANDBOX_EXAMPLES.cancelSubscription), required: false },
  },
  responses,
});

export function sandboxSubscriptionRoutes({ sql }: Deps) {
  return newRouter()
    .openapi(create, async (c) => {
      const { subscription, clock } = await sql.begin((tx) =>
        createSubscriptionOnClock(tx, c.get("companyId"), c.req.valid("json"))
      );
      return c.json({ data: { ...presentSubscription(subscription), ...clock } }, 201);
    })
    .openapi(pay, async (c) => {
      const { id } = c.req.valid("param");
      const { subscription, invoice } = await sql.begin((tx) => payInvoice(tx, c.get("companyId"), id));
      return c.json({ data: presentSubscription(subscription, invoice) }, 201);
    })
    .openapi(cancel, async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json") ?? {};
      const row = await sql.begin((tx) => cancelSubscription(tx, c.get("companyId"), id, input));
      return c.json({ data: presentSubscription(row) }, 201);
    });
}
