/**
 * An endpoint's OAuth2 client credentials as the integrator sets and reads them (docs/webhooks.md, "OAuth2 client
 * credentials"): their checks, the client secret sealed at rest for that endpoint alone and never shown again, the
 * object the API shows, and the pass that re-seals the secrets with a new key. Its own file because the signing
 * credentials (credentials.ts) sign bodies, while these authenticate at another server; the token itself is the
 * engine's (domain/webhooks/engine/oauth2_tokens.ts).
 */

import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import { ErrorBag, type FieldErrors, validationFailed } from "../../basics/errors.ts";
import { isSealed, type SecretBox } from "../../infra/secret_box.ts";
import { OAUTH2_CLIENT_AUTH, type StoredOAuth2 } from "./endpoint_row.ts";

/**
 * The credentials as a client sends them; `client_secret` may be left out of an update that keeps where and how it is
 * sent (domain/webhooks/endpoints/bound_secrets.ts).
 */
export type OAuth2Input = {
  token_url: string;
  client_id: string;
  client_secret?: string | null;
  scope?: string | null;
  audience?: string | null;
  client_auth?: StoredOAuth2["client_auth"] | null;
};

export const MAX_CLIENT_ID_LENGTH = 255;
export const MAX_CLIENT_SECRET_LENGTH = 1024;
export const MAX_SCOPE_LENGTH = 1024;
export { OAUTH2_CLIENT_AUTH };

/**
 * The client secret is sealed for its endpoint and for this use: copied to another endpoint's row, or into the
 * signing secret's column, it does not open.
 */
export const oauth2SealContext = (endpointId: string) => `webhook_endpoints:${endpointId}:oauth2`;

/**
 * The token URL obeys the endpoint URL's rule (`checkUrl` is it, with the configuration's allowance for private
 * URLs): the token request is a request from the service's network like a delivery, and the delivery checks its
 * resolved addresses the same way (url_guard.ts). Errors land under `oauth2.token_url`.
 */
export function checkOAuth2(
  errors: ErrorBag,
  input: unknown,
  checkUrl: (errors: ErrorBag, raw: string) => void,
) {
  if (input === null || typeof input !== "object") return;
  const raw = (input as { token_url?: unknown }).token_url;
  if (typeof raw !== "string") return;
  const inner = new ErrorBag();
  checkUrl(inner, raw);
  for (const message of (inner.errors.url as string[] | undefined) ?? []) errors.add(["oauth2", "token_url"], message);
}

/**
 * The column's value after a create (`current` null) or an update: null removes the credentials; a new client
 * secret is sealed; without one, the stored secret is kept. An update reaches this only once the rule of
 * bound_secrets.ts let it keep the stored secret (the same token URL origin, the same `client_auth`, the same endpoint
 * URL origin), so an update cannot send the stored secret to another server (docs/webhooks.md, "Secrets stay with
 * their URL").
 */
export async function oauth2Column(
  box: SecretBox,
  endpointId: string,
  input: OAuth2Input | null,
  current: StoredOAuth2 | null,
): Promise<StoredOAuth2 | null> {
  if (input === null) return null;
  let sealed: string;
  if (input.client_secret != null) sealed = await box.seal(input.client_secret, oauth2SealContext(endpointId));
  else if (current) sealed = current.sealed_client_secret;
  else throw validationFailed({ oauth2: { client_secret: ["is required"] } } satisfies FieldErrors, 422);
  return {
    token_url: input.token_url,
    client_id: input.client_id,
    sealed_client_secret: sealed,
    scope: input.scope || null,
    audience: input.audience || null,
    client_auth: input.client_auth ?? "client_secret_basic",
  };
}

/** The stored credentials of an endpoint, read under the row's lock an update takes anyway. */
export async function storedOAuth2(
  tx: SqlOrTransaction,
  companyId: string,
  endpointId: string,
): Promise<StoredOAuth2 | null> {
  const [row] = await tx<{ oauth2: StoredOAuth2 | null }[]>`
    select oauth2 from webhook_endpoints where company_id = ${companyId} and id = ${endpointId} for no key update`;
  return row?.oauth2 ?? null;
}

/** The credentials as the API shows them: everything but the client secret, which is never shown after it is set. */
export function presentOAuth2(stored: StoredOAuth2 | null | undefined) {
  if (!stored) return null;
  return {
    token_url: stored.token_url,
    client_id: stored.client_id,
    scope: stored.scope,
    audience: stored.audience,
    client_auth: stored.client_auth,
  };
}

/** The client secret in plain text, for the token request only. Throws as `SecretBox.open` does. */
export function openClientSecret(box: SecretBox, endpointId: string, stored: StoredOAuth2): Promise<string> {
  return box.open(stored.sealed_client_secret, oauth2SealContext(endpointId));
}

/**
 * Re-seals with the current key every client secret an older key sealed (`deno task reseal-secrets`, after
 * SECRET_ENCRYPTION_KEY was rotated). Safe while the service runs: a row whose credentials changed meanwhile is not
 * overwritten (they were sealed with the current key anyway). A maintenance pass over every company, hence no company
 * filter. Returns the number of endpoints rewritten.
 */
export async function resealOAuth2Secrets(sql: Sql, box: SecretBox): Promise<number> {
  let rewritten = 0;
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const rows = await sql<{ id: string; company_id: string; oauth2: StoredOAuth2 }[]>`
      select id, company_id, oauth2 from webhook_endpoints
      where id > ${after} and oauth2 is not null
        and not starts_with(oauth2->>'sealed_client_secret', ${box.currentPrefix})
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const context = oauth2SealContext(row.id);
      const value = row.oauth2.sealed_client_secret;
      const plain = isSealed(value) ? await box.open(value, context) : value;
      const updated = await sql`
        update webhook_endpoints
        set oauth2 = jsonb_set(oauth2, '{sealed_client_secret}', to_jsonb(${await box.seal(plain, context)}::text))
        where company_id = ${row.company_id} and id = ${row.id}
          and oauth2->>'sealed_client_secret' = ${value}`;
      rewritten += updated.count;
    }
  }
}
