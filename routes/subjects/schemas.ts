import { z } from "@hono/zod-openapi";
import { DOCUMENT_TYPES, FISCAL_COUNTRIES, toAlpha3 } from "../../domain/subjects/person_rules.ts";
import { RFC_PF_RE } from "../../domain/basics/tax_ids.ts";
import { decimalString, optionalText, requiredText } from "../openapi/schemas.ts";
import { DocumentInput } from "./document_schemas.ts";

const documentType = z.string().trim().toLowerCase().pipe(z.enum(DOCUMENT_TYPES))
  .openapi({ type: "string", enum: [...DOCUMENT_TYPES], example: "cpf" });
const fiscalCountry = z.string().transform(toAlpha3).pipe(z.enum(FISCAL_COUNTRIES))
  .openapi({
    type: "string",
    enum: [...FISCAL_COUNTRIES],
    example: "BRA",
    description: "ISO 3166-1 alpha-3 (alpha-2 accepted)",
  });

const birthDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: "has invalid format", abort: true }).refine(
  (s) => {
    const d = new Date(`${s}T00:00:00Z`);
    // year 0000 parses in JavaScript, but no calendar (nor Postgres) has it
    return !s.startsWith("0000") && !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s) &&
      d.getTime() <= Date.now();
  },
  "is invalid",
);

export const nullable = <T extends z.ZodType>(s: T) => s.nullish();

/** How a customer, person or company, is reached: optional, shared by registration and update of both. */
export const contactFields = {
  email: nullable(z.string().trim().max(254).pipe(z.email())),
  website: nullable(
    z.string().trim().max(2048).regex(/^[hH][tT][tT][pP][sS]?:\/\/[^\s/$.?#][^\s]*$/, "has invalid format"),
  ),
  phone_country_code: nullable(z.string().trim().regex(/^\d{2}$/, "has invalid format")),
  phone_area_code: nullable(z.string().trim().regex(/^\d{1,5}$/, "has invalid format")),
  phone_number: nullable(z.string().trim().regex(/^\d{4,15}$/, "has invalid format")),
  address_street: optionalText(),
  address_number: optionalText(50),
  address_complement: optionalText(),
  address_neighborhood: optionalText(),
  address_postal_code: optionalText(20),
  address_city: optionalText(),
  address_state: nullable(z.string().trim().toUpperCase().max(50)),
  address_country: optionalText(100),
};

/** Optional fields of a person, shared by registration and update. */
const optionalFields = {
  rfc_pf: nullable(z.string().trim().toUpperCase().regex(RFC_PF_RE, "has invalid format")),
  birth_date: nullable(birthDate),
  net_monthly_average_income: nullable(decimalString).openapi({ type: ["string", "null"], example: "1500.00" }),
  ...contactFields,
};

export const PersonCreate = z.object({
  document_number: requiredText(40),
  document_type: documentType,
  social_name: requiredText(),
  fiscal_country: fiscalCountry,
  ...optionalFields,
  documents: z.array(DocumentInput).max(20).nullish(),
})
  .openapi("PersonCreate");

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

/** PUT: every field optional; the document pair is the identity and cannot change. */
export const PersonUpdate = z.object({
  social_name: requiredText().optional(),
  fiscal_country: fiscalCountry.optional(),
  ...optionalFields,
  document_number: z.unknown().optional(),
  document_type: z.unknown().optional(),
}).superRefine((p, ctx) => {
  for (const key of ["document_number", "document_type"] as const) {
    if (p[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "cannot be changed" });
  }
}, {
  // said even when other fields failed: one answer lists every error
  when: (payload: { value: unknown }) => typeof payload.value === "object" && payload.value !== null,
} as never).openapi("PersonUpdate");

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
export const Person = z.object({
  id: z.string().uuid(),
  status: z.enum(["approved", "reproved", "waiting_approval"]),
  status_reason: z.string().optional().openapi({ description: "Only on the person detail endpoint" }),
  clearance_level: z.number().int(),
  required_clearance_level: z.number().int(),
  social_name: s,
  document_type: s,
  document_number: s,
  fiscal_country: s,
  rfc_pf: sn,
  email: sn,
  phone_country_code: sn,
  phone_area_code: sn,
  phone_number: sn,
  birth_date: sn,
  net_monthly_average_income: sn,
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
}).openapi("Person");
