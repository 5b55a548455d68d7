/**
 * Credentials stay with the URL they were given for (docs/webhooks.md, "Secrets stay with their URL"): an update that
 * moves an endpoint's URL to another origin (scheme, host or port) must give every stored secret of the endpoint again,
 * and so must one that moves the OAuth2 token URL to another origin or switches how the client secret is sent. The one
 * rule for all of them, and the origin the engine keys an OAuth2 token by. A file of its own: it reads the secrets of
 * three controls (custom_headers.ts, mtls.ts, oauth2.ts), which know nothing of each other.
 */

import type { SecretBox } from "../../infra/secret_box.ts";
import type { SqlOrTransaction } from "../../infra/db.ts";
import { ErrorBag, notFound } from "../../basics/errors.ts";
import { type CustomHeadersInput, maskedKept } from "./custom_headers.ts";
import type { EndpointRow, StoredOAuth2 } from "./endpoint_row.ts";
import { brokerCredentialsLeftBehind } from "./brokers.ts";

/**
 * Where a URL's requests go, as a credential is bound to it: scheme, host and port (the default port left out, as
 * WHATWG's `origin` has it), names in lower case. A path or a query is not part of it. The raw text when it does not
 * parse (the URL's own check refuses it).
 */
export function urlOrigin(raw: string): string {
  try {
    const url = new URL(raw);
    // a broker's scheme has no WHATWG origin ("null"): its scheme, host and port are one all the same
    return url.origin === "null" ? `${url.protocol}//${url.host}` : url.origin;
  } catch {
    return raw;
  }
}

/** What an update may give of the secrets (the endpoint's body): absent leaves a field, null removes it. */
export type SecretsInput = CustomHeadersInput & {
  url?: string | null;
  broker_credentials?: unknown;
  client_certificate?: { certificate: string; private_key: string } | null;
  oauth2?:
    | { token_url: string; client_secret?: string | null; client_auth?: StoredOAuth2["client_auth"] | null }
    | null;
};

/** The secrets an endpoint holds, as the rule needs to know them: where they go, and which there are. */
export type HeldSecrets = {
  url: string;
  /** The names of its secret headers. */
  secretHeaders: string[];
  /** Whether it has a client certificate (and so a private key). */
  clientKey: boolean;
  oauth2: Pick<StoredOAuth2, "token_url" | "client_auth"> | null;
};

const MOVED =
  "must be given again: url moves to another origin (scheme, host or port), and no stored secret follows it";

/**
 * The rule, pure: the errors of an update that would keep a stored secret (one it leaves out, or a secret header sent
 * back masked: `keptMasked`, the names whose value is the mask of the stored one) while what the secret is sent to
 * moves to another origin, or while the OAuth2 client secret would be sent another way. Each error is on the field the
 * body would give the secret in: `secret_headers` (or `secret_headers.<name>`), `client_certificate.private_key`,
 * `oauth2.client_secret`. Secrets the update removes (null, a map without them) need nothing.
 */
export function checkSecretsStay(errors: ErrorBag, held: HeldSecrets, input: SecretsInput, keptMasked: string[]) {
  const moves = input.url != null && urlOrigin(input.url) !== urlOrigin(held.url);
  if (moves && held.secretHeaders.length > 0) {
    if (input.secret_headers === undefined) errors.add("secret_headers", MOVED);
    for (const name of keptMasked) errors.add(["secret_headers", name], MOVED);
  }
  if (moves && held.clientKey && input.client_certificate === undefined) {
    errors.add("client_certificate.private_key", MOVED);
  }
  if (held.oauth2 && input.oauth2 !== null && input.oauth2?.client_secret == null) {
    const why = oauth2SecretLeftBehind(held.oauth2, input.oauth2, moves);
    if (why) errors.add("oauth2.client_secret", why);
  }
}

/**
 * Why the stored OAuth2 client secret cannot be kept by an update that does not give it again, or null when it may:
 * the token it gets goes to the endpoint's URL, the secret itself to the token URL, each in the way `client_auth` says.
 */
function oauth2SecretLeftBehind(
  held: Pick<StoredOAuth2, "token_url" | "client_auth">,
  input: SecretsInput["oauth2"],
  urlMoves: boolean,
): string | null {
  if (urlMoves) return MOVED;
  if (!input) return null;
  if (urlOrigin(input.token_url) !== urlOrigin(held.token_url)) {
    return "is required when token_url changes to another origin (scheme, host or port): the stored one is never " +
      "sent elsewhere";
  }
  if ((input.client_auth ?? "client_secret_basic") !== held.client_auth) {
    return "is required when client_auth changes: the stored one is never sent another way";
  }
  return null;
}

/**
 * Applies the rule to an update of endpoint `id`, under the lock of its row that the update takes anyway; throws 422
 * with every secret the update would leave behind. Reads nothing when the update moves nothing a secret goes to.
 */
export async function refuseSecretsLeftBehind(
  tx: SqlOrTransaction,
  box: SecretBox,
  companyId: string,
  id: string,
  input: SecretsInput,
): Promise<void> {
  if (input.url == null && (input.oauth2 == null || input.oauth2.client_secret != null)) return;
  const [row] = await tx<
    Pick<EndpointRow, "url" | "sealed_custom_headers" | "sealed_client_key" | "oauth2" | "sealed_broker_credentials">[]
  >`
    select url, sealed_custom_headers, sealed_client_key, oauth2, sealed_broker_credentials from webhook_endpoints
    where company_id = ${companyId} and id = ${id} for no key update`;
  if (!row) throw notFound();
  const held: HeldSecrets = {
    url: row.url,
    secretHeaders: Object.keys(row.sealed_custom_headers ?? {}),
    clientKey: !!row.sealed_client_key,
    oauth2: row.oauth2 ?? null,
  };
  const masked = input.secret_headers ? await maskedKept(box, id, input.secret_headers, row.sealed_custom_headers) : [];
  const errors = new ErrorBag();
  checkSecretsStay(errors, held, input, masked);
  brokerCredentialsLeftBehind(errors, { url: row.url, credentials: !!row.sealed_broker_credentials }, input, MOVED);
  errors.throwIfAny(422);
}
