/**
 * Money as exact decimal strings with two places, carried as bigint cents in arithmetic.
 * Never a float: "0.1" + "0.2" is "0.30" here.
 */
const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;

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
