/**
 * Fresh valid test documents for the sandbox (docs/sandbox.md, "Test documents"): one generator per document type the
 * service checks, each building a random value and its check digits by the published algorithm. Pure (the random
 * source is an argument), so the unit tests run every generator through the service's own validators with seeded
 * random sources; the sandbox route only picks the type and the count.
 */
import { clabe } from "clabe-validator";
import { composeIBAN } from "ibantools";
import { curpCheckDigit, nitCheckDigit } from "../basics/tax_ids.ts";

/** A source of random numbers in [0, 1), as `Math.random`. */
export type Random = () => number;

/** At most this many values a call (the route's `count`). */
export const MAX_TEST_DOCUMENTS = 100;

const int = (random: Random, min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[int(random, 0, items.length - 1)];
const digits = (random: Random, n: number) => Array.from({ length: n }, () => int(random, 0, 9)).join("");
const fromAlphabet = (random: Random, alphabet: string, n: number) =>
  Array.from({ length: n }, () => pick(random, [...alphabet])).join("");
const pad2 = (n: number) => String(n).padStart(2, "0");

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const VOWELS = "AEIOU";
const CONSONANTS = "BCDFGHJKLMNPQRSTVWXYZ";

/** YYMMDD with a day every month has, so the date is real whatever the month. */
const dateYYMMDD = (random: Random) =>
  `${pad2(int(random, 0, 99))}${pad2(int(random, 1, 12))}${pad2(int(random, 1, 28))}`;

/** Brazil's two mod-11 check digits over `base` with the given weights (a remainder under 2 gives 0). */
function mod11Digits(base: string, weights: (length: number) => number[]): string {
  let out = base;
  for (let k = 0; k < 2; k++) {
    const w = weights(out.length);
    const r = [...out].reduce((s, d, i) => s + Number(d) * w[i], 0) % 11;
    out += String(r < 2 ? 0 : 11 - r);
  }
  return out;
}

/** CPF: nine digits (not all one digit), then weights 10..2 and 11..2. */
function cpf(random: Random): string {
  let base: string;
  do base = digits(random, 9); while (/^(\d)\1*$/.test(base));
  return mod11Digits(base, (n) => Array.from({ length: n }, (_, i) => n + 1 - i));
}

/** CNPJ: an eight-digit root, the head office's branch 0001, then weights 5..2,9..2 and 6..2,9..2. */
function cnpj(random: Random): string {
  const weights = (n: number) => [...(n === 12 ? [5, 4, 3, 2] : [6, 5, 4, 3, 2]), 9, 8, 7, 6, 5, 4, 3, 2];
  return mod11Digits(`${int(random, 1, 9)}${digits(random, 7)}0001`, weights);
}

const CURP_STATES = "AS BC BS CC CL CM CS CH DF DG GT GR HG JC MC MN MS NT NL OC PL QT QR SP SL SR TC TS TL VZ YN ZS"
  .split(" ");

/**
 * CURP: initials (the second a vowel), birth date, sex, state, three inner consonants, the century character (a
 * digit before 2000, a letter after), then RENAPO's check digit.
 */
function curp(random: Random): string {
  const date = dateYYMMDD(random);
  const century = Number(date.slice(0, 2)) < 30 ? fromAlphabet(random, LETTERS, 1) : digits(random, 1);
  const first17 = fromAlphabet(random, LETTERS, 1) + fromAlphabet(random, VOWELS, 1) +
    fromAlphabet(random, LETTERS, 2) + date + pick(random, ["H", "M"]) + pick(random, CURP_STATES) +
    fromAlphabet(random, CONSONANTS, 3) + century;
  return first17 + curpCheckDigit(first17);
}

const SAT_VALUES = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ Ñ";

/** The SAT's RFC check character over the first 12 characters (a company's 11 read after a space): 0-9 or A. */
function satCheckCharacter(first: string): string {
  const base = first.length === 11 ? ` ${first}` : first;
  const score = [...base].reduce((s, c, i) => s + SAT_VALUES.indexOf(c) * (13 - i), 0);
  const r = (11000 - score) % 11;
  return r === 10 ? "A" : String(r);
}

/** RFC of a company (persona moral, 12 characters) or of a person (13): letters, date, homoclave, check character. */
function rfc(random: Random, letters: 3 | 4): string {
  // consonants only: four letters cannot spell one of the words the SAT replaces
  const first = fromAlphabet(random, CONSONANTS, letters) + dateYYMMDD(random) +
    fromAlphabet(random, LETTERS + "123456789", 2);
  return first + satCheckCharacter(first);
}

/** Mexican banks and cities clabe-validator knows, so a generated CLABE names a real bank and place. */
const CLABE_BANKS = [2, 12, 14, 21, 30, 36, 44, 58, 72, 127, 137];

/** CLABE: a bank's three digits, a city's three, an 11-digit account, Banxico's check digit. */
function clabeNumber(random: Random): string {
  const city = pick(random, clabe.cities)[0];
  return clabe.calculate(pick(random, CLABE_BANKS), city, Number(`${int(random, 1, 9)}${digits(random, 10)}`));
}

/** NIT: nine digits (a company's start with 8 or 9) and DIAN's check digit. */
function nit(random: Random): string {
  const base = `${pick(random, ["8", "9"])}${digits(random, 8)}`;
  return base + nitCheckDigit(base);
}

/** RUT: a company's eight digits (76 to 77 millions) and its mod-11 check character (K for 10). */
function rut(random: Random): string {
  const body = String(int(random, 76_000_000, 77_999_999));
  const sum = [...body].reverse().reduce((s, d, i) => s + Number(d) * [2, 3, 4, 5, 6, 7][i % 6], 0);
  const check = 11 - (sum % 11);
  return body + (check === 11 ? "0" : check === 10 ? "K" : String(check));
}

/** IBAN: a German, British or Dutch account (formats without a national check), its two check digits computed. */
function iban(random: Random): string {
  const country = pick(random, ["DE", "GB", "NL"]);
  const bban = country === "DE"
    ? digits(random, 18)
    : fromAlphabet(random, LETTERS, 4) + digits(random, country === "GB" ? 14 : 10);
  return composeIBAN({ countryCode: country, bban })!;
}

/** BIC: four letters (the bank), a country, two letters (the place: no digit, which would mark a test BIC). */
const swift = (random: Random) =>
  fromAlphabet(random, LETTERS, 4) + pick(random, ["US", "DE", "GB", "NL", "ES", "FR"]) +
  fromAlphabet(random, LETTERS, 2);

/** ABA routing number: a Federal Reserve district (01-12), six digits, the 3-7-1 check digit. */
function aba(random: Random): string {
  const first8 = `${pad2(int(random, 1, 12))}${digits(random, 6)}`;
  const d = [...first8].map(Number);
  const sum = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5]);
  return first8 + String((10 - (sum % 10)) % 10);
}

/** A random (EVP) PIX key: a version 4 UUID. */
function uuidV4(random: Random): string {
  const hex = fromAlphabet(random, "0123456789abcdef", 32).split("");
  hex[12] = "4";
  hex[16] = "89ab"[int(random, 0, 3)];
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Brazilian area codes (DDD) of state capitals, for PIX phone keys. */
const DDD = [11, 21, 31, 41, 47, 51, 61, 71, 81, 85, 91, 92];

/**
 * Every type the sandbox hands out, with its generator; the order is the docs' table's (docs/sandbox.md, "Test
 * documents"). PIX keys of type CPF and CNPJ are a `cpf` or `cnpj`.
 */
export const TEST_DOCUMENT_GENERATORS = {
  cpf,
  cnpj,
  pix_email: (random: Random) =>
    `sandbox.${fromAlphabet(random, "abcdefghijklmnopqrstuvwxyz0123456789", 10)}@example.com`,
  pix_phone: (random: Random) => `+55${pick(random, DDD)}9${digits(random, 8)}`,
  pix_evp: uuidV4,
  curp,
  rfc: (random: Random) => rfc(random, 3),
  rfc_pf: (random: Random) => rfc(random, 4),
  clabe: clabeNumber,
  cc: (random: Random) => `${int(random, 1, 9)}${digits(random, 9)}`,
  ce: (random: Random) => `${int(random, 1, 9)}${digits(random, 6)}`,
  nit,
  rut,
  passport: (random: Random) => fromAlphabet(random, LETTERS, 2) + digits(random, 7),
  tax_id: (random: Random) => `${int(random, 1, 9)}${digits(random, 8)}`,
  iban,
  swift,
  aba,
} satisfies Record<string, (random: Random) => string>;

export type TestDocumentType = keyof typeof TEST_DOCUMENT_GENERATORS;
export const TEST_DOCUMENT_TYPES = Object.keys(TEST_DOCUMENT_GENERATORS) as [TestDocumentType, ...TestDocumentType[]];

/** Random numbers from the platform's cryptographic source, for the route: no two callers share a sequence. */
export const cryptoRandom: Random = () => crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;

/** `count` distinct fresh values of `type` (1 to MAX_TEST_DOCUMENTS; the route's schema bounds it). */
export function generateTestDocuments(
  type: TestDocumentType,
  count: number,
  random: Random = cryptoRandom,
): { type: TestDocumentType; value: string }[] {
  const values = new Set<string>();
  // a repeat is rare in every type's space; the attempts are bounded all the same
  for (let attempt = 0; values.size < count && attempt < count * 10; attempt++) {
    values.add(TEST_DOCUMENT_GENERATORS[type](random));
  }
  return [...values].map((value) => ({ type, value }));
}
