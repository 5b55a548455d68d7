/**
 * Money as exact decimal strings with two places, carried as bigint cents in arithmetic.
 * Never a float: "0.1" + "0.2" is "0.30" here.
 */
import { invalidFormat } from "./errors.ts";

const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;

/**
 * What an amount that is not such a string hears, whichever field it is: `1.500,00` (a thousands dot and a decimal
 * comma, as Brazil writes money) is the usual one, so the example shows the dot.
 */
export const DECIMAL_FORMAT = invalidFormat("a decimal string with a dot", '"1500.00"');
/** A decimal with more places than cents (`1.505`): the form is right but for its last digits. */
export const DECIMAL_PLACES = invalidFormat("at most two decimal places", '"1.50"');
/** A negative amount where only more than zero will do (a payment's `value`). */
export const NOT_POSITIVE = invalidFormat("an amount greater than 0", '"1500.00"');
/** A negative amount where zero will do (an income). */
export const NEGATIVE = invalidFormat("an amount of 0 or more", '"1500.00"');
/** Zero where only more than zero will do: its own words since before these (docs/errors.md, Messages). */
export const ZERO = "must be greater than 0";

const SIGNED_DECIMAL = /^(-?)(\d+)(?:\.(\d*))?$/;

/**
 * Why `value` is not an amount of money, or null when it is one: the one rule every field of money is checked by
 * (docs/errors.md, "What a format expects"), each case in its own words so a client learns which part to fix: not a
 * number written with a dot, more than two decimal places, or below what the field takes (`least`: more than zero, or
 * zero and more). A negative amount hears of its sign before its decimals.
 *
 * @example
 * ```ts
 * amountProblem("1.505", "positive"); // 'has invalid format: expected at most two decimal places, e.g. "1.50"'
 * amountProblem("-5", "positive"); // 'has invalid format: expected an amount greater than 0, e.g. "1500.00"'
 * amountProblem("0", "zero"); // null
 * ```
 */
export function amountProblem(value: string, least: "positive" | "zero"): string | null {
  const m = SIGNED_DECIMAL.exec(value);
  if (!m || m[3] === "") return DECIMAL_FORMAT;
  const [, minus, units, places = ""] = m;
  if (minus) return least === "positive" ? NOT_POSITIVE : NEGATIVE;
  if (places.length > 2) return DECIMAL_PLACES;
  if (least === "positive" && /^0+$/.test(units + places)) return ZERO;
  return null;
}

/** Cents of a non-negative decimal string with at most two places, or null when it is not one. */
export function toCents(value: string): bigint | null {
  const m = DECIMAL.exec(value);
  if (!m) return null;
  return BigInt(m[1]) * 100n + BigInt((m[2] ?? "").padEnd(2, "0"));
}

export function fromCents(cents: bigint): string {
  const sign = cents < 0n ? "-" : "";
  const abs = cents < 0n ? -cents : cents;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, "0")}`;
}
