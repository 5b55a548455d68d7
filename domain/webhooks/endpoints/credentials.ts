/**
 * An endpoint's credentials: its signing secret or Ed25519 key, sealed at rest for that endpoint alone, the ones
 * rotated away that keep signing for a while, and the pass that seals what earlier versions stored in plain text
 * (docs/webhooks.md, "Secret rotation", "Ed25519 signatures"; docs/production.md, "Webhook signing secrets at rest").
 */

import type postgres from "postgres";
import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import { isoUtc } from "../../basics/time.ts";
import { isSealed, SEALED_PREFIX, type SecretBox } from "../../infra/secret_box.ts";
import { newSigningKey } from "./signature.ts";
import type { EndpointRow, SignatureScheme, StoredPreviousSecret, StoredPreviousSigningKey } from "./endpoint_row.ts";

/** How long a secret rotated away keeps signing (as v0) and verifying. */
export const PREVIOUS_SECRET_TTL_HOURS = 24;

/** At most this many secrets rotated away are kept (the oldest goes first): each adds a v0 to every signature. */
export const MAX_PREVIOUS_SECRETS = 10;

/**
 * An endpoint's secrets in plain text: the current one (none for ed25519), and those rotated away that still sign,
 * newest first.
 */
export type EndpointSecrets = { secret: string | null; previous: { secret: string; expiresAt: Date }[] };

/** 32 random bytes as 64 lowercase hex characters. */
export function newSecret(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A secret is sealed for its endpoint: copied to another endpoint's row, it does not open. */
const sealContext = (endpointId: string) => `webhook_endpoints:${endpointId}`;

/** What still signs of a list of credentials rotated away: unexpired, newest first. */
function stillSigning<T extends { expires_at: string }>(list: T[]): (T & { expiresAt: Date })[] {
  const now = Date.now();
  return list.map((p) => ({ ...p, expiresAt: new Date(p.expires_at) }))
    .filter((p) => p.expiresAt.getTime() > now)
    .sort((a, b) => b.expiresAt.getTime() - a.expiresAt.getTime());
}

/** The endpoint's Ed25519 public keys rotated away that still sign, newest first, as the API shows them. */
export function previousPublicKeys(e: Pick<EndpointRow, "previous_signing_keys">) {
  return stillSigning(e.previous_signing_keys).map((k) => ({
    public_key: k.public_key,
    expires_at: isoUtc(k.expiresAt),
  }));
}

/**
 * The endpoint's `whsk_` private keys that sign, opened: the current one (ed25519 only), then those rotated away
 * still signing, newest first.
 */
export async function openSigningKeys(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "sealed_signing_key" | "previous_signing_keys">,
): Promise<string[]> {
  const context = sealContext(e.id);
  const sealed = [
    ...(e.sealed_signing_key ? [e.sealed_signing_key] : []),
    ...stillSigning(e.previous_signing_keys).map((k) => k.secret_key),
  ];
  return await Promise.all(sealed.map((k) => box.open(k, context)));
}

/** The endpoint's secrets, opened; previous secrets past their expiry are left out (they no longer sign). */
export async function openSecrets(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "sealed_secret" | "sealed_previous_secrets">,
): Promise<EndpointSecrets> {
  const context = sealContext(e.id);
  const now = Date.now();
  const previous = e.sealed_previous_secrets
    .map((p) => ({ sealed: p.secret, expiresAt: new Date(p.expires_at) }))
    .filter((p) => p.expiresAt.getTime() > now)
    .sort((a, b) => b.expiresAt.getTime() - a.expiresAt.getTime());
  return {
    secret: e.sealed_secret === null ? null : await box.open(e.sealed_secret, context),
    previous: await Promise.all(
      previous.map(async (p) => ({ secret: await box.open(p.sealed, context), expiresAt: p.expiresAt })),
    ),
  };
}

/** The columns of a new current credential of `scheme`, sealed for the endpoint. */
export async function newCredential(box: SecretBox, endpointId: string, scheme: SignatureScheme) {
  if (scheme === "hmac-sha256") {
    return {
      sealed_secret: await box.seal(newSecret(), sealContext(endpointId)),
      sealed_signing_key: null,
      public_key: null,
    };
  }
  const { secretKey, publicKey } = await newSigningKey();
  return {
    sealed_secret: null,
    sealed_signing_key: await box.seal(secretKey, sealContext(endpointId)),
    public_key: publicKey,
  };
}

/**
 * The SQL value of a list of credentials rotated away after `retired` joins it: `retired` (a jsonb object, or null
 * for none) expiring PREVIOUS_SECRET_TTL_HOURS from now, the unexpired ones of `list` kept, newest first, at most
 * MAX_PREVIOUS_SECRETS. In an update, the columns named on the right-hand side are the values before it.
 */
function retiring(tx: SqlOrTransaction, retired: postgres.Fragment, list: postgres.Fragment): postgres.Fragment {
  return tx`(
    select coalesce(jsonb_agg(p order by (p->>'expires_at')::timestamptz desc), '[]'::jsonb)
    from (
      select p from (
        select ${retired} || jsonb_build_object(
          'expires_at', now() + make_interval(hours => ${PREVIOUS_SECRET_TTL_HOURS})
        ) as p
        union all
        select p from jsonb_array_elements(${list}) p
      ) candidates
      where p is not null and (p->>'expires_at')::timestamptz > now()
      order by (p->>'expires_at')::timestamptz desc
      limit ${MAX_PREVIOUS_SECRETS}
    ) kept
  )`;
}

/** The current secret, as an entry of `sealed_previous_secrets` (null when there is none). */
const retiredSecret = (tx: SqlOrTransaction) =>
  tx`case when sealed_secret is null then null else jsonb_build_object('secret', sealed_secret) end`;

/** The current Ed25519 key, as an entry of `previous_signing_keys` (null when there is none). */
const retiredSigningKey = (tx: SqlOrTransaction) =>
  tx`case when sealed_signing_key is null then null
    else jsonb_build_object('secret_key', sealed_signing_key, 'public_key', public_key) end`;

/** SET items: the current credential, of either scheme, keeps signing for 24 hours among the previous ones. */
export const retiringCurrent = (tx: SqlOrTransaction) =>
  tx`sealed_previous_secrets = ${retiring(tx, retiredSecret(tx), tx`sealed_previous_secrets`)},
    previous_signing_keys = ${retiring(tx, retiredSigningKey(tx), tx`previous_signing_keys`)}`;

/** The SET list of a switch to `scheme`: a new credential of it, the current one retiring (`retiringCurrent`). */
export function newCredentialSet(
  tx: SqlOrTransaction,
  credential: Awaited<ReturnType<typeof newCredential>>,
  scheme: SignatureScheme,
) {
  return tx`
    ${retiringCurrent(tx)},
    signature_scheme = ${scheme},
    sealed_secret = ${credential.sealed_secret},
    sealed_signing_key = ${credential.sealed_signing_key},
    public_key = ${credential.public_key}`;
}

/**
 * Seals every secret still stored in plain text (rows written before secrets were sealed) and, with `reseal`,
 * re-seals what an older key sealed, so that SECRET_ENCRYPTION_KEY_PREVIOUS can be removed afterwards. Expired
 * previous secrets are dropped on the way. Idempotent and safe while the service runs: a row that changed in the
 * meantime (a rotation) is not overwritten; it was written sealed with the current key anyway. A maintenance pass
 * over every company, hence no company filter. Returns the number of endpoints rewritten.
 */
export async function sealStoredSecrets(sql: Sql, box: SecretBox, opts: { reseal: boolean }): Promise<number> {
  const wanted = opts.reseal ? box.currentPrefix : SEALED_PREFIX;
  let rewritten = 0;
  let after = "00000000-0000-0000-0000-000000000000";
  type Sealed = Pick<
    EndpointRow,
    "id" | "company_id" | "sealed_secret" | "sealed_previous_secrets" | "sealed_signing_key" | "previous_signing_keys"
  >;
  for (;;) {
    const rows = await sql<Sealed[]>`
      select id, company_id, sealed_secret, sealed_previous_secrets, sealed_signing_key, previous_signing_keys
      from webhook_endpoints e
      where id > ${after} and (
        not starts_with(sealed_secret, ${wanted})
        or not starts_with(sealed_signing_key, ${wanted})
        or exists (
          select 1 from jsonb_array_elements(e.sealed_previous_secrets) p where not starts_with(p->>'secret', ${wanted})
        )
        or exists (
          select 1 from jsonb_array_elements(e.previous_signing_keys) p
          where not starts_with(p->>'secret_key', ${wanted})
        )
      )
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const context = sealContext(row.id);
      const reseal = async (value: string) =>
        await box.seal(isSealed(value) ? await box.open(value, context) : value, context);
      const resealOrNull = async (value: string | null) => value === null ? null : await reseal(value);
      const previous: StoredPreviousSecret[] = [];
      for (const p of stillSigning(row.sealed_previous_secrets)) {
        previous.push({ secret: await reseal(p.secret), expires_at: p.expires_at });
      }
      const previousKeys: StoredPreviousSigningKey[] = [];
      for (const k of stillSigning(row.previous_signing_keys)) {
        previousKeys.push({
          secret_key: await reseal(k.secret_key),
          public_key: k.public_key,
          expires_at: k.expires_at,
        });
      }
      const updated = await sql`
        update webhook_endpoints
        set sealed_secret = ${await resealOrNull(row.sealed_secret)}, sealed_previous_secrets = ${sql.json(previous)},
          sealed_signing_key = ${await resealOrNull(row.sealed_signing_key)},
          previous_signing_keys = ${sql.json(previousKeys)}
        where company_id = ${row.company_id} and id = ${row.id}
          and sealed_secret is not distinct from ${row.sealed_secret}
          and sealed_previous_secrets = ${sql.json(row.sealed_previous_secrets)}
          and sealed_signing_key is not distinct from ${row.sealed_signing_key}
          and previous_signing_keys = ${sql.json(row.previous_signing_keys)}`;
      rewritten += updated.count;
    }
  }
}
