/**
 * Rules of the "Person" table that span fields, applied to the person as it would be stored. The document numbers
 * themselves are checked in domain/basics/tax_ids.ts.
 */

import { ErrorBag } from "../basics/errors.ts";
import { toCents } from "../basics/money.ts";
import { countryAlpha3 } from "../basics/countries.ts";
import { checkTaxId } from "../basics/tax_ids.ts";

export const DOCUMENT_TYPES = ["cpf", "curp", "cc", "ce", "passport"] as const;
export type DocumentType = typeof DOCUMENT_TYPES[number];

export const FISCAL_COUNTRIES = ["BRA", "MEX", "COL", "CHL"] as const;
/** Existing clients send alpha-2; stored and shown as alpha-3. Unknown codes pass through for the enum to refuse. */
export function toAlpha3(code: string): string {
  return countryAlpha3(code) ?? code.trim().toUpperCase();
}

export const BRAZIL_STATES = [
  "AC",
  "AL",
  "AP",
  "AM",
  "BA",
  "CE",
  "DF",
  "ES",
  "GO",
  "MA",
  "MT",
  "MS",
  "MG",
  "PA",
  "PB",
  "PR",
  "PE",
  "PI",
  "RJ",
  "RN",
  "RS",
  "RO",
  "RR",
  "SC",
  "SP",
  "SE",
  "TO",
] as const;

export const INCOME_MAX: Record<string, string> = {
  BRL: "10000000.00",
  MXN: "100000000.00",
  COP: "50000000000.00",
  CLP: "10000000000.00",
};
export const INCOME_CEILING = "999999999999999999.99";

const CURRENCY_OF_COUNTRY: Record<string, string> = { BRA: "BRL", MEX: "MXN", COL: "COP", CHL: "CLP" };

/** The currency a person's income is declared in, inferred from the document (or, for passports, the country). */
export function incomeCurrency(documentType: DocumentType, fiscalCountry: string): string | undefined {
  switch (documentType) {
    case "cpf":
      return "BRL";
    case "curp":
      return "MXN";
    case "cc":
    case "ce":
      return "COP";
    case "passport":
      return CURRENCY_OF_COUNTRY[fiscalCountry];
  }
}

export type PersonFacts = {
  document_type: DocumentType;
  document_number: string;
  fiscal_country: string;
  rfc_pf?: string | null;
  net_monthly_average_income?: string | null;
  address_state?: string | null;
  address_country?: string | null;
};

const isBrazil = (country: string | null | undefined) => !!country && countryAlpha3(country) === "BRA";

/**
 * Collects every cross-field rule violation of a person into `bag`. Returns the normalised document number.
 * `failed` names fields that already have an error of their own: their rules are skipped, so a request with
 * several problems hears of each once (docs/errors.md: every error is listed).
 */
export function checkPerson(p: PersonFacts, bag: ErrorBag, failed: ReadonlySet<string> = new Set()): string {
  const ok = (field: string) => !failed.has(field);
  let documentNumber = p.document_number;
  if (ok("document_type") && ok("document_number")) {
    const doc = checkTaxId(p.document_type, p.document_number);
    if ("error" in doc) bag.add("document_number", doc.error);
    else documentNumber = doc.value;
  }

  const curpKnown = ok("document_type") && ok("document_number") && p.document_type === "curp";
  if (p.rfc_pf && ok("rfc_pf") && curpKnown && p.rfc_pf.slice(0, 10) !== documentNumber.slice(0, 10)) {
    bag.add("rfc_pf", "does not match curp");
  }

  if (p.net_monthly_average_income != null && ok("net_monthly_average_income") && ok("document_type")) {
    const cents = toCents(p.net_monthly_average_income);
    const currency = ok("fiscal_country") || p.document_type !== "passport"
      ? incomeCurrency(p.document_type, p.fiscal_country)
      : undefined;
    const max = (currency && INCOME_MAX[currency]) ?? INCOME_CEILING;
    if (cents !== null && cents > toCents(max)!) {
      bag.add("net_monthly_average_income", `must be less than or equal to ${max}`);
    }
  }

  const residence = p.address_country ?? (ok("fiscal_country") ? p.fiscal_country : null);
  if (
    p.address_state != null && ok("address_state") && isBrazil(residence) &&
    !(BRAZIL_STATES as readonly string[]).includes(p.address_state)
  ) {
    bag.add("address_state", `must be one of: ${BRAZIL_STATES.join(", ")}`);
  }
  return documentNumber;
}
