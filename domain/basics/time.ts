/** People and bank accounts: UTC without zone designator or fraction (`2026-11-21T07:00:00`). */
export function naiveUtc(d: Date): string {
  return d.toISOString().slice(0, 19);
}

/** Webhook endpoints, events and attempts: UTC ISO 8601 with milliseconds and `Z`. */
export function isoUtc(d: Date): string {
  return d.toISOString();
}

export function isoUtcOrNull(d: Date | null): string | null {
  return d ? d.toISOString() : null;
}

/**
 * A `timestamptz` literal for any instant: Postgres reads years 1 to 9999 in ISO form, but neither "+010000-…"
 * nor "0000-…" (the forms `toISOString` gives past the ends of that range), which a bound written with an offset
 * on the first or last day of the calendar reaches.
 */
export function pgTimestamptz(d: Date): string {
  const year = d.getUTCFullYear();
  const iso = d.toISOString();
  if (year >= 1 && year <= 9999) return iso;
  const rest = iso.slice(iso.indexOf("-", 1));
  return year > 9999 ? `${year}${rest}` : `${String(1 - year).padStart(4, "0")}${rest} BC`;
}

/** Seconds for a Retry-After header: whole seconds, at least 1. */
export function secondsToWait(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
