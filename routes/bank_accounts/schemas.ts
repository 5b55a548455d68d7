/**
 * The OpenAPI shapes of a bank account, as sent and as returned, with their examples. Apart from the routes because
 * the rails' wires and payments embed the same account and the wire correction takes the same body.
 */

import { z } from "@hono/zod-openapi";
import { uuid } from "../openapi/schemas.ts";
import {
  ACCOUNT_TYPES,
  COLOMBIA_LABEL_NAMES,
  INTERNATIONAL_CURRENCIES,
  PIX_KEY_TYPES,
  SUBJECT_CURRENCIES,
} from "../../domain/bank_accounts/rules.ts";

/**
 * Only the shape is checked here (strings where strings go, objects where objects go); which fields each country
 * requires and what they must look like lives in domain/bank_accounts/rules.ts, so the wire correction can apply
 * the same rules (the routes run them even when this shape fails). `null` and "" count as absent.
 */
const text = (max = 255) => z.string().trim().max(max).nullish();

export const BankInput = z.object({
  code: text(10).openapi({ example: "341", description: "Brazil 3 digits; Mexico 3 or 4 digits" }),
  ispb: text(20).openapi({ example: "60701190", description: "Brazil: 8 digits" }),
  name: text().openapi({ example: "Itaú Unibanco S.A." }),
  swift: text(20).openapi({ example: "DEUTDEFF", description: "International: a BIC of 8 or 11 characters" }),
});

export const PixInfoInput = z.object({
  type: text(10).openapi({ type: ["string", "null"], enum: [...PIX_KEY_TYPES, null], example: "EMAIL" }),
  key: text(100).openapi({ example: "ana@example.com", description: "PHONE keys: + and the country code" }),
});

export const BankAccountInput = z.object({
  currency: text(10).openapi({
    type: ["string", "null"],
    enum: [...Object.keys(SUBJECT_CURRENCIES), ...INTERNATIONAL_CURRENCIES, null],
    example: "BRL",
    description: "BRL, MXN or COP (subject); USD or EUR (international)",
  }),
  owner_name: text(),
  owner_document_number: text(40),
  owner_document_type: text(20).openapi({ description: "cpf/cnpj, curp/rfc, cc/nit, tax_id" }),
  account_number: text(40).openapi({ description: "In Mexico the 18-digit CLABE" }),
  branch_number: text(20),
  branch_country: text(60).openapi({ example: "BRA", description: "ISO 3166-1 alpha-3 (alpha-2 accepted)" }),
  account_type: text(40).openapi({
    type: ["string", "null"],
    enum: [...ACCOUNT_TYPES, ...COLOMBIA_LABEL_NAMES, null],
    example: "conta-corrente",
    description: "Brazil conta-corrente or poupanca; Colombia also its own labels (any case)",
  }),
  routing_number: text(20),
  iban: text(50),
  aba: text(20),
  nickname: text(),
  bank: BankInput.nullish(),
  pix_info: PixInfoInput.nullish(),
}).openapi("BankAccountInput");

export const BankAccountBody = z.object({ bank_account: BankAccountInput });

/** A customer's account in Brazil, as registered or as the correction of a wire. */
export const SUBJECT_BANK_ACCOUNT_EXAMPLE: z.input<typeof BankAccountBody> = {
  bank_account: {
    currency: "BRL",
    owner_name: "Ana Souza",
    account_number: "123456",
    branch_number: "0001",
    account_type: "conta-corrente",
    bank: { code: "341", ispb: "60701190", name: "Itaú Unibanco S.A." },
  },
};

export const BANK_ACCOUNT_UPDATE_EXAMPLE: z.input<typeof BankAccountBody> = { bank_account: { nickname: "Salary" } };

export const INTERNATIONAL_BANK_ACCOUNT_EXAMPLE: z.input<typeof BankAccountBody> = {
  bank_account: {
    currency: "USD",
    account_number: "000123456789",
    owner_name: "Acme Inc",
    owner_document_number: "12-3456789",
    owner_document_type: "tax_id",
    routing_number: "021000021",
    bank: { swift: "CHASUS33", name: "JPMorgan Chase" },
  },
};

export const SubjectBankAccountParams = z.object({
  id: uuid.openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The person's id" }),
  bank_account_id: uuid.openapi({
    param: { name: "bank_account_id", in: "path" },
    format: "uuid",
    description: "The bank account's id",
  }),
});

const sn = z.string().nullable();

export const BankAccount = z.object({
  id: z.string().uuid(),
  currency: z.string(),
  account_type: sn,
  account_number: sn,
  branch_number: sn,
  branch_country: sn,
  routing_number: sn,
  iban: sn,
  aba: sn,
  nickname: sn,
  owner_name: sn,
  owner_document_number: sn,
  owner_document_type: sn,
  owner_company: z.object({ social_name: sn, id: z.string().uuid(), document_type: sn, document_number: sn }),
  intermediary_bank_account: z.null().optional().openapi({ description: "On create only" }),
  intermediary_bank_account_id: sn.optional().openapi({ description: "In list, update and detail" }),
  pix_info: z.object({ type: z.string(), key: z.string() }).nullable(),
  bank: z.object({ swift: sn, ispb: sn, name: sn, id: sn, code: sn, country: sn }),
  inserted_at: z.string().openapi({ example: "2026-11-21T07:00:00" }),
  updated_at: z.string().openapi({ example: "2026-11-21T07:00:00" }),
}).openapi("BankAccount");
