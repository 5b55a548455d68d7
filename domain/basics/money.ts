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
