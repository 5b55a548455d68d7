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
