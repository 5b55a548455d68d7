import type { Sql, Tx } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import type { DocumentSummary } from "./documents.ts";
import { checkTaxId } from "../basics/tax_ids.ts";
import { type CompanyDocumentType, fiscalCountryError } from "./company_rules.ts";
import { PAGE_SIZE, selectSubjects } from "./people.ts";
import { type StoredQuotas, takeRoom, withinQuotas } from "./quotas.ts";

/**
 * Company customers of an integrator (README, "Company customers"): subjects like people, in the same table, so
 * every route that takes a subject id takes a company's. Registration is an upsert on the tax id, as for people.
 */

const EDITABLE = [
  "social_name",
  "trade_name",
  "fiscal_country",
  "email",
  "website",
  "phone_country_code",
  "phone_area_code",
  "phone_number",
  "address_street",
  "address_number",
  "address_complement",
  "address_neighborhood",
  "address_postal_code",
  "address_city",
  "address_state",
  "address_country",
] as const;
type Editable = typeof EDITABLE[number];

export type CompanyCreateInput =
  & { document_type: CompanyDocumentType; document_number: string; social_name: string; fiscal_country: string }
  & { [K in Exclude<Editable, "social_name" | "fiscal_country">]?: string | null };
export type CompanyUpdateInput = { [K in Editable]?: string | null };

export type CompanyRow =
  & {
    id: string;
    company_id: string;
    status: "approved" | "reproved" | "waiting_approval";
    status_reason: string;
    clearance_level: number;
    required_clearance_level: number;
    document_type: CompanyDocumentType;
    document_number: string;
    social_name: string;
    fiscal_country: string;
    documents: DocumentSummary[];
    inserted_at: Date;
    updated_at: Date;
  }
  & { [K in Exclude<Editable, "social_name" | "fiscal_country">]: string | null };

/** The company-customer object of every answer; `status_reason` only on the detail endpoint. */
export function presentCompany(c: CompanyRow, opts: { detail?: boolean } = {}) {
  return {
    id: c.id,
    status: c.status,
    ...(opts.detail ? { status_reason: c.status === "reproved" ? c.status_reason : "" } : {}),
    clearance_level: c.clearance_level,
    required_clearance_level: c.required_clearance_level,
    social_name: c.social_name,
    trade_name: c.trade_name,
    document_type: c.document_type,
    document_number: c.document_number,
    fiscal_country: c.fiscal_country,
    email: c.email,
    website: c.website,
    phone_country_code: c.phone_country_code,
    phone_area_code: c.phone_area_code,
    phone_number: c.phone_number,
    address_street: c.address_street,
    address_number: c.address_number,
    address_complement: c.address_complement,
    address_neighborhood: c.address_neighborhood,
    address_postal_code: c.address_postal_code,
    address_city: c.address_city,
    address_state: c.address_state,
    address_country: c.address_country,
    references: [] as unknown[],
    documents: c.documents,
    inserted_at: naiveUtc(c.inserted_at),
    updated_at: naiveUtc(c.updated_at),
  };
}

const values = (input: Partial<Record<Editable, string | null | undefined>>, keepNull: boolean) => {
  const out: Partial<Record<Editable, string | null>> = {};
  for (const key of EDITABLE) {
    const v = input[key];
    if (v !== undefined && (keepNull || v !== null)) out[key] = v;
  }
  return out;
};

/**
 * The rules a registration must satisfy besides its shape: the tax id (check digits), and the fiscal country it
 * implies. Fields left out are not judged, so a body whose shape failed can still be checked on the rest.
 */
export function checkCompanyRegistration(input: Partial<CompanyCreateInput>): string {
  const bag = new ErrorBag();
  let documentNumber = input.document_number ?? "";
  if (input.document_type && input.document_number != null) {
    const doc = checkTaxId(input.document_type, input.document_number);
    if ("error" in doc) bag.add("document_number", doc.error);
    else documentNumber = doc.value;
  }
  if (input.document_type && input.fiscal_country) {
    const error = fiscalCountryError(input.document_type, input.fiscal_country);
    if (error) bag.add("fiscal_country", error);
  }
  bag.throwIfAny(422);
  return documentNumber;
}

/**
 * POST /subject/companies: registers a company customer, or updates the one with the same tax id (same id). A new one
 * takes room in the company's subjects quota, shared with people (`quotas.ts`), in the same statement.
 */
export async function registerCompany(sql: Sql, companyId: string, input: CompanyCreateInput, quotas: StoredQuotas) {
  const documentNumber = checkCompanyRegistration(input);
  const fields = values(input, false);
  const row = {
    id: newId(),
    company_id: companyId,
    kind: "company",
    document_type: input.document_type,
    document_number: documentNumber,
    ...fields,
  };
  const updates = Object.keys(fields) as Editable[];
  const [saved] = await withinQuotas(quotas, () =>
    sql<{ id: string; created: boolean }[]>`
      with saved as (
        insert into people ${sql(row)}
        on conflict (company_id, document_type, document_number)
        do update set ${sql(fields, updates)}, updated_at = now()
        returning id, (xmax = 0) as created
      )
      select * from saved
      where case when saved.created then ${takeRoom(sql, companyId, quotas, { people: 1 })} else true end`);
  return { company: await getCompany(sql, companyId, saved.id), created: saved.created };
}

/** A company customer of the company; a person's id is not found here. */
export async function getCompany(sql: Tx, companyId: string, id: string): Promise<CompanyRow> {
  const [row] = await sql<CompanyRow[]>`
    ${selectSubjects(sql)} where p.company_id = ${companyId} and p.id = ${id} and p.kind = 'company'`;
  if (!row) throw notFound();
  return row;
}

export function listCompanies(sql: Sql, companyId: string, lastId: string | undefined): Promise<CompanyRow[]> {
  return sql<CompanyRow[]>`
    ${selectSubjects(sql)}
    where p.company_id = ${companyId} and p.kind = 'company' ${lastId ? sql`and p.id > ${lastId}` : sql``}
    order by p.id
    limit ${PAGE_SIZE}`;
}

/** PUT /subject/companies/:id: given fields change, omitted ones stay, null clears; the tax id cannot change. */
export async function updateCompany(sql: Sql, companyId: string, id: string, patch: CompanyUpdateInput) {
  return await sql.begin(async (tx) => {
    const current = await getCompany(tx, companyId, id);
    const fields = values(patch, true);
    if (fields.fiscal_country) {
      const error = fiscalCountryError(current.document_type, fields.fiscal_country);
      const bag = new ErrorBag();
      if (error) bag.add("fiscal_country", error);
      bag.throwIfAny(422);
    }
    const keys = Object.keys(fields) as Editable[];
    if (keys.length) {
      await tx`update people set ${tx(fields, keys)}, updated_at = now()
               where company_id = ${companyId} and id = ${id} and kind = 'company'`;
    }
    return await getCompany(tx, companyId, id);
  });
}
