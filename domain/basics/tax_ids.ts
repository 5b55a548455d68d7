/**
 * Every tax id and national document the service checks, written once: people's documents (cpf, curp, cc, ce,
 * passport), company customers' tax ids (cnpj, rfc, nit, rut, tax_id), and the owners' documents of bank accounts
 * and PIX keys use these. Check digits come from maintained packages where one exists (CPF, CNPJ, company RFC, RUT)
 * and from the published algorithm otherwise (RENAPO's CURP, DIAN's NIT). Which types a person, a company or an
 * account owner may use, and how their fields are named, is the callers' (docs/architecture.md, "Where each rule
 * lives").
 *
 * Each check answers the first thing wrong with a number, in the order a person fixes it: the characters, then the
 * length, then the parts of its format, then the check digit (docs/errors.md, "What is wrong with a number"), so a
 * refusal says what to change rather than only "is invalid". `isValid...` is that check answering nothing.
 */
import { isValidCNPJ, isValidCPF } from "@brazilian-utils/brazilian-utils";
import { validate as validRutDigit } from "rut.js";
import rfcModule from "validate-rfc";
import { invalidFormat } from "./errors.ts";

// the package's types describe an ES default export; loaded from CommonJS, its export is the function itself
const validateRfc = rfcModule as unknown as (rfc: string) => { isValid: boolean; type?: string; errors?: string[] };

/** What a check answers: why the number is refused, or null when it is right. */
export type Problem = string | null;

export const ONLY_DIGITS = "must contain only digits";
export const ONLY_LETTERS_AND_DIGITS = "must contain only letters and digits";
/** One check digit (CURP, RFC, NIT, CLABE, ABA...) or a pair of them (CPF, CNPJ, IBAN). */
export const CHECK_DIGIT = "has an invalid check digit";
export const CHECK_DIGITS = "has invalid check digits";
export const REPEATED_DIGIT = "cannot be one digit repeated";

/** "11", "9 or 10", "6 to 9". */
const count = (min: number, max: number) =>
  min === max ? `${min}` : max === min + 1 ? `${min} or ${max}` : `${min} to ${max}`;

/** `must have 11 digits`, `must have 18 characters (CLABE)`: the length a number must have. */
export const mustHave = (min: number, max = min, unit = "digits", note = "") =>
  `must have ${count(min, max)} ${unit}${note ? ` (${note})` : ""}`;

/** A number of digits only: a character that is not a digit, then a length out of [min, max]. */
export function digitsProblem(n: string, min: number, max = min, note = ""): Problem {
  if (!/^\d*$/.test(n)) return ONLY_DIGITS;
  return n.length < min || n.length > max ? mustHave(min, max, "digits", note) : null;
}

/** A document number without the dots, dashes, slashes and spaces people write in it ("529.982.247-25"). */
export const bareDocument = (s: string) => s.replace(/[.\-/\s]/g, "");

/** Brazil's CPF (bare): 11 digits, not all one digit, both check digits right. */
export function cpfProblem(n: string): Problem {
  return digitsProblem(n, 11) ?? (/^(\d)\1*$/.test(n) ? REPEATED_DIGIT : isValidCPF(n) ? null : CHECK_DIGITS);
}
export const isValidCpf = (n: string) => cpfProblem(n) === null;

/** Brazil's CNPJ (bare): 14 digits, not all one digit, both check digits right. */
export function cnpjProblem(n: string): Problem {
  return digitsProblem(n, 14) ?? (/^(\d)\1*$/.test(n) ? REPEATED_DIGIT : isValidCNPJ(n) ? null : CHECK_DIGITS);
}
export const isValidCnpj = (n: string) => cnpjProblem(n) === null;

const CURP_STATES =
  "AS|BC|BS|CC|CL|CM|CS|CH|DF|DG|GT|GR|HG|JC|MC|MN|MS|NT|NL|OC|PL|QT|QR|SP|SL|SR|TC|TS|TL|VZ|YN|ZS|NE";
const DATE = "\\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\\d|3[01])";
/** The official format of a CURP of 18 characters, part by part, with what each refusal says. */
const CURP_PARTS: [RegExp, string][] = [
  [/^[A-Z][AEIOUX][A-Z]{2}/, "has invalid format, expected four letters first, the second a vowel or X"],
  [new RegExp(`^.{4}${DATE}`), "has invalid format, expected a birth date (YYMMDD) in characters 5 to 10"],
  [/^.{10}[HMX]/, "has invalid format, expected H, M or X as character 11"],
  [new RegExp(`^.{11}(${CURP_STATES})`), "has invalid format, expected a state code in characters 12 and 13"],
  [/^.{13}[B-DF-HJ-NP-TV-Z]{3}/, "has invalid format, expected consonants in characters 14 to 16"],
  [/^.{17}\d$/, "has invalid format, expected a digit last"],
];
const CURP_ALPHABET = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ";

/** RENAPO's check digit: weights 18..2 over the first 17 characters, then (10 - sum mod 10) mod 10. */
export function curpCheckDigit(first17: string): number {
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += CURP_ALPHABET.indexOf(first17[i]) * (18 - i);
  return (10 - (sum % 10)) % 10;
}

/** Mexico's CURP: the official format (date, sex, state, inner consonants) and RENAPO's check digit. */
export function curpProblem(curp: string): Problem {
  if (!/^[A-ZÑ\d]*$/.test(curp)) return ONLY_LETTERS_AND_DIGITS;
  if (curp.length !== 18) return mustHave(18, 18, "characters");
  for (const [part, problem] of CURP_PARTS) if (!part.test(curp)) return problem;
  return curpCheckDigit(curp.slice(0, 17)) === Number(curp[17]) ? null : CHECK_DIGIT;
}
export const isValidCurp = (curp: string) => curpProblem(curp) === null;

/** The RFC's grammar: letters (3 for a company, 4 for a person), date YYMMDD, a 3-character homoclave. */
const rfcPattern = (letters: string) => new RegExp(`^[A-ZÑ&]${letters}${DATE}[A-Z\\d]{2}[A\\d]$`);

/** RFC of a person (13 characters). Its check digit is not enforced: only its shape is the interface's. */
export const RFC_PF_RE = rfcPattern("{4}");

/**
 * An RFC's shape, part by part: a company's has 12 characters (3 letters), a person's 13 (4 letters); `length`
 * says which are allowed here and what the refusal of another length says.
 */
function rfcShapeProblem(n: string, length: { allowed: number[]; problem: string }): Problem {
  if (!/^[A-ZÑ&\d]*$/.test(n)) return ONLY_LETTERS_AND_DIGITS;
  if (!length.allowed.includes(n.length)) return length.problem;
  const letters = n.length - 9;
  if (!new RegExp(`^[A-ZÑ&]{${letters}}`).test(n)) {
    return `has invalid format, expected ${letters === 3 ? "three" : "four"} letters first`;
  }
  if (!new RegExp(`^.{${letters}}${DATE}`).test(n)) {
    return "has invalid format, expected a date (YYMMDD) after the letters";
  }
  if (!/[A-Z\d]{2}[A\d]$/.test(n)) {
    return "has invalid format, expected a homoclave of two letters or digits, then a digit or A";
  }
  return null;
}

const PERSON_RFC = { allowed: [13], problem: mustHave(13, 13, "characters") };
const EITHER_RFC = { allowed: [12, 13], problem: mustHave(12, 13, "characters") };
const COMPANY_RFC = { allowed: [12], problem: mustHave(12, 12, "characters", "a company's RFC") };

/** A person's RFC (`rfc_pf`) by its shape. */
export const rfcPfProblem = (n: string) => rfcShapeProblem(n, PERSON_RFC);

/** An RFC of either holder by its shape alone (12 or 13 characters), as an account owner's is checked. */
export const rfcShapeOfEitherProblem = (n: string) => rfcShapeProblem(n, EITHER_RFC);
export const isRfcShape = (n: string) => rfcShapeOfEitherProblem(n) === null;

/** A company's RFC (persona moral, 12 characters), its check digit verified by the package. */
export function companyRfcProblem(n: string): Problem {
  const shape = rfcShapeProblem(n, COMPANY_RFC);
  if (shape) return shape;
  const checked = validateRfc(n);
  if (checked.isValid && checked.type === "company") return null;
  if (checked.errors?.includes("INVALID_DATE")) return "has invalid format, expected a date (YYMMDD) after the letters";
  if (checked.errors?.includes("FORBIDDEN_WORD")) return "is invalid (its letters form a word the SAT does not allow)";
  return CHECK_DIGIT;
}
export const isValidCompanyRfc = (n: string) => companyRfcProblem(n) === null;

const NIT_WEIGHTS = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43, 47, 53, 59, 67, 71];

/** DIAN's NIT check digit: prime weights from the rightmost digit, sum mod 11, then 11 - r when r > 1. */
export function nitCheckDigit(base: string): number {
  let sum = 0;
  for (let i = 0; i < base.length; i++) sum += Number(base[base.length - 1 - i]) * NIT_WEIGHTS[i];
  const r = sum % 11;
  return r > 1 ? 11 - r : r;
}

/** A NIT of 9 digits, or 9 digits and its check digit (10 in all), the check digit verified. */
export function nitProblem(n: string): Problem {
  return digitsProblem(n, 9, 10, "10 with the check digit") ??
    (n.length === 9 || nitCheckDigit(n.slice(0, 9)) === Number(n[9]) ? null : CHECK_DIGIT);
}
export const isValidNit = (n: string) => nitProblem(n) === null;

/** A company's NIT: the 9 digits and its check digit, always. */
const companyNitProblem = (n: string) => digitsProblem(n, 10, 10, "nine and the check digit") ?? nitProblem(n);

/**
 * Colombian cédula de ciudadanía: exactly 10 digits, for a person and for the owner of a Colombian bank account
 * alike (the interface names one format for `cc`; 6 to 9 digits is the `ce`).
 */
export const ccProblem = (n: string) => digitsProblem(n, 10);
export const isValidCc = (n: string) => ccProblem(n) === null;

/** Chile's RUT: 7 or 8 digits and its mod-11 check character (K for 10), verified by the package. */
export function rutProblem(n: string): Problem {
  if (n.length < 8 || n.length > 9) return mustHave(8, 9, "characters", "the check character included");
  if (!/^\d{7,8}[\dK]$/.test(n)) return "has invalid format, expected digits, then a digit or K last";
  return validRutDigit(n) ? null : CHECK_DIGIT;
}

/** Every document type a subject registers with: a person's, then a company customer's. */
export const TAX_ID_TYPES = ["cpf", "curp", "cc", "ce", "passport", "cnpj", "rfc", "nit", "rut", "tax_id"] as const;
export type TaxIdType = typeof TAX_ID_TYPES[number];

type Rule = { normalise: (raw: string) => string; check: (value: string) => Problem };
const upper = (raw: string) => raw.toUpperCase();
const bareUpper = (raw: string) => bareDocument(raw).toUpperCase();

/**
 * How each type is stored and judged. Brazil's numbers (CPF, CNPJ) and a company's tax id are stored bare and
 * upper-cased, whether they were sent bare or punctuated ("529.982.247-25"), so one document is one subject however
 * it was written; a CURP or passport is upper-cased; a cc or ce is taken as sent (the interface says "without dots
 * or dashes").
 */
const RULES: Record<TaxIdType, Rule> = {
  cpf: { normalise: bareDocument, check: cpfProblem },
  curp: { normalise: upper, check: curpProblem },
  cc: { normalise: (raw) => raw, check: ccProblem },
  ce: { normalise: (raw) => raw, check: (n) => digitsProblem(n, 6, 9) },
  passport: {
    normalise: upper,
    check: (n) =>
      !/^[A-Z0-9]*$/.test(n)
        ? ONLY_LETTERS_AND_DIGITS
        : n.length < 5 || n.length > 20
        ? mustHave(5, 20, "characters")
        : null,
  },
  cnpj: { normalise: bareUpper, check: cnpjProblem },
  // a company's RFC (persona moral) has 12 characters; 13 is a person's
  rfc: { normalise: bareUpper, check: companyRfcProblem },
  // a company's NIT carries its check digit; an account owner's may leave it out (nitProblem)
  nit: { normalise: bareUpper, check: companyNitProblem },
  rut: {
    normalise: (raw) => bareDocument(raw).replace(/[^0-9kK]/g, "").toUpperCase(),
    check: rutProblem,
  },
  tax_id: {
    normalise: bareUpper,
    check: (n) => /^[A-Z0-9]{4,40}$/.test(n) ? null : invalidFormat("4 to 40 letters or digits", "123456789"),
  },
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
