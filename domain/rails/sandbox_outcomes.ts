/**
 * The sandbox's magic values that are not a field of their own (docs/sandbox.md, "Magic values"): account numbers the
 * receiving bank refuses, so a pay-out made through the transactions API, which has no `fail_with`, can reach
 * `wire_waiting_correction` too. A file of its own because the rule is the sandbox's, not the rails': only a service
 * with SANDBOX on applies it.
 */
import type { WireErrorCode } from "./wires.ts";

/**
 * The last ten digits of an account number the sandbox's receiving bank refuses, and the code it answers: six nines,
 * then the code with its letters as digits (A=1, C=3, G=7, H=8), so `…9999991303` is AC03.
 */
export const REFUSING_ACCOUNT_ENDINGS: Readonly<Record<string, WireErrorCode>> = {
  "9999991303": "AC03",
  "9999991314": "AC14",
  "9999993811": "CH11",
  "9999991703": "AG03",
};

/**
 * The code the sandbox's receiving bank refuses a pay-out to this account with, or null when it takes it. Only the
 * digits count (a Brazilian number's dash and X, an international number's letters are skipped), so a CLABE can carry
 * an ending too.
 */
export function bankRefusal(accountNumber: string | null): WireErrorCode | null {
  const digits = (accountNumber ?? "").replace(/\D/g, "");
  return digits.length >= 10 ? REFUSING_ACCOUNT_ENDINGS[digits.slice(-10)] ?? null : null;
}
