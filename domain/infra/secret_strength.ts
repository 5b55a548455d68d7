/**
 * The one rule by which production refuses a guessable secret (docs/production.md): a JWT_SECRET of 32 spaces or an
 * all-zero SECRET_ENCRYPTION_KEY has the right length and none of the randomness. Outside production these are
 * accepted, so tests and laptops may use simple keys.
 */

/** A secret of fewer distinct bytes than this is refused (half its bytes when it holds fewer than twice as many). */
export const MIN_DISTINCT_BYTES = 16;

/**
 * The bytes a secret given as text stands for. Hex (an even number of digits, dashes allowed as in a UUID) spells
 * them two digits a byte, so it is judged by those bytes: as characters it has at most 16 distinct ones, and about a
 * quarter of `openssl rand -hex 32` outputs lack one of the 16 digits. Any other text is its UTF-8 bytes.
 */
export function secretMaterial(text: string): Uint8Array {
  const digits = text.replaceAll("-", "");
  if (/^[0-9a-fA-F-]+$/.test(text) && /^(?:[0-9a-fA-F]{2})+$/.test(digits)) return Uint8Array.fromHex(digits);
  return new TextEncoder().encode(text);
}

/**
 * Why `material` (key bytes, or `secretMaterial` of a text) is too guessable to be a production secret, or null: fewer
 * than MIN_DISTINCT_BYTES bytes, or fewer distinct bytes than MIN_DISTINCT_BYTES (than half its length when that is
 * less; 16 random bytes, a UUID's worth, have fewer than 16 distinct ones one time in three). Random values pass:
 * none of 200,000 draws each of 32 random bytes, `openssl rand -hex 16` and `-hex 32`, `-base64 18` and `-base64 32`,
 * UUIDs or 16 and 32 random letters and digits was refused. The message never repeats the secret.
 */
export function lowEntropy(material: Uint8Array): string | null {
  if (material.length < MIN_DISTINCT_BYTES) {
    return `holds ${material.length} byte(s) of key material, fewer than ${MIN_DISTINCT_BYTES}`;
  }
  const distinct = new Set(material).size;
  const wanted = Math.min(MIN_DISTINCT_BYTES, Math.ceil(material.length / 2));
  if (distinct === 1) return "is one byte repeated";
  if (distinct < wanted) return `has only ${distinct} distinct bytes, fewer than ${wanted}`;
  return null;
}
