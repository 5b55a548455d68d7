/**
 * Check digits written from each published algorithm, apart from the code under test, so the unit tests compute
 * their expected values instead of copying them from the code's output.
 */

const digits = (s: string) => [...s].map(Number);

/** Brazil's CPF (Receita Federal): two mod-11 digits, weights 10..2 then 11..2; a remainder under 2 gives 0. */
export function cpf(base9: string): string {
  const d = digits(base9);
  for (const len of [9, 10]) {
    const sum = d.slice(0, len).reduce((s, v, i) => s + v * (len + 1 - i), 0);
    const r = sum % 11;
    d.push(r < 2 ? 0 : 11 - r);
  }
  return d.join("");
}

/** A valid CPF from nine random digits (not all the same, which the service refuses), so every call gives a new person. */
export function randomCpf(): string {
  let base: number[];
  do base = Array.from({ length: 9 }, () => Math.floor(Math.random() * 10)); while (new Set(base).size === 1);
  return cpf(base.join(""));
}

/** Brazil's CNPJ: two mod-11 digits, weights 5,4,3,2,9..2 then 6,5,4,3,2,9..2; a remainder under 2 gives 0. */
export function cnpj(base12: string): string {
  const d = digits(base12);
  for (const len of [12, 13]) {
    const weights = len === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
    const r = d.slice(0, len).reduce((s, v, i) => s + v * weights[i], 0) % 11;
    d.push(r < 2 ? 0 : 11 - r);
  }
  return d.join("");
}

/**
 * Mexico's CURP (RENAPO): each of the first 17 characters takes its value in "0-9 A-N Ñ O-Z" (0..36) times a
 * weight from 18 down to 2; the digit is 10 minus the sum mod 10, and 0 for 10.
 */
export function curp(first17: string): string {
  const table = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ";
  const sum = [...first17].reduce((s, c, i) => s + table.indexOf(c) * (18 - i), 0);
  return first17 + String((10 - (sum % 10)) % 10);
}

/**
 * A CURP from its parts: initials, birth date YYMMDD, sex, state, inner consonants and the century character, each by
 * default those of GOMA900101HDFRRN0; its check digit computed.
 */
export function curpOf(
  parts: { start?: string; date?: string; sex?: string; state?: string; tail?: string } = {},
): string {
  return curp(
    `${parts.start ?? "GOMA"}${parts.date ?? "900101"}${parts.sex ?? "H"}${parts.state ?? "DF"}${parts.tail ?? "RRN0"}`,
  );
}

/** Mexico's CLABE (Banxico): weights 3, 7, 1 repeating, each product mod 10; the digit is 10 minus the sum mod 10. */
export function clabe(first17: string): string {
  const sum = digits(first17).reduce((s, v, i) => s + ((v * [3, 7, 1][i % 3]) % 10), 0);
  return first17 + String((10 - (sum % 10)) % 10);
}

/** Colombia's NIT (DIAN): prime weights 3, 7, 13, ... from the rightmost digit; r = sum mod 11, digit r<2 ? r : 11-r. */
export function nit(base: string): string {
  const weights = [3, 7, 13, 17, 19, 23, 29, 37, 41, 43, 47, 53, 59, 67, 71];
  const sum = digits(base).reverse().reduce((s, v, i) => s + v * weights[i], 0);
  const r = sum % 11;
  return base + String(r < 2 ? r : 11 - r);
}

/**
 * Mexico's RFC (SAT): a company's 12 characters are read with a leading space; each of the first 12 takes its value in
 * "0-9 A-N & O-Z space Ñ" (0..38) times a weight from 13 down to 2; r = sum mod 11; the digit is 0 for r = 0, "A" for
 * 11 - r = 10, else 11 - r.
 */
export function rfc(first11: string): string {
  const table = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ Ñ";
  const padded = ` ${first11}`;
  const r = [...padded].reduce((s, c, i) => s + table.indexOf(c) * (13 - i), 0) % 11;
  return first11 + (r === 0 ? "0" : 11 - r === 10 ? "A" : String(11 - r));
}

/** Chile's RUT (SII): weights 2..7 repeating from the rightmost digit; 11 - sum mod 11, "0" for 11 and "K" for 10. */
export function rut(body: string): string {
  const sum = digits(body).reverse().reduce((s, v, i) => s + v * (2 + (i % 6)), 0);
  const d = 11 - (sum % 11);
  return body + (d === 11 ? "0" : d === 10 ? "K" : String(d));
}

/** US ABA routing number: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10; the last digit makes it so. */
export function aba(first8: string): string {
  const d = digits(first8);
  const partial = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5]);
  return first8 + String((10 - (partial % 10)) % 10);
}

/** IBAN (ISO 13616): check digits 98 minus (BBAN + country + "00", letters as 10..35) mod 97, two digits. */
export function iban(country: string, bban: string): string {
  const numeric = [...`${bban}${country}00`].map((c) => /\d/.test(c) ? c : String(c.charCodeAt(0) - 55)).join("");
  let mod = 0;
  for (const c of numeric) mod = (mod * 10 + Number(c)) % 97;
  return `${country}${String(98 - mod).padStart(2, "0")}${bban}`;
}

/** The same number with its last digit changed: a check digit that cannot be right. */
export function wrongLastDigit(s: string): string {
  return s.slice(0, -1) + String((Number(s.at(-1)) + 1) % 10);
}
