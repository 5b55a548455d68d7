/**
 * The bodies and objects of both kinds of subject, people and company customers: one zod schema per body, used by
 * the validator and the OpenAPI document. What the kinds share is written once below; each kind declares its
 * document types, fiscal countries and own fields.
 */

import { z } from "@hono/zod-openapi";
import { DOCUMENT_TYPES, FISCAL_COUNTRIES, toAlpha3 } from "../../domain/subjects/person_rules.ts";
import { COMPANY_DOCUMENT_TYPES } from "../../domain/subjects/company_rules.ts";
import { KINDS } from "../../domain/subjects/subjects.ts";
import { rfcPfProblem } from "../../domain/basics/tax_ids.ts";
import { countryAlpha3, oneOfCountries, unknownCountry } from "../../domain/basics/countries.ts";
import { invalidFormat } from "../../domain/basics/errors.ts";
import { decimalString, optionalText, requiredText } from "../openapi/schemas.ts";
import { DocumentInput } from "./document_schemas.ts";

/** `02/01/1990` is the usual miss: the refusal shows the order of the parts with a date that cannot be misread. */
export const BIRTH_DATE_FORMAT = invalidFormat("YYYY-MM-DD", "1990-01-02");

const birthDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: BIRTH_DATE_FORMAT, abort: true }).refine(
  (s) => {
    const d = new Date(`${s}T00:00:00Z`);
    // year 0000 parses in JavaScript, but no calendar (nor Postgres) has it
    return !s.startsWith("0000") && !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
  },
  { message: "is invalid: no such day in the calendar", abort: true },
).refine((s) => new Date(`${s}T00:00:00Z`).getTime() <= Date.now(), "is invalid: in the future");

export const nullable = <T extends z.ZodType>(s: T) => s.nullish();

/** How a customer, person or company, is reached: optional, shared by registration and update of both. */
export const contactFields = {
  email: nullable(z.string().trim().max(254).pipe(z.email())),
  website: nullable(
    z.string().trim().max(2048).regex(
      /^[hH][tT][tT][pP][sS]?:\/\/[^\s/$.?#][^\s]*$/,
      invalidFormat("an http:// or https:// URL", "https://example.com"),
    ),
  ),
  phone_country_code: nullable(z.string().trim().regex(/^\d{2}$/, invalidFormat("2 digits", "55"))),
  phone_area_code: nullable(z.string().trim().regex(/^\d{1,5}$/, invalidFormat("1 to 5 digits", "11"))),
  phone_number: nullable(z.string().trim().regex(/^\d{4,15}$/, invalidFormat("4 to 15 digits", "987654321"))),
  address_street: optionalText(),
  address_number: optionalText(50),
  address_complement: optionalText(),
  address_neighborhood: optionalText(),
  address_postal_code: optionalText(20),
  address_city: optionalText(),
  address_state: nullable(z.string().trim().toUpperCase().max(50)),
  address_country: optionalText(100),
};

/** A document type, matched without regard to case or surrounding spaces. */
const documentType = <T extends readonly [string, ...string[]]>(types: T, example: T[number]) =>
  z.string().trim().toLowerCase().pipe(z.enum(types)).openapi({ type: "string", enum: [...types], example });

/** POST: the identity pair, the name and the fiscal country, then the kind's own fields. */
function createBody<D extends z.ZodType, C extends z.ZodType, F extends z.ZodRawShape>(
  identity: { document_type: D; fiscal_country: C },
  fields: F,
) {
  return z.object({
    document_number: requiredText(40),
    document_type: identity.document_type,
    social_name: requiredText(),
    fiscal_country: identity.fiscal_country,
    ...fields,
  });
}

/** PUT: every field optional; the document pair is the identity and cannot change. */
function updateBody<C extends z.ZodType, F extends z.ZodRawShape>(fiscalCountry: C, fields: F) {
  return z.object({
    social_name: requiredText().optional(),
    fiscal_country: fiscalCountry.optional(),
    ...fields,
    document_number: z.unknown().optional(),
    document_type: z.unknown().optional(),
  }).superRefine((p: { document_number?: unknown; document_type?: unknown }, ctx) => {
    for (const key of ["document_number", "document_type"] as const) {
      if (p[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "cannot be changed" });
    }
  }, {
    // said even when other fields failed: one answer lists every error
    when: (payload: { value: unknown }) => typeof payload.value === "object" && payload.value !== null,
  } as never);
}

export const DocumentSummary = z.object({
  id: z.string().uuid(),
  labels: z.array(z.string()),
  file_type: z.string(),
  file_name: z.string().nullable(),
  file_url: z.string().nullable(),
  size: z.number().int().nullable(),
  inserted_at: z.string(),
});

const s = z.string();
const sn = z.string().nullable();

/**
 * The subject object of one kind: its `shown` fields (`KINDS` in domain/subjects/subjects.ts, the presenter's
 * order) nullable strings unless `fields` says otherwise.
 */
function subjectObject<F extends Readonly<Record<string, z.ZodType>>, K extends keyof typeof KINDS>(
  kind: K,
  noun: string,
  fields: F,
) {
  const shown = Object.fromEntries(KINDS[kind].shown.map((f) => [f, sn])) as {
    [N in typeof KINDS[K]["shown"][number]]: typeof sn;
  };
  // assigning a key the object already has keeps its place: the order stays the presenter's
  const shape = { ...shown, ...fields } as Omit<typeof shown, keyof F> & F;
  return z.object({
    id: z.string().uuid(),
    status: z.enum(["approved", "reproved", "waiting_approval"]),
    status_reason: z.string().optional().openapi({ description: `Only on the ${noun} detail endpoint` }),
    clearance_level: z.number().int(),
    required_clearance_level: z.number().int(),
    ...shape,
    references: z.array(z.unknown()),
    documents: z.array(DocumentSummary),
    inserted_at: s.openapi({ example: "2026-11-21T07:00:00" }),
    updated_at: s.openapi({ example: "2026-11-21T07:00:00" }),
  });
}

const identityShown = { social_name: s, document_number: s, fiscal_country: s };

// People

const personFiscalCountry = z.string().transform(toAlpha3)
  .pipe(z.enum(FISCAL_COUNTRIES, { error: oneOfCountries(FISCAL_COUNTRIES) }))
  .openapi({
    type: "string",
    enum: [...FISCAL_COUNTRIES],
    example: "BRA",
    description: "ISO 3166-1 alpha-3 (alpha-2 accepted)",
  });

/** Optional fields of a person, shared by registration and update. */
const personFields = {
  // what is wrong with it (characters, length, which part) is said by the rule of tax_ids.ts
  rfc_pf: nullable(
    z.string().trim().toUpperCase().superRefine((rfc, ctx) => {
      const problem = rfcPfProblem(rfc);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
  ),
  birth_date: nullable(birthDate),
  net_monthly_average_income: nullable(decimalString).openapi({ type: ["string", "null"], example: "1500.00" }),
  ...contactFields,
};

export const PersonCreate = createBody(
  { document_type: documentType(DOCUMENT_TYPES, "cpf"), fiscal_country: personFiscalCountry },
  { ...personFields, documents: z.array(DocumentInput).max(20).nullish() },
).openapi("PersonCreate");

export const PersonCreateBody = z.object({ person: PersonCreate });

export const PERSON_CREATE_EXAMPLE: z.input<typeof PersonCreateBody> = {
  person: {
    document_number: "52998224725",
    document_type: "cpf",
    social_name: "Ana Souza",
    fiscal_country: "BRA",
    email: "ana@example.com",
    birth_date: "1990-05-17",
    address_city: "São Paulo",
    address_state: "SP",
  },
};

export const PersonUpdate = updateBody(personFiscalCountry, personFields).openapi("PersonUpdate");

export const PersonUpdateBody = z.object({ person: PersonUpdate });

export const PERSON_UPDATE_EXAMPLE: z.input<typeof PersonUpdateBody> = {
  person: {
    email: "ana.souza@example.com",
    phone_country_code: "55",
    phone_area_code: "11",
    phone_number: "987654321",
  },
};

export type PersonCreateInput = z.output<typeof PersonCreate>;
export type PersonUpdateInput = z.output<typeof PersonUpdate>;

export const Person = subjectObject("person", "person", { ...identityShown, document_type: s }).openapi("Person");

// Company customers

// any country: a tax_id is of a country the other types do not cover
const companyFiscalCountry = z.string().transform((c) => countryAlpha3(c) ?? c)
  .pipe(
    z.string().superRefine((c, ctx) => {
      if (countryAlpha3(c) === null) {
        ctx.addIssue({ code: "custom", message: `is not an ISO 3166-1 country code: ${unknownCountry(c)}` });
      }
    }),
  )
  .openapi({ type: "string", example: "BRA", description: "ISO 3166-1 alpha-3 (alpha-2 accepted)" });

const companyFields = { trade_name: optionalText(), ...contactFields };

export const CompanyCreate = createBody(
  { document_type: documentType(COMPANY_DOCUMENT_TYPES, "cnpj"), fiscal_country: companyFiscalCountry },
  companyFields,
).openapi("CompanyCustomerCreate");

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

export const CompanyUpdate = updateBody(companyFiscalCountry, companyFields).openapi("CompanyCustomerUpdate");

export const CompanyUpdateBody = z.object({ company: CompanyUpdate });

export const COMPANY_UPDATE_EXAMPLE: z.input<typeof CompanyUpdateBody> = {
  company: {
    trade_name: "Exemplo Pagamentos",
    phone_country_code: "55",
    phone_area_code: "11",
    phone_number: "30001000",
  },
};

export const CompanyCustomer = subjectObject("company", "company customer", {
  ...identityShown,
  document_type: z.enum(COMPANY_DOCUMENT_TYPES),
}).openapi("CompanyCustomer");
