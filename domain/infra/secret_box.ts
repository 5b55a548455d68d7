/**
 * Secrets the service must be able to read back (webhook signing secrets, and the stored answers of idempotent
 * requests, which may carry them) are stored sealed: AES-256-GCM with a random 96-bit nonce per value. A sealed text
 * reads `enc:v1:<key id>:<base64url of nonce and ciphertext>`; sealed bytes are the same `enc:v1:<key id>:` start
 * followed by the nonce and ciphertext as they are. The key id (the first 4 bytes of the key's SHA-256) tells which
 * key sealed a value, so the key can be rotated: the current key seals and opens, the previous one only opens
 * (docs/production.md). Each value is sealed for a context (for example the row it belongs to) that must be given
 * again to open it, so a sealed value copied elsewhere does not open.
 */

import type { Config } from "./config.ts";

export const SEALED_PREFIX = "enc:v1:";

export type SecretBox = {
  /** Id of the key that seals. */
  readonly keyId: string;
  /** The start every value sealed with the current key shares (as text, and as the first bytes of sealed bytes). */
  readonly currentPrefix: string;
  seal(plaintext: string, context: string): Promise<string>;
  /** Throws when the value is not sealed, was sealed with an unknown key, for another context, or was altered. */
  open(sealed: string, context: string): Promise<string>;
  /** `seal` for bytes: `currentPrefix` as ASCII, then nonce, ciphertext and tag (44 bytes more than `plain`). */
  sealBytes(plain: Uint8Array, context: string): Promise<Uint8Array<ArrayBuffer>>;
  /** `open` for what `sealBytes` made; throws as `open` does. Not cached, unlike `open`. */
  openBytes(sealed: Uint8Array, context: string): Promise<Uint8Array<ArrayBuffer>>;
};

export const isSealed = (value: string) => value.startsWith(SEALED_PREFIX);

const encoder = new TextEncoder();
const SEALED_PREFIX_BYTES = encoder.encode(SEALED_PREFIX);
/** `enc:v1:` + 8 hex digits of key id + `:` */
const PREFIX_LENGTH = SEALED_PREFIX.length + 9;

/** Whether `bytes` start as sealed bytes do (`enc:v1:`). */
export const isSealedBytes = (bytes: Uint8Array) =>
  bytes.length >= SEALED_PREFIX_BYTES.length && SEALED_PREFIX_BYTES.every((b, i) => bytes[i] === b);

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
  const currentPrefixBytes = encoder.encode(currentPrefix);

  /** Nonce, ciphertext and tag of `plain`, written into a new array after `offset` free bytes. */
  async function encrypt(plain: Uint8Array<ArrayBuffer>, context: string, offset: number) {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = new Uint8Array(
      await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
        keys.get(keyId)!,
        plain,
      ),
    );
    const out = new Uint8Array(offset + iv.length + sealed.length);
    out.set(iv, offset);
    out.set(sealed, offset + iv.length);
    return out;
  }

  async function decrypt(id: string, bytes: Uint8Array<ArrayBuffer>, context: string) {
    const key = keys.get(id);
    if (!key) {
      throw new Error(
        `a secret is sealed with key ${id}, which is neither SECRET_ENCRYPTION_KEY (${keyId}) nor ` +
          "SECRET_ENCRYPTION_KEY_PREVIOUS",
      );
    }
    try {
      return new Uint8Array(
        await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: bytes.subarray(0, 12), additionalData: encoder.encode(context) },
          key,
          bytes.subarray(12),
        ),
      );
    } catch {
      throw new Error(`a secret sealed with key ${id} does not open: altered, or sealed for another place`);
    }
  }

  // Every delivery attempt opens its endpoint's secrets: a Web Crypto decrypt costs tens of microseconds, a lookup
  // nothing. A sealed value is unique (random nonce) and bound to its context, so the pair names one plaintext.
  const opened = new Map<string, string>();
  return {
    keyId,
    currentPrefix,
    async seal(plaintext, context) {
      const out = await encrypt(encoder.encode(plaintext), context, 0);
      return `${currentPrefix}${out.toBase64({ alphabet: "base64url", omitPadding: true })}`;
    },
    async open(value, context) {
      const cacheKey = `${context}\n${value}`;
      const known = opened.get(cacheKey);
      if (known !== undefined) return known;
      const match = /^enc:v1:([0-9a-f]{8}):([A-Za-z0-9_-]+)$/.exec(value);
      if (!match) throw new Error("not a sealed value");
      const plain = await decrypt(match[1], Uint8Array.fromBase64(match[2], { alphabet: "base64url" }), context);
      const text = new TextDecoder().decode(plain);
      if (opened.size >= MAX_OPENED) opened.clear();
      opened.set(cacheKey, text);
      return text;
    },
    async sealBytes(plain, context) {
      const out = await encrypt(new Uint8Array(plain), context, currentPrefixBytes.length);
      out.set(currentPrefixBytes);
      return out;
    },
    async openBytes(sealed, context) {
      const head = new TextDecoder().decode(sealed.subarray(0, PREFIX_LENGTH));
      const match = /^enc:v1:([0-9a-f]{8}):$/.exec(head);
      if (!match || sealed.length < PREFIX_LENGTH + 12 + 16) throw new Error("not sealed bytes");
      return await decrypt(match[1], new Uint8Array(sealed.subarray(PREFIX_LENGTH)), context);
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
