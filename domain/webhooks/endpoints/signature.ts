/**
 * The `service-signature` header of webhook deliveries (docs/webhooks.md, Signatures):
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>[,v0=<same with a previous secret>]...`,
 * one v0 per secret rotated away within the last 24 hours, most recent first.
 *
 * The sender uses `signPayload`; receivers (and our tests) use `verifySignature`. Signing runs on every delivery
 * attempt, so it uses `node:crypto`'s synchronous HMAC (about 9 µs against 45 µs for a Web Crypto sign, measured);
 * verifying uses Web Crypto, whose `verify` compares in constant time.
 */
import { createHmac, createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";

const encoder = new TextEncoder();

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

function fromHex(hex: string): Uint8Array | null {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return null;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Lowercase hex HMAC-SHA256 of `<t>.<rawBody>`. */
export function computeSignature(secret: string, timestamp: number, rawBody: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${rawBody}`).digest("hex");
}

/**
 * The header value for one delivery. `previousSecrets` are the secrets rotated away that still sign (each for 24
 * hours after its rotation), most recent first: each adds a `v0`, so receivers that have not switched to the new
 * secret yet, or are still on one from before several quick rotations, keep verifying.
 */
export function signPayload(
  rawBody: string,
  secret: string,
  opts: { previousSecrets?: readonly string[]; timestamp?: number } = {},
): string {
  const t = opts.timestamp ?? Math.floor(Date.now() / 1000);
  let header = `t=${t},v1=${computeSignature(secret, t, rawBody)}`;
  for (const previous of opts.previousSecrets ?? []) {
    if (previous) header += `,v0=${computeSignature(previous, t, rawBody)}`;
  }
  return header;
}

/**
 * The parts of a `service-signature` header, or null when it is malformed. `v0s` holds every v0 in order (one per
 * previous secret still signing); `v0` is the first of them, the most recent previous secret.
 */
export function parseSignatureHeader(header: string): { t: number; v1: string; v0?: string; v0s: string[] } | null {
  const parts = new Map<string, string>();
  const v0s: string[] = [];
  for (const item of header.split(",")) {
    const at = item.indexOf("=");
    if (at <= 0) return null;
    const key = item.slice(0, at).trim();
    const value = item.slice(at + 1).trim();
    if (key === "v0") v0s.push(value);
    else parts.set(key, value);
  }
  const t = parts.get("t");
  const v1 = parts.get("v1");
  if (!t || !/^\d{1,12}$/.test(t) || !v1) return null;
  return { t: Number(t), v1, ...(v0s.length ? { v0: v0s[0] } : {}), v0s };
}

/**
 * True when `header` signs `rawBody` (the exact bytes received, before any JSON parsing) with one of `secrets`
 * and its timestamp is within `toleranceSeconds` of `now` (default 5 minutes; 0 or Infinity disables the check).
 *
 * Pass the current secret, and during the 24 hours after a rotation the previous one too: each secret is checked
 * against v1 and every v0. Comparisons run through `crypto.subtle.verify`, which is constant-time.
 */
export async function verifySignature(
  rawBody: string,
  header: string | null | undefined,
  secrets: string | readonly string[],
  opts: { toleranceSeconds?: number; now?: number } = {},
): Promise<boolean> {
  if (!header) return false;
  const parsed = parseSignatureHeader(header);
  if (!parsed) return false;
  const tolerance = opts.toleranceSeconds ?? 300;
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (tolerance > 0 && Math.abs(now - parsed.t) > tolerance) return false;

  const signed = encoder.encode(`${parsed.t}.${rawBody}`);
  const candidates = [parsed.v1, ...parsed.v0s].map(fromHex)
    .filter((sig): sig is Uint8Array => sig !== null && sig.length === 32);
  for (const secret of typeof secrets === "string" ? [secrets] : secrets) {
    if (!secret) continue;
    const key = await hmacKey(secret, "verify");
    for (const sig of candidates) {
      if (await crypto.subtle.verify("HMAC", key, sig as Uint8Array<ArrayBuffer>, signed)) return true;
    }
  }
  return false;
}

/**
 * The Standard Webhooks headers (https://www.standardwebhooks.com), sent beside `service-signature` so that receivers
 * can verify with any Standard Webhooks library: `webhook-id` (the delivery record id, the same on every attempt),
 * `webhook-timestamp` (the same unix seconds as `t=`) and `webhook-signature`, one `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<raw body>">` per secret (the current one, then each previous one still signing),
 * space-separated. The key is the secret's text, as for `service-signature`: libraries verify it in their "raw"
 * secret format (docs/webhooks.md, Standard Webhooks). Each of `opts.signingKeys` (`whsk_` Ed25519 keys) adds a
 * `v1a,<base64 signature>` of the same text; `asymmetricFirst` puts those first (an ed25519 endpoint's own scheme).
 */
export function standardWebhookHeaders(
  id: string,
  timestamp: number,
  rawBody: string,
  secrets: readonly string[],
  opts: { signingKeys?: readonly string[]; asymmetricFirst?: boolean } = {},
): { "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string } {
  const signed = `${id}.${timestamp}.${rawBody}`;
  const symmetric: string[] = [];
  for (const secret of secrets) {
    if (!secret) continue;
    symmetric.push(`v1,${createHmac("sha256", secret).update(signed).digest("base64")}`);
  }
  const asymmetric = (opts.signingKeys ?? []).map((key) => `v1a,${signEd25519(key, signed)}`);
  const signatures = opts.asymmetricFirst ? [...asymmetric, ...symmetric] : [...symmetric, ...asymmetric];
  return { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signatures.join(" ") };
}

/*
 * Ed25519, Standard Webhooks' asymmetric scheme (docs/webhooks.md, "Ed25519 signatures"): `v1a,<base64 signature of
 * "<id>.<timestamp>.<raw body>">` in `webhook-signature`. Keys are written as the standard's identifiable texts:
 * `whpk_<base64 of the 32-byte public key>` (published on the endpoint) and `whsk_<base64 of the 32-byte private
 * key>` (RFC 8032's seed; stored sealed, never shown). Signing runs on every attempt, so it uses `node:crypto`'s
 * synchronous `sign` over a key object kept per key, like the HMAC above.
 */

export const PUBLIC_KEY_PREFIX = "whpk_";
export const SECRET_KEY_PREFIX = "whsk_";
/** The DER (PKCS #8) start of an Ed25519 private key, followed by its 32 bytes. */
const PKCS8_ED25519 = Uint8Array.fromHex("302e020100300506032b657004220420");
const WHSK_RE = /^whsk_([A-Za-z0-9+/]{43}=)$/;

/** A new key pair: the `whsk_` private key to seal, the `whpk_` public key to publish. */
export async function newSigningKey(): Promise<{ secretKey: string; publicKey: string }> {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  return {
    secretKey: `${SECRET_KEY_PREFIX}${pkcs8.subarray(PKCS8_ED25519.length).toBase64()}`,
    publicKey: `${PUBLIC_KEY_PREFIX}${raw.toBase64()}`,
  };
}

/** Key objects per `whsk_` text: importing one costs more than a signature. Bounded like the secret box's cache. */
const keyObjects = new Map<string, KeyObject>();
const MAX_KEY_OBJECTS = 10_000;

function privateKeyObject(secretKey: string): KeyObject {
  let key = keyObjects.get(secretKey);
  if (!key) {
    const match = WHSK_RE.exec(secretKey);
    if (!match) throw new Error("not a whsk_ Ed25519 private key");
    const seed = Uint8Array.fromBase64(match[1]);
    const der = new Uint8Array(PKCS8_ED25519.length + seed.length);
    der.set(PKCS8_ED25519);
    der.set(seed, PKCS8_ED25519.length);
    key = createPrivateKey({ key: der as unknown as Buffer, format: "der", type: "pkcs8" });
    if (keyObjects.size >= MAX_KEY_OBJECTS) keyObjects.clear();
    keyObjects.set(secretKey, key);
  }
  return key;
}

/** The base64 Ed25519 signature of `message` with a `whsk_` private key. */
export function signEd25519(secretKey: string, message: string): string {
  return sign(null, encoder.encode(message), privateKeyObject(secretKey)).toString("base64");
}

/** The `whpk_` public key of a `whsk_` private key. */
export function publicKeyOf(secretKey: string): string {
  const jwk = createPublicKey(privateKeyObject(secretKey)).export({ format: "jwk" }) as { x: string };
  return `${PUBLIC_KEY_PREFIX}${Uint8Array.fromBase64(jwk.x, { alphabet: "base64url" }).toBase64()}`;
}
