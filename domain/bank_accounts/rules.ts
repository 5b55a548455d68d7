/**
 * What a bank account must look like, per country (docs/api.md, "Documents and bank accounts").
 * Pure: no database. The directory lookup (stored bank names) happens afterwards in directory.ts.
 */
import { isValidEmail } from "@brazilian-utils/brazilian-utils";
import { clabe } from "clabe-validator";
import { countrySpecs, electronicFormatIBAN, isValidBIC, validateIBAN, ValidationErrorsIBAN } from "ibantools";
import { BLANK, EMAIL_FORMAT, ErrorBag } from "../basics/errors.ts";
import { UUID_RE } from "../basics/ids.ts";
import { countryAlpha3, unknownCountry } from "../basics/countries.ts";
import {
  bareDocument,
  ccProblem,
  CHECK_DIGIT,
  CHECK_DIGITS,
  cnpjProblem,
  cpfProblem,
  curpProblem,
  digitsProblem,
  mustHave,
  nitProblem,
  ONLY_DIGITS,
  ONLY_LETTERS_AND_DIGITS,
  type Problem,
  rfcShapeOfEitherProblem,
} from "../basics/tax_ids.ts";

type Text = string | null | undefined;

/**
 * A bank account as a client sends it, every field optional: which fields each country requires and what they
 * must look like is decided here, so the wire correction applies the same rules. `null` and "" count as absent.
 */
export type BankAccountInput = {
  currency?: Text;
  owner_name?: Text;
  owner_document_number?: Text;
  owner_document_type?: Text;
  account_number?: Text;
  branch_number?: Text;
  branch_country?: Text;
  account_type?: Text;
  routing_number?: Text;
  iban?: Text;
  aba?: Text;
  nickname?: Text;
  bank?: { code?: Text; ispb?: Text; name?: Text; swift?: Text } | null;
  pix_info?: { type?: Text; key?: Text } | null;
};

/** INT: an international account of the company (USD or EUR), identified by SWIFT rather than a local code. */
export type BankCountry = "BRA" | "MEX" | "COL" | "INT";

export const SUBJECT_CURRENCIES: Readonly<Record<string, BankCountry>> = { BRL: "BRA", MXN: "MEX", COP: "COL" };
export const INTERNATIONAL_CURRENCIES = ["USD", "EUR"] as const;

/** Which accounts a caller may register: a subject's (local currencies), the company's (USD/EUR), or either. */
export type BankAccountScope = "subject" | "international" | "any";

export type BankRef = {
  country: string;
  code: string | null;
  ispb: string | null;
  swift: string | null;
  name: string | null;
};

/** A checked account, in the column names of `bank_accounts`; `bank` still carries the name as supplied. */
export type NormalizedBankAccount = {
  country: BankCountry;
  currency: string;
  account_type: string | null;
  account_number: string | null;
  branch_number: string | null;
  branch_country: string | null;
  routing_number: string | null;
  iban: string | null;
  aba: string | null;
  nickname: string | null;
  owner_name: string | null;
  owner_document_number: string | null;
  owner_document_type: string | null;
  pix_type: string | null;
  pix_key: string | null;
  bank: BankRef | null;
};

export const ACCOUNT_TYPES = ["conta-corrente", "poupanca", "salary", "payment"] as const;
const BRAZIL_ACCOUNT_TYPES = ["conta-corrente", "poupanca"] as const;
/** Colombian labels and what they are stored as; matched without regard to case or repeated spaces. */
const COLOMBIA_ACCOUNT_LABELS: Record<string, string> = {
  "conta corriente": "conta-corrente",
  "cuenta de ahorros": "poupanca",
  "cuentas nomina": "salary",
  "cuentas pensionales": "payment",
};
export const COLOMBIA_LABEL_NAMES = ["Conta Corriente", "Cuenta de Ahorros", "Cuentas Nomina", "Cuentas pensionales"];

export const PIX_KEY_TYPES = ["CPF", "CNPJ", "EMAIL", "PHONE", "EVP"] as const;

const oneOf = (values: readonly string[]) => `must be one of: ${values.join(", ")}`;
const value = (s: string | null | undefined) => (s == null || s === "" ? null : s);

/**
 * An account number without the spacing bank statements print in it, so a number copied from one is stored bare, as
 * CNPJs and IBANs are: a CLABE printed in groups (`002 180 70001234567 8`, or with dashes) keeps only its characters; a
 * Brazilian number loses its spaces and thousands dots (`12.345-6`) but keeps the dash before its check digit, as it
 * always was stored; a Colombian one loses its spaces, its dashes being part of how it is written. International
 * numbers are stored as sent, spaces and all, as before.
 *
 * @example
 * ```ts
 * bareAccountNumber("MEX", "002 180 70001234567 8"); // "002180700012345678"
 * bareAccountNumber("BRA", "12.345-6"); // "12345-6"
 * ```
 */
export function bareAccountNumber(country: BankCountry | null, raw: string): string {
  switch (country) {
    case "MEX":
      return raw.replace(/[\s-]/g, "");
    case "BRA":
      return raw.replace(/[\s.]/g, "");
    case "COL":
      return raw.replace(/\s/g, "");
    default:
      return raw;
  }
}

/** The country whose rules apply, from the currency and what the endpoint allows. */
export function countryOfCurrency(currency: string, scope: BankAccountScope): BankCountry | null {
  const upper = currency.toUpperCase();
  if (scope !== "international" && SUBJECT_CURRENCIES[upper]) return SUBJECT_CURRENCIES[upper];
  if (scope !== "subject" && (INTERNATIONAL_CURRENCIES as readonly string[]).includes(upper)) return "INT";
  return null;
}

/**
 * Checks a bank account body with the rules its currency implies and returns it normalised (alpha-3 countries,
 * mapped account types, digits-only documents, account numbers without statement spacing), or throws every field
 * error at once: 400 when something required is missing, 422 otherwise. Shared by registration, update (on the merged
 * account) and the wire correction.
 */
export function validateBankAccountInput(
  input: BankAccountInput,
  opts: { scope: BankAccountScope },
): NormalizedBankAccount {
  const bag = new ErrorBag();
  const currency = value(input.currency)?.toUpperCase() ?? null;
  let country: BankCountry | null = null;
  if (!currency) bag.add("currency", BLANK);
  else {
    country = countryOfCurrency(currency, opts.scope);
    if (!country) {
      const allowed = opts.scope === "subject"
        ? Object.keys(SUBJECT_CURRENCIES)
        : opts.scope === "international"
        ? [...INTERNATIONAL_CURRENCIES]
        : [...Object.keys(SUBJECT_CURRENCIES), ...INTERNATIONAL_CURRENCIES];
      bag.add("currency", oneOf(allowed));
    }
  }

  const out: NormalizedBankAccount = {
    country: country ?? "INT",
    currency: currency ?? "",
    account_type: null,
    account_number: value(bareAccountNumber(country, value(input.account_number) ?? "")),
    branch_number: value(input.branch_number),
    branch_country: branchCountry(input.branch_country, bag),
    routing_number: null,
    iban: null,
    aba: null,
    nickname: value(input.nickname),
    owner_name: value(input.owner_name),
    owner_document_number: value(input.owner_document_number),
    owner_document_type: value(input.owner_document_type)?.toLowerCase() ?? null,
    pix_type: null,
    pix_key: null,
    bank: null,
  };
  if (country === "BRA") checkBrazil(input, out, bag);
  else if (country === "MEX") checkMexico(input, out, bag);
  else if (country === "COL") checkColombia(input, out, bag);
  else if (country === "INT") checkInternational(input, out, bag);
  bag.throwIfAny();
  return out;
}

function branchCountry(raw: string | null | undefined, bag: ErrorBag): string | null {
  const given = value(raw);
  if (!given) return null;
  const alpha3 = countryAlpha3(given);
  if (!alpha3) bag.add("branch_country", `is invalid: ${unknownCountry(given)}`);
  return alpha3;
}

function need(bag: ErrorBag, field: string, v: string | null): v is string {
  if (v == null) bag.add(field, BLANK);
  return v != null;
}

const bankField = (input: BankAccountInput, key: "code" | "ispb" | "name" | "swift") => value(input.bank?.[key]);
const hasBank = (input: BankAccountInput) =>
  !!input.bank && (["code", "ispb", "name", "swift"] as const).some((k) => bankField(input, k) != null);

type BankPart = "code" | "ispb" | "name" | "swift";

/**
 * `bank` missing altogether is one error on `bank`; a bank without some required part names the part. Answers
 * the parts that were given (null without a bank), so each is still checked when another one is missing.
 */
function requireBank(input: BankAccountInput, bag: ErrorBag, parts: BankPart[]) {
  if (!hasBank(input)) {
    bag.add("bank", BLANK);
    return null;
  }
  for (const part of parts) if (bankField(input, part) == null) bag.add(["bank", part], BLANK);
  return { code: bankField(input, "code"), ispb: bankField(input, "ispb"), name: bankField(input, "name") };
}

function accountType(raw: string | null, allowed: readonly string[], bag: ErrorBag): string | null {
  if (raw == null) return null;
  const lower = raw.toLowerCase();
  if (allowed.includes(lower)) return lower;
  bag.add("account_type", oneOf(allowed));
  return null;
}

function checkBrazil(input: BankAccountInput, out: NormalizedBankAccount, bag: ErrorBag) {
  need(bag, "owner_name", out.owner_name);
  const pixGiven = input.pix_info != null;
  const detailsGiven = out.account_number != null || out.branch_number != null || hasBank(input);

  // full bank details, or pix_info alone: any part of the details given means all of them are needed
  if (detailsGiven || !pixGiven) {
    if (!pixGiven && !detailsGiven) bag.add("pix_info", BLANK);
    if (need(bag, "account_number", out.account_number)) {
      report(bag, "account_number", brazilNumberProblem(out.account_number, 20));
    }
    if (need(bag, "branch_number", out.branch_number)) {
      report(bag, "branch_number", brazilNumberProblem(out.branch_number, 5));
    }
    const bank = requireBank(input, bag, ["code", "ispb", "name"]);
    if (bank) {
      const { code, ispb, name } = bank;
      if (code != null && !/^\d{3}$/.test(code)) bag.add(["bank", "code"], "has invalid format, expected three digits");
      if (ispb != null && !/^\d{8}$/.test(ispb)) bag.add(["bank", "ispb"], "has invalid format, expected eight digits");
      out.bank = { country: "BRA", code, ispb, swift: null, name };
    }
  }
  if (pixGiven) checkPix(input.pix_info!, out, bag);

  out.account_type = accountType(value(input.account_type), BRAZIL_ACCOUNT_TYPES, bag);
  checkOwnerDocument(out, bag, {
    types: ["cpf", "cnpj"],
    infer: (n) => (n.length === 11 ? "cpf" : n.length === 14 ? "cnpj" : null),
    normalise: bareDocument,
    problem: { cpf: cpfProblem, cnpj: cnpjProblem },
  });
}

/** Adds `problem` on `field` when there is one. */
function report(bag: ErrorBag, field: string | string[], problem: Problem) {
  if (problem) bag.add(field, problem);
}

/**
 * A Brazilian account or branch number: up to `max` digits, then optionally its check digit (a digit or X), with
 * or without a dash before it ("123456-7", "1234567", "0001-X").
 */
function brazilNumberProblem(n: string, max: number): Problem {
  if (!/^[\dXx-]*$/.test(n)) return "must contain only digits, and a dash or X for the check digit";
  if (!/^\d+(-?[\dXx])?$/.test(n)) return "has invalid format, expected digits, then the check digit after a dash";
  if (!new RegExp(`^\\d{1,${max}}(-?[\\dXx])?$`).test(n)) {
    return `is too long (maximum is ${max} digits and the check digit)`;
  }
  return null;
}

function checkPix(pix: NonNullable<BankAccountInput["pix_info"]>, out: NormalizedBankAccount, bag: ErrorBag) {
  const type = value(pix.type)?.toUpperCase() ?? null;
  const key = value(pix.key);
  if (type == null) bag.add(["pix_info", "type"], BLANK);
  else if (!(PIX_KEY_TYPES as readonly string[]).includes(type)) bag.add(["pix_info", "type"], oneOf(PIX_KEY_TYPES));
  if (key == null) bag.add(["pix_info", "key"], BLANK);
  if (type == null || key == null || !(PIX_KEY_TYPES as readonly string[]).includes(type)) return;

  let normalised: string | null = key;
  let problem: Problem = null;
  switch (type) {
    case "CPF":
      normalised = bareDocument(key);
      problem = cpfProblem(normalised);
      break;
    case "CNPJ":
      normalised = bareDocument(key);
      problem = cnpjProblem(normalised);
      break;
    case "EMAIL":
      if (key.length > 77) problem = "is too long (maximum is 77 characters)";
      else if (!isValidEmail(key)) problem = EMAIL_FORMAT;
      break;
    case "PHONE":
      if (!/^\+\d{12,13}$/.test(key)) {
        problem = "has invalid format, expected + followed by 12 or 13 digits (country code included)";
      }
      break;
    case "EVP":
      normalised = key.toLowerCase();
      if (!UUID_RE.test(key)) problem = "has invalid format, expected a random key (a UUID)";
      break;
  }
  if (problem) {
    bag.add(["pix_info", "key"], problem);
    normalised = null;
  }
  out.pix_type = type;
  out.pix_key = normalised;
}

/** CLABE: 17 digits and a control digit (weights 3, 7, 1); the library computes it. */
export function clabeProblem(s: string): Problem {
  return digitsProblem(s, 18, 18, "CLABE") ??
    (clabe.computeChecksum(s.slice(0, 17)) === Number(s[17]) ? null : CHECK_DIGIT);
}
export const isValidClabe = (s: string) => clabeProblem(s) === null;

function checkMexico(input: BankAccountInput, out: NormalizedBankAccount, bag: ErrorBag) {
  const clabeNumber = out.account_number;
  let clabeOk = false;
  if (need(bag, "account_number", clabeNumber)) {
    const problem = clabeProblem(clabeNumber);
    report(bag, "account_number", problem);
    clabeOk = problem === null;
  }
  if (need(bag, "account_type", value(input.account_type))) {
    out.account_type = accountType(value(input.account_type), ACCOUNT_TYPES, bag);
  }
  const bank = requireBank(input, bag, ["code", "name"]);
  if (bank) {
    const { code, name } = bank;
    if (code != null && !/^\d{3,4}$/.test(code)) {
      bag.add(["bank", "code"], "has invalid format, expected three or four digits");
    } else if (code?.length === 3 && clabeOk && clabeNumber!.slice(0, 3) !== code) {
      bag.add(["bank", "code"], "does not match account_number");
    }
    out.bank = { country: "MEX", code, ispb: null, swift: null, name };
  }
  checkOwnerDocument(out, bag, {
    types: ["curp", "rfc"],
    infer: (n) => (n.length === 18 ? "curp" : n.length === 12 || n.length === 13 ? "rfc" : null),
    normalise: (n) => n.toUpperCase(),
    problem: { curp: curpProblem, rfc: rfcShapeOfEitherProblem },
  });
}

function checkColombia(input: BankAccountInput, out: NormalizedBankAccount, bag: ErrorBag) {
  if (need(bag, "account_number", out.account_number)) {
    const n = out.account_number;
    report(
      bag,
      "account_number",
      !/^[\d-]*$/.test(n)
        ? "must contain only digits and dashes"
        : !/^\d/.test(n)
        ? "has invalid format, expected a digit first"
        : n.length > 25
        ? "is too long (maximum is 25 characters)"
        : null,
    );
  }
  if (need(bag, "branch_number", out.branch_number) && !/^[\dA-Za-z-]{1,20}$/.test(out.branch_number)) {
    bag.add("branch_number", "must contain only letters, digits and dashes");
  }
  need(bag, "owner_name", out.owner_name);
  const bank = requireBank(input, bag, ["code", "name"]);
  if (bank) {
    const { code, name } = bank;
    if (code != null && !/^\d{1,10}$/.test(code)) bag.add(["bank", "code"], ONLY_DIGITS);
    out.bank = { country: "COL", code, ispb: null, swift: null, name };
  }
  const rawType = value(input.account_type);
  if (rawType != null) {
    const label = rawType.toLowerCase().replace(/\s+/g, " ");
    const mapped = (ACCOUNT_TYPES as readonly string[]).includes(label) ? label : COLOMBIA_ACCOUNT_LABELS[label];
    if (mapped) out.account_type = mapped;
    else bag.add("account_type", oneOf([...ACCOUNT_TYPES, ...COLOMBIA_LABEL_NAMES]));
  }
  checkOwnerDocument(out, bag, {
    types: ["cc", "nit"],
    infer: () => null,
    normalise: bareDocument,
    problem: { cc: ccProblem, nit: nitProblem },
  });
}

/** ABA routing number: 9 digits, 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) divisible by 10. */
export function abaProblem(s: string): Problem {
  const shape = digitsProblem(s, 9);
  if (shape) return shape;
  const d = [...s].map(Number);
  return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 === 0 ? null : CHECK_DIGIT;
}
export const isValidAba = (s: string) => abaProblem(s) === null;

/** A BIC: 4 letters (the bank), the country's 2 letters, 2 letters or digits (the place), 3 more for a branch. */
function swiftProblem(swift: string): Problem {
  if (!/^[A-Z\d]*$/.test(swift)) return ONLY_LETTERS_AND_DIGITS;
  if (swift.length !== 8 && swift.length !== 11) return "must have 8 or 11 characters";
  if (!/^[A-Z]{4}/.test(swift)) return "has invalid format, expected four letters first (the bank)";
  if (!/^.{4}[A-Z]{2}/.test(swift)) return "has invalid format, expected a country code in characters 5 and 6";
  if (!isValidBIC(swift) || !countryAlpha3(swift.slice(4, 6))) return "has an unknown country code";
  return null;
}

/** An IBAN in its electronic form: the country's length and format, then its two check digits. */
function ibanProblem(iban: string): Problem {
  if (!/^[A-Z\d]*$/.test(iban)) return ONLY_LETTERS_AND_DIGITS;
  const { errorCodes } = validateIBAN(iban);
  const spec = countrySpecs[iban.slice(0, 2)];
  if (errorCodes.includes(ValidationErrorsIBAN.NoIBANCountry) || !spec?.chars) return "has an unknown country code";
  if (errorCodes.includes(ValidationErrorsIBAN.WrongBBANLength)) {
    return mustHave(spec.chars, spec.chars, "characters", `an IBAN of ${iban.slice(0, 2)}`);
  }
  if (errorCodes.includes(ValidationErrorsIBAN.ChecksumNotNumber)) {
    return "has invalid format, expected two check digits after the country code";
  }
  if (errorCodes.includes(ValidationErrorsIBAN.WrongBBANFormat)) return "has invalid format for its country";
  if (errorCodes.includes(ValidationErrorsIBAN.WrongIBANChecksum)) return CHECK_DIGITS;
  return errorCodes.length ? CHECK_DIGIT : null;
}

function checkInternational(input: BankAccountInput, out: NormalizedBankAccount, bag: ErrorBag) {
  if (need(bag, "account_number", out.account_number) && !/^[A-Za-z0-9 -]{1,40}$/.test(out.account_number)) {
    bag.add("account_number", "must contain only letters, digits, spaces and dashes");
  }
  need(bag, "owner_document_number", out.owner_document_number);
  need(bag, "owner_name", out.owner_name);
  if (requireBank(input, bag, ["name", "swift"])) {
    const swift = bankField(input, "swift")?.replace(/\s+/g, "").toUpperCase() ?? null;
    const problem = swift != null ? swiftProblem(swift) : null;
    const country = swift != null && !problem ? countryAlpha3(swift.slice(4, 6)) : null;
    if (problem) bag.add(["bank", "swift"], problem);
    out.bank = { country: country ?? "", code: null, ispb: null, swift, name: bankField(input, "name") };
  }
  const iban = value(input.iban);
  if (iban != null) {
    const electronic = (electronicFormatIBAN(iban) ?? "").toUpperCase();
    const problem = ibanProblem(electronic);
    if (problem) bag.add("iban", problem);
    else out.iban = electronic;
  }
  for (const field of ["routing_number", "aba"] as const) {
    const given = value(input[field]);
    if (given == null) continue;
    const problem = abaProblem(given);
    if (problem) bag.add(field, problem);
    else out[field] = given;
  }
  out.account_type = accountType(value(input.account_type), ACCOUNT_TYPES, bag);
}

type DocumentRules<T extends string> = {
  types: readonly T[];
  /** The type a bare number must be, when its shape says so. */
  infer: (normalised: string) => T | null;
  normalise: (raw: string) => string;
  /** What is wrong with a number of each type (domain/basics/tax_ids.ts), or null. */
  problem: Record<T, (normalised: string) => Problem>;
};

function checkOwnerDocument<T extends string>(out: NormalizedBankAccount, bag: ErrorBag, rules: DocumentRules<T>) {
  const type = out.owner_document_type;
  if (type != null && !(rules.types as readonly string[]).includes(type)) {
    bag.add("owner_document_type", oneOf(rules.types));
    return;
  }
  if (out.owner_document_number == null) return;
  const number = rules.normalise(out.owner_document_number);
  out.owner_document_number = number;
  const effective = (type as T | null) ?? rules.infer(number);
  if (effective == null) {
    // without a type the number is kept as given unless its shape is unmistakably wrong
    report(
      bag,
      "owner_document_number",
      !/^[\dA-Z&Ñ]*$/i.test(number)
        ? ONLY_LETTERS_AND_DIGITS
        : number.length < 5 || number.length > 20
        ? mustHave(5, 20, "characters")
        : null,
    );
    return;
  }
  const problem = rules.problem[effective](number);
  if (problem) bag.add("owner_document_number", problem);
  else if (type == null) out.owner_document_type = effective;
}
