/**
 * The wire record the wire correction (rails/wires.ts) answers with, its destination account and company embedded.
 * Not the `WireView` of payment_schemas.ts, which `GET /api/v1/wires/{id}` answers.
 */

import { z } from "@hono/zod-openapi";
import { BankAccount } from "../bank_accounts/schemas.ts";

const sn = z.string().nullable();

/** The wire record: the destination carries a `company` sub-object besides the account fields. */
export const Wire = z.object({
  id: z.string().uuid(),
  currency: z.string(),
  value: z.string().openapi({ example: "1500.00" }),
  status: z.enum(["sent", "waiting_correction", "waiting_confirmation"]),
  inserted_at: z.string().openapi({ example: "2026-11-21T07:00:00" }),
  unretryable: z.boolean(),
  to_bank_account: BankAccount.extend({
    company: z.object({
      company_name: sn,
      document_number: sn,
      document_type: sn,
      fiscal_country: sn,
      id: z.string().uuid(),
      phone_number: sn,
      social_name: sn,
    }),
  }),
}).openapi("Wire");
