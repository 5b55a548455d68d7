/**
 * An endpoint's client certificate for mutual TLS (docs/webhooks.md, "Client certificates (mTLS)"): the checks on
 * save (PEM that parses, a private key that matches, not expired, bounded size), the private key sealed for its
 * endpoint and opened for each attempt, what the API shows of it (never the key), and the pass that re-seals the keys
 * after SECRET_ENCRYPTION_KEY is rotated. A file of its own because it is one control with its own rules, beside the
 * signing credentials (credentials.ts), which it shares nothing with but the secret box.
 */

import { createHash, createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import type { ErrorBag } from "../../basics/errors.ts";
import { isoUtc } from "../../basics/time.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import type { EndpointRow } from "./endpoint_row.ts";

/** A leaf and a few intermediates fit with room to spare; more is not a certificate chain a receiver needs. */
export const MAX_CLIENT_CERTIFICATE_CHARS = 16 * 1024;
/** An RSA 4096 key in PEM is about 3.3 KB; nothing bigger is a key a handshake should carry. */
export const MAX_CLIENT_KEY_CHARS = 8 * 1024;
/** At most this many certificates in the chain: the leaf and its intermediates. */
const MAX_CHAIN = 5;

/** The credential as a client sends it: both PEM texts. */
export type ClientCertificateInput = { certificate: string; private_key: string };

/** The credential as the sender presents it, opened; `id` names it in the connection pool without the key. */
export type ClientCredential = { cert: string; key: string; id: string };

const FIELD = "client_certificate";
const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const KEY_BLOCK = /^\s*-----BEGIN (RSA |EC )?PRIVATE KEY-----[\s\S]+-----END (RSA |EC )?PRIVATE KEY-----\s*$/;

/** A key is sealed for its endpoint and column: copied to another row or column, it does not open. */
const sealContext = (endpointId: string) => `webhook_endpoints:${endpointId}:client_key`;

/** The certificates of a PEM chain, leaf first; throws when a block does not parse. */
function parseChain(pem: string): X509Certificate[] {
  return (pem.match(CERT_BLOCK) ?? []).map((block) => new X509Certificate(block));
}

/**
 * Checks a credential a client sent, adding an error per field to `errors`: the certificate must be PEM (leaf first,
 * then at most four intermediates) that parses, each certificate valid now; the key an unencrypted PEM private key
 * that matches the leaf. Both bounded in size. A field that is not a string is left to the body's shape, which
 * refused it already (the routes run this rule on the parts that parsed too).
 */
export function checkClientCertificate(
  errors: ErrorBag,
  input: { certificate?: unknown; private_key?: unknown },
  now = new Date(),
): void {
  const chain = typeof input.certificate === "string" ? checkChain(errors, input.certificate, now) : [];
  const key = typeof input.private_key === "string" ? checkKey(errors, input.private_key) : null;
  if (chain.length > 0 && key !== null && !chain[0].checkPrivateKey(key)) {
    errors.add(
      `${FIELD}.private_key`,
      "does not match the certificate (the client certificate is the first one of the PEM)",
    );
  }
}

/** The certificates of a valid chain, leaf first; none (and an error) when it is refused. */
function checkChain(errors: ErrorBag, pem: string, now: Date): X509Certificate[] {
  const field = `${FIELD}.certificate`;
  if (pem.length > MAX_CLIENT_CERTIFICATE_CHARS) {
    errors.add(field, `is too long (at most ${MAX_CLIENT_CERTIFICATE_CHARS} characters)`);
    return [];
  }
  let chain: X509Certificate[];
  try {
    chain = parseChain(pem);
  } catch {
    chain = [];
  }
  if (chain.length === 0) {
    errors.add(
      field,
      "must be a PEM certificate (-----BEGIN CERTIFICATE-----), the client certificate first, then its intermediates",
    );
    return [];
  }
  if (chain.length > MAX_CHAIN) {
    errors.add(field, `must hold at most ${MAX_CHAIN} certificates (the client's and its intermediates)`);
    return [];
  }
  const expired = chain.find((c) => c.validToDate.getTime() <= now.getTime());
  if (expired) {
    const which = expired === chain[0] ? "" : "an intermediate, ";
    errors.add(field, `has expired (${which}on ${isoUtc(expired.validToDate)})`);
    return [];
  }
  const early = chain.find((c) => c.validFromDate.getTime() > now.getTime());
  if (early) {
    errors.add(field, `is not valid yet (from ${isoUtc(early.validFromDate)})`);
    return [];
  }
  return chain;
}

/** The private key, parsed; null (and an error) when it is refused. */
function checkKey(errors: ErrorBag, pem: string): KeyObject | null {
  const field = `${FIELD}.private_key`;
  if (pem.length > MAX_CLIENT_KEY_CHARS) {
    errors.add(field, `is too long (at most ${MAX_CLIENT_KEY_CHARS} characters)`);
    return null;
  }
  try {
    if (KEY_BLOCK.test(pem)) return createPrivateKey(pem);
  } catch { /* refused below */ }
  errors.add(field, "must be an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)");
  return null;
}

/** The columns of a checked credential for `endpointId`, its key sealed; both null to remove it. */
export async function storedClientCertificate(
  box: SecretBox,
  endpointId: string,
  input: ClientCertificateInput | null,
): Promise<{ client_certificate: string | null; sealed_client_key: string | null }> {
  if (input === null) return { client_certificate: null, sealed_client_key: null };
  return {
    client_certificate: input.certificate.trim(),
    sealed_client_key: await box.seal(input.private_key.trim(), sealContext(endpointId)),
  };
}

/** The endpoint's credential, opened, to present on an attempt; null without one. Throws when the key does not open. */
export async function openClientCredential(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "client_certificate" | "sealed_client_key">,
): Promise<ClientCredential | null> {
  if (!e.client_certificate || !e.sealed_client_key) return null;
  const key = await box.open(e.sealed_client_key, sealContext(e.id));
  // a name for the pool: one connection is only ever used with the credential it was opened with
  const id = createHash("sha256").update(e.client_certificate).update("\0").update(key).digest("hex");
  return { cert: e.client_certificate, key, id };
}

/** A certificate's distinguished name on one line, as the API shows it: `O=Example, CN=client`. */
const oneLine = (name: string) => name.split("\n").filter(Boolean).join(", ");

/** What the API shows of the endpoint's client certificate (never the key), or null without one. */
export function presentClientCertificate(e: Pick<EndpointRow, "client_certificate">) {
  if (!e.client_certificate) return null;
  let leaf: X509Certificate | undefined;
  try {
    // checked when saved; a certificate this build cannot read must not fail the listing of every endpoint
    [leaf] = parseChain(e.client_certificate);
  } catch {
    leaf = undefined;
  }
  if (!leaf) return null;
  return {
    subject: oneLine(leaf.subject),
    issuer: oneLine(leaf.issuer),
    fingerprint_sha256: leaf.fingerprint256,
    not_before: isoUtc(leaf.validFromDate),
    expires_at: isoUtc(leaf.validToDate),
  };
}

/** SET items of an update: the credential replaced (or removed, with null). */
export function clientCertificateSet(
  tx: SqlOrTransaction,
  stored: Awaited<ReturnType<typeof storedClientCertificate>>,
) {
  return tx`, client_certificate = ${stored.client_certificate}, sealed_client_key = ${stored.sealed_client_key}`;
}

/**
 * Re-seals every client key that an older SECRET_ENCRYPTION_KEY sealed with the current one, so that
 * SECRET_ENCRYPTION_KEY_PREVIOUS can be removed afterwards (`deno task reseal-secrets`). A maintenance pass over every
 * company, hence no company filter; a key changed in the meantime is not overwritten (it was sealed with the current
 * key anyway). Returns the number of endpoints rewritten.
 */
export async function resealClientKeys(sql: Sql, box: SecretBox): Promise<number> {
  let rewritten = 0;
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const rows = await sql<{ id: string; company_id: string; sealed_client_key: string }[]>`
      select id, company_id, sealed_client_key from webhook_endpoints
      where id > ${after} and sealed_client_key is not null and not starts_with(sealed_client_key, ${box.currentPrefix})
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const context = sealContext(row.id);
      const resealed = await box.seal(await box.open(row.sealed_client_key, context), context);
      const updated = await sql`
        update webhook_endpoints set sealed_client_key = ${resealed}
        where company_id = ${row.company_id} and id = ${row.id} and sealed_client_key = ${row.sealed_client_key}`;
      rewritten += updated.count;
    }
  }
}
