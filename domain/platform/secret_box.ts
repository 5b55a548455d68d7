import type { Config } from "./config.ts";

/**
 * Secrets the service must be able to read back (webhook signing secrets) are stored sealed: AES-256-GCM with a
 * random 96-bit nonce per value, as `enc:v1:<key id>:<base64url of nonce and ciphertext>`. The key id (the first
 * 4 bytes of the key's SHA-256) tells which key sealed a value, so the key can be rotated: the current key seals
 * and opens, the previous one only opens (docs/production.md). Each value is sealed for a context (for example
 * the row it belongs to) that must be given again to open it, so a sealed value copied elsewhere does not open.
 */

export const SEALED_PREFIX = "enc:v1:";

export type SecretBox = {
  /** Id of the key that seals. */
  readonly keyId: string;
  /** The start every value sealed with the current key shares. */
  readonly currentPrefix: string;
  seal(plaintext: string, context: string): Promise<string>;
  /** Throws when the value is not sealed, was sealed with an unknown key, for another context, or was altered. */
  open(sealed: string, context: string): Promise<string>;
};

export const isSealed = (value: string) => value.startsWith(SEALED_PREFIX);

const encoder = new TextEncoder();
/** Opened secrets kept per box: enough for every endpoint of a busy instance, small next to the process. */
const MAX_OPENED = 10_000;

async function keyIdOf(key: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", key)).subarray(0, 4).toHex();
}

/** A box sealing with `current` and opening what `current` or any of `previous` sealed. */
export async function createSecretBox(current: Uint8Array, previous: Uint8Array[] = []): Promise<SecretBox> {
  const keys = new Map<string, CryptoKey>();
  const currentBytes = new Uint8Array(current);
  for (const raw of [currentBytes, ...previous.map((k) => new Uint8Array(k))]) {
    if (raw.length !== 32) throw new Error("an encryption key must be 32 bytes");
    const id = await keyIdOf(raw);
    if (keys.has(id)) continue; // the same key given twice
    keys.set(id, await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]));
  }
  const keyId = await keyIdOf(currentBytes);
  const currentPrefix = `${SEALED_PREFIX}${keyId}:`;
  // Every delivery attempt opens its endpoint's secrets: a Web Crypto decrypt costs tens of microseconds, a lookup
  // nothing. A sealed value is unique (random nonce) and bound to its context, so the pair names one plaintext.
  const opened = new Map<string, string>();
  return {
    keyId,
    currentPrefix,
    async seal(plaintext, context) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(
        await crypto.subtle.encrypt(
          { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
          keys.get(keyId)!,
          encoder.encode(plaintext),
        ),
      );
      const out = new Uint8Array(iv.length + sealed.length);
      out.set(iv);
      out.set(sealed, iv.length);
      return `${currentPrefix}${out.toBase64({ alphabet: "base64url", omitPadding: true })}`;
    },
    async open(value, context) {
      const cacheKey = `${context}\n${value}`;
      const known = opened.get(cacheKey);
      if (known !== undefined) return known;
      const match = /^enc:v1:([0-9a-f]{8}):([A-Za-z0-9_-]+)$/.exec(value);
      if (!match) throw new Error("not a sealed value");
      const key = keys.get(match[1]);
      if (!key) {
        throw new Error(
          `a secret is sealed with key ${match[1]}, which is neither SECRET_ENCRYPTION_KEY (${keyId}) nor ` +
            "SECRET_ENCRYPTION_KEY_PREVIOUS",
        );
      }
      const bytes = Uint8Array.fromBase64(match[2], { alphabet: "base64url" });
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: bytes.subarray(0, 12), additionalData: encoder.encode(context) },
          key,
          bytes.subarray(12),
        );
        const text = new TextDecoder().decode(plain);
        if (opened.size >= MAX_OPENED) opened.clear();
        opened.set(cacheKey, text);
        return text;
      } catch {
        throw new Error(`a secret sealed with key ${match[1]} does not open: altered, or sealed for another place`);
      }
    },
  };
}

const boxes = new WeakMap<Config, Promise<SecretBox>>();

/**
 * The box of this configuration: SECRET_ENCRYPTION_KEY (and SECRET_ENCRYPTION_KEY_PREVIOUS). Outside production the
 * configuration carries the key generated for this machine when the variable is unset (`loadConfigWithLocalSecrets`).
 */
export function secretBoxFor(config: Config): Promise<SecretBox> {
  let box = boxes.get(config);
  if (!box) {
    const key = config.secretEncryptionKey;
    box = key
      ? createSecretBox(key, config.secretEncryptionKeyPrevious ? [config.secretEncryptionKeyPrevious] : [])
      : Promise.reject(new Error("SECRET_ENCRYPTION_KEY is not set, and no key was generated for this machine"));
    box.catch(() => boxes.delete(config));
    boxes.set(config, box);
  }
  return box;
}
