import { isValidCNPJ, isValidCPF } from "@brazilian-utils/brazilian-utils";
import { validate as validRutDigit } from "rut.js";
import rfcModule from "validate-rfc";

/**
 * Every tax id and national document the service checks, written once: people's documents (cpf, curp, cc, ce,
 * passport), company customers' tax ids (cnpj, rfc, nit, rut, tax_id), and the owners' documents of bank accounts
 * and PIX keys use these. Check digits come from maintained packages where one exists (CPF, CNPJ, company RFC, RUT)
 * and from the published algorithm otherwise (RENAPO's CURP, DIAN's NIT). Which types a person, a company or an
 * account owner may use, and how their fields are named, is the callers' (docs/architecture.md, "Where each rule
 * lives").
 */

// the package's types describe an ES default export; loaded from CommonJS, its export is the function itself
const validateRfc = rfcModule as unknown as (rfc: string) => { isValid: boolean; type?: string };

/** A document number without the dots, dashes, slashes and spaces people write in it ("529.982.247-25"). */
export const bareDocument = (s: string) => s.replace(/[.\-/\s]/g, "");

/** Brazil's CPF: 11 digits, both check digits right, not all one digit. */
export const isValidCpf = (n: string) => /^\d{11}$/.test(n) && isValidCPF(n);

/** Brazil's CNPJ: 14 digits, both check digits right. */
export const isValidCnpj = (n: string) => /^\d{14}$/.test(n) && isValidCNPJ(n);

const CURP_STATES =
  "AS|BC|BS|CC|CL|CM|CS|CH|DF|DG|GT|GR|HG|JC|MC|MN|MS|NT|NL|OC|PL|QT|QR|SP|SL|SR|TC|TS|TL|VZ|YN|ZS|NE";
const CURP_RE = new RegExp(
  `^[A-Z][AEIOUX][A-Z]{2}\\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\\d|3[01])[HMX](${CURP_STATES})[B-DF-HJ-NP-TV-Z]{3}[A-Z\\d]\\d$`,
);
const CURP_ALPHABET = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ";

/** RENAPO's check digit: weights 18..2 over the first 17 characters, then (10 - sum mod 10) mod 10. */
export function curpCheckDigit(first17: string): number {
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += CURP_ALPHABET.indexOf(first17[i]) * (18 - i);
  return (10 - (sum % 10)) % 10;
}

/** Mexico's CURP: the official format (date, sex, state, inner consonants) and RENAPO's check digit. */
export function isValidCurp(curp: string): boolean {
  return CURP_RE.test(curp) && curpCheckDigit(curp.slice(0, 17)) === Number(curp[17]);
}

/** The RFC's grammar: letters (3 for a company, 4 for a person), date YYMMDD, a 3-character homoclave. */
const rfcPattern = (letters: string) =>
  new RegExp(`^[A-ZÑ&]${letters}\\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\\d|3[01])[A-Z\\d]{2}[A\\d]$`);

/** RFC of a person (13 characters). Its check digit is not enforced: only its shape is the interface's. */
export const RFC_PF_RE = rfcPattern("{4}");

/** An RFC of either holder by its shape alone (12 or 13 characters), as an account owner's is checked. */
const RFC_RE = rfcPattern("{3,4}");
export const isRfcShape = (n: string) => RFC_RE.test(n);

/** A company's RFC (persona moral, 12 characters), its check digit verified by the package. */
export function isValidCompanyRfc(n: string): boolean {
  const checked = validateRfc(n);
  return n.length === 12 && checked.isValid && checked.type === "company";
}

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

/**
 * Colombian cédula de ciudadanía: exactly 10 digits, for a person and for the owner of a Colombian bank account
 * alike (the interface names one format for `cc`; 6 to 9 digits is the `ce`).
 */
export const isValidCc = (n: string) => /^\d{10}$/.test(n);

/** Chile's RUT: 7 or 8 digits and its mod-11 check character (K for 10), verified by the package. */
export const isValidRut = (n: string) => /^\d{7,8}[\dK]$/.test(n) && validRutDigit(n);

/** Every document type a subject registers with: a person's, then a company customer's. */
export const TAX_ID_TYPES = ["cpf", "curp", "cc", "ce", "passport", "cnpj", "rfc", "nit", "rut", "tax_id"] as const;
export type TaxIdType = typeof TAX_ID_TYPES[number];

type Rule = { normalise: (raw: string) => string; check: (value: string) => string | null };
const invalid = (ok: boolean) => ok ? null : "is invalid";
const upper = (raw: string) => raw.toUpperCase();
const bareUpper = (raw: string) => bareDocument(raw).toUpperCase();

/**
 * How each type is stored and judged. A person's numbers are taken as sent (the interface says "without dots or
 * dashes"; a CURP or passport upper-cased); a company's tax id is stored bare and upper-cased.
 */
const RULES: Record<TaxIdType, Rule> = {
  cpf: { normalise: (raw) => raw, check: (n) => invalid(isValidCpf(n)) },
  curp: { normalise: upper, check: (n) => invalid(isValidCurp(n)) },
  cc: { normalise: (raw) => raw, check: (n) => invalid(isValidCc(n)) },
  ce: { normalise: (raw) => raw, check: (n) => invalid(/^\d{6,9}$/.test(n)) },
  passport: { normalise: upper, check: (n) => invalid(/^[A-Z0-9]{5,20}$/.test(n)) },
  cnpj: { normalise: bareUpper, check: (n) => invalid(isValidCnpj(n)) },
  // a company's RFC (persona moral) has 12 characters; 13 is a person's
  rfc: {
    normalise: bareUpper,
    check: (n) => n.length !== 12 ? "must have 12 characters (a company's RFC)" : invalid(isValidCompanyRfc(n)),
  },
  // a company's NIT carries its check digit; an account owner's may leave it out (isValidNit)
  nit: { normalise: bareUpper, check: (n) => invalid(/^\d{10}$/.test(n) && isValidNit(n)) },
  rut: {
    normalise: (raw) => bareDocument(raw).replace(/[^0-9kK]/g, "").toUpperCase(),
    check: (n) => invalid(isValidRut(n)),
  },
  tax_id: { normalise: bareUpper, check: (n) => /^[A-Z0-9]{4,40}$/.test(n) ? null : "has invalid format" },
};

/** The stored form of a subject's document number of `type`, or why it is refused. */
export function checkTaxId(type: TaxIdType, raw: string): { value: string } | { error: string } {
  const rule = RULES[type];
  const value = rule.normalise(raw);
  const error = rule.check(value);
  return error ? { error } : { value };
}

/** The country each tax id belongs to; passports and a tax_id are any country's. */
export const COUNTRY_OF_TAX_ID: Partial<Record<TaxIdType, string>> = {
  cpf: "BRA",
  cnpj: "BRA",
  curp: "MEX",
  rfc: "MEX",
  cc: "COL",
  ce: "COL",
  nit: "COL",
  rut: "CHL",
};
