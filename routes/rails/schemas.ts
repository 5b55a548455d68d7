/**
 * What every money route's schemas build on: a positive `amount`, a known `currency` and the transaction entry of a
 * subject's list. Apart from payment_schemas.ts because the sandbox's bodies and routes take them too.
 */

import { z } from "@hono/zod-openapi";
import { CURRENCIES } from "../../domain/rails/transactions.ts";
import { invalidFormat } from "../../domain/basics/errors.ts";
import { amountCheck } from "../openapi/schemas.ts";

/** A positive amount, required: a JSON number is read as its text, never as a float. */
export const amount = z.preprocess(
  (v) => typeof v === "number" ? String(v) : v,
  z.string().trim().min(1).superRefine(amountCheck("positive")),
  // what the money columns hold (numeric(20,2))
).pipe(z.string().regex(/^\d{1,18}(\.\d{1,2})?$/, invalidFormat("at most 18 digits before the dot", '"1500.00"')))
  .openapi({ type: "string", example: "1500.00" });
export const currency = z.string().trim().toUpperCase().pipe(z.enum(CURRENCIES))
  .openapi({ type: "string", enum: [...CURRENCIES], example: "BRL" });

const money = z.string().openapi({ example: "1500.00" });

/** What a transaction is; answered as `kind` and as `transaction_kind` (docs/sandbox.md, "`kind` and `transaction_kind`"). */
export const TransactionKindEnum = z.enum(["payin", "payout", "card_payment", "pix_charge", "refund"]);

/**
 * The kind filter of the transaction lists, under both names (docs/sandbox.md, "`kind` and `transaction_kind`"): each
 * list takes its own name and the other as an alias. `sameKind(alias)` refuses the two given with different values
 * (422 naming the alias); `kindOf` is the one the list filters by.
 */
export const KIND_FILTER = {
  kind: TransactionKindEnum.optional().openapi({ description: "Only transactions of this kind" }),
  transaction_kind: TransactionKindEnum.optional().openapi({ description: "The same as `kind`, by its other name" }),
};
type KindFilter = { kind?: string; transaction_kind?: string };
export const sameKind = (alias: keyof KindFilter) => (q: KindFilter, ctx: z.RefinementCtx) => {
  if (q.kind && q.transaction_kind && q.kind !== q.transaction_kind) {
    const other = alias === "kind" ? "transaction_kind" : "kind";
    ctx.addIssue({ code: "custom", path: [alias], message: `must be the same as ${other} when both are given` });
  }
};
export const kindOf = (q: KindFilter) => q.kind ?? q.transaction_kind;

export const Transaction = z.object({
  id: z.string().uuid(),
  kind: TransactionKindEnum,
  transaction_kind: TransactionKindEnum.openapi({ description: "The same as `kind`: the transactions API's name" }),
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
