import { z } from "@hono/zod-openapi";
import { COMPANY_DOCUMENT_TYPES } from "../../domain/subjects/company_rules.ts";
import { countryAlpha3 } from "../../domain/basics/countries.ts";
import { optionalText, requiredText } from "../openapi/schemas.ts";
import { contactFields, DocumentSummary } from "./schemas.ts";

const documentType = z.string().trim().toLowerCase().pipe(z.enum(COMPANY_DOCUMENT_TYPES))
  .openapi({ type: "string", enum: [...COMPANY_DOCUMENT_TYPES], example: "cnpj" });
// any country: a tax_id is of a country the other types do not cover
const fiscalCountry = z.string().transform((c) => countryAlpha3(c) ?? c)
  .pipe(z.string().refine((c) => countryAlpha3(c) !== null, "is not an ISO 3166-1 country code"))
  .openapi({ type: "string", example: "BRA", description: "ISO 3166-1 alpha-3 (alpha-2 accepted)" });

export const CompanyCreate = z.object({
  document_type: documentType,
  document_number: requiredText(40),
  social_name: requiredText(),
  fiscal_country: fiscalCountry,
  trade_name: optionalText(),
  ...contactFields,
}).openapi("CompanyCustomerCreate");

export const CompanyCreateBody = z.object({ company: CompanyCreate });

export const COMPANY_CREATE_EXAMPLE: z.input<typeof CompanyCreateBody> = {
  company: {
    document_type: "cnpj",
    document_number: "11.222.333/0001-81",
    social_name: "Comercio Exemplo Ltda",
    trade_name: "Exemplo",
    fiscal_country: "BRA",
    email: "financeiro@exemplo.com.br",
  },
};

/** PUT: every field optional; the tax id is the identity and cannot change. */
export const CompanyUpdate = z.object({
  social_name: requiredText().optional(),
  fiscal_country: fiscalCountry.optional(),
  trade_name: optionalText(),
  ...contactFields,
  document_number: z.unknown().optional(),
  document_type: z.unknown().optional(),
}).superRefine((p, ctx) => {
  for (const key of ["document_number", "document_type"] as const) {
    if (p[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "cannot be changed" });
  }
}).openapi("CompanyCustomerUpdate");

export const CompanyUpdateBody = z.object({ company: CompanyUpdate });

export const COMPANY_UPDATE_EXAMPLE: z.input<typeof CompanyUpdateBody> = {
  company: {
    trade_name: "Exemplo Pagamentos",
    phone_country_code: "55",
    phone_area_code: "11",
    phone_number: "30001000",
  },
};

const s = z.string();
const sn = z.string().nullable();
export const CompanyCustomer = z.object({
  id: z.string().uuid(),
  status: z.enum(["approved", "reproved", "waiting_approval"]),
  status_reason: z.string().optional().openapi({ description: "Only on the detail endpoint" }),
  clearance_level: z.number().int(),
  required_clearance_level: z.number().int(),
  social_name: s,
  trade_name: sn,
  document_type: z.enum(COMPANY_DOCUMENT_TYPES),
  document_number: s,
  fiscal_country: s,
  email: sn,
  website: sn,
  phone_country_code: sn,
  phone_area_code: sn,
  phone_number: sn,
  address_street: sn,
  address_number: sn,
  address_complement: sn,
  address_neighborhood: sn,
  address_postal_code: sn,
  address_city: sn,
  address_state: sn,
  address_country: sn,
  references: z.array(z.unknown()),
  documents: z.array(DocumentSummary),
  inserted_at: s.openapi({ example: "2026-11-21T07:00:00" }),
  updated_at: s.openapi({ example: "2026-11-21T07:00:00" }),
}).openapi("CompanyCustomer");
