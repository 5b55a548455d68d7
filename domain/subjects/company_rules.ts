import { isValidCNPJ } from "@brazilian-utils/brazilian-utils";
import { validate as isValidRut } from "rut.js";
import rfcModule from "validate-rfc";
import { bareDocument } from "./person_rules.ts";

// the package's types describe an ES default export; loaded from CommonJS, its export is the function itself
const validateRfc = rfcModule as unknown as (rfc: string) => { isValid: boolean; type?: string };

/**
 * The identity of a company customer: its tax id by country. Pure rules, shared by the request schema and the
 * domain. Check digits come from maintained libraries where one exists (CNPJ, RFC, RUT) and from DIAN's published
 * algorithm for the NIT, which bank-account owners use too.
 */
export const COMPANY_DOCUMENT_TYPES = ["cnpj", "rfc", "nit", "rut", "tax_id"] as const;
export type CompanyDocumentType = typeof COMPANY_DOCUMENT_TYPES[number];

/** The country each tax id belongs to; a tax_id is any other country's. */
export const COUNTRY_OF_DOCUMENT: Partial<Record<CompanyDocumentType, string>> = {
  cnpj: "BRA",
  rfc: "MEX",
  nit: "COL",
  rut: "CHL",
};

const NIT_WEIGHTS = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43, 47, 53, 59, 67, 71];

/** DIAN's NIT check digit: prime weights from the rightmost digit, sum mod 11, then 11 - r when r > 1. */
export function nitCheckDigit(base: string): number {
  let sum = 0;
  for (let i = 0; i < base.length; i++) sum += Number(base[base.length - 1 - i]) * NIT_WEIGHTS[i];
  const r = sum % 11;
  return r > 1 ? 11 - r : r;
}

/** A NIT of 9 digits, or 9 digits and its check digit (10 in all), the check digit verified. */
export function isValidNit(n: string): boolean {
  if (/^\d{9}$/.test(n)) return true;
  return /^\d{10}$/.test(n) && nitCheckDigit(n.slice(0, 9)) === Number(n[9]);
}
/** The stored form of a company's tax id, or why it is refused. */
export function checkCompanyDocument(type: CompanyDocumentType, raw: string): { value: string } | { error: string } {
  const bare = bareDocument(raw).toUpperCase();
  switch (type) {
    case "cnpj":
      return /^\d{14}$/.test(bare) && isValidCNPJ(bare) ? { value: bare } : { error: "is invalid" };
    case "rfc": {
      // a company's RFC (persona moral) has 12 characters; 13 is a person's
      if (bare.length !== 12) return { error: "must have 12 characters (a company's RFC)" };
      const checked = validateRfc(bare);
      return checked.isValid && checked.type === "company" ? { value: bare } : { error: "is invalid" };
    }
    case "nit":
      return /^\d{10}$/.test(bare) && isValidNit(bare) ? { value: bare } : { error: "is invalid" };
    case "rut": {
      const rut = bareDocument(raw).replace(/[^0-9kK]/g, "").toUpperCase();
      return /^\d{7,8}[\dK]$/.test(rut) && isValidRut(rut) ? { value: rut } : { error: "is invalid" };
    }
    case "tax_id":
      return /^[A-Z0-9]{4,40}$/.test(bare) ? { value: bare } : { error: "has invalid format" };
  }
}

/** A tax id of one country must be registered with that country as the fiscal one. */
export function fiscalCountryError(type: CompanyDocumentType, fiscalCountry: string): string | null {
  const expected = COUNTRY_OF_DOCUMENT[type];
  return expected && expected !== fiscalCountry ? `must be ${expected} for a ${type}` : null;
}
