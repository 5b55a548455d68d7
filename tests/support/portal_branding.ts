/**
 * What the tests of a branded portal link share (tests/webhooks/portal_links_test.ts over HTTP, tests/console/
 * portal_test.ts in a browser): small real images to give as a logo, and the operator's words a portal must never
 * show, read from the configuration's own source so that a setting added later is looked for too.
 */

/** A 1x1 PNG. */
export const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
/** A 1x1 WebP (lossless). */
export const WEBP_BASE64 = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==";
/** A 1x1 GIF: an image, but not one a logo may be. */
export const GIF_BASE64 = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

export const base64 = (bytes: Uint8Array) => btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
export const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

/** A PNG of exactly `size` bytes: the 1x1 image, then zeros (file-type reads it as a PNG all the same). */
export function pngOfSize(size: number): string {
  const png = bytesOf(PNG_BASE64);
  const out = new Uint8Array(size);
  out.set(png);
  return base64(out);
}

const configSource = Deno.readTextFileSync(new URL("../../domain/infra/config.ts", import.meta.url));

/**
 * Every environment variable's name domain/infra/config.ts knows (`[A-Z][A-Z0-9_]{3,}` with an underscore or as a
 * key of its schema): the operator's settings, which a platform's customer can neither read nor change.
 */
export const OPERATOR_SETTINGS: string[] = [
  ...new Set([
    ...[...configSource.matchAll(/^\s*([A-Z][A-Z0-9_]{3,})\s*:/gm)].map((m) => m[1]),
    ...[...configSource.matchAll(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]{2,})\b/g)].map((m) => m[1]),
  ]),
];

/** The console's words for its own operator, never a portal's. */
export const OPERATOR_PHRASES = ["Sign out", "Payments console"];

/** Which of the operator's words `text` holds. */
export function operatorWordsIn(text: string): string[] {
  const settings = OPERATOR_SETTINGS.filter((name) => new RegExp(`\\b${name}\\b`).test(text));
  return [...settings, ...OPERATOR_PHRASES.filter((p) => text.includes(p))];
}
