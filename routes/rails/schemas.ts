import { z } from "@hono/zod-openapi";

const money = z.string().openapi({ example: "1500.00" });

export const Transaction = z.object({
  id: z.string().uuid(),
  kind: z.enum(["payin", "payout", "card_payment", "pix_charge"]),
  status: z.string().openapi({ example: "identified" }),
  currency: z.string(),
  value: money,
  usd_value: money,
  cleared: z.boolean(),
  exchange_id: z.string().uuid().nullable(),
  wire_id: z.string().uuid().nullable(),
  inserted_at: z.string().openapi({ example: "2026-11-21T07:00:00" }),
}).openapi("Transaction");

export const TransactionValue = z.object({
  currency: z.string(),
  value: money,
  usd_value: money,
  count: z.number().int(),
}).openapi("TransactionValue");
