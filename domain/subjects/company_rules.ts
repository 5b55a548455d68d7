/**
 * The identity of a company customer: which tax ids it registers with, and the fiscal country each implies. The
 * tax ids themselves (format, check digits) are checked in domain/basics/tax_ids.ts.
 */
import { COUNTRY_OF_TAX_ID } from "../basics/tax_ids.ts";

export const COMPANY_DOCUMENT_TYPES = ["cnpj", "rfc", "nit", "rut", "tax_id"] as const;
export type CompanyDocumentType = typeof COMPANY_DOCUMENT_TYPES[number];

/** A tax id of one country must be registered with that country as the fiscal one; a tax_id is any other's. */
export function fiscalCountryError(type: CompanyDocumentType, fiscalCountry: string): string | null {
  const expected = COUNTRY_OF_TAX_ID[type];
  return expected && expected !== fiscalCountry ? `must be ${expected} for a ${type}` : null;
}
