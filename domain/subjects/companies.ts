/**
 * Company customers of an integrator (docs/api.md, "Company customers"): subjects of kind `company`, in the same table
 * as people, so every route that takes a subject id takes a company's; `subjects.ts` holds what they share.
 * Registration is an upsert on the tax id, as for people. Theirs alone: the tax id implies the fiscal country.
 */
import type { Sql } from "../infra/db.ts";
import { ErrorBag } from "../basics/errors.ts";
import { checkTaxId } from "../basics/tax_ids.ts";
import { fiscalCountryError } from "./company_rules.ts";
import { type StoredQuotas, withinQuotas } from "./quotas.ts";
import { getSubjectOf, type PatchCheck, saveSubject, type SubjectCreateInput, subjectUpdates } from "./subjects.ts";

type CompanyCreateInput = SubjectCreateInput<"company">;

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
  const saved = await withinQuotas(
    quotas,
    () => saveSubject(sql, "company", companyId, input, documentNumber, { quotas }),
  );
  return { subject: await getSubjectOf(sql, "company", companyId, saved.id), created: saved.created };
}

/** The tax id cannot change, so a new fiscal country must still be the one it implies. */
const checkPatch: PatchCheck<"company"> = (current, fields, bag) => {
  const error = fields.fiscal_country ? fiscalCountryError(current.document_type, fields.fiscal_country) : null;
  if (error) bag.add("fiscal_country", error);
};

/** PUT /subject/companies/:id (`update`; the tax id cannot change), and its rules without writing (`check`). */
export const companyUpdates = subjectUpdates("company", checkPatch);
