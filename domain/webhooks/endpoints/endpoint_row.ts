/**
 * What an endpoint row holds, as every room reads it: the settings, the state, and the credentials as stored (sealed),
 * and the one way its state becomes disabled (`disabling`), which the endpoint operations and the record statement
 * both write. A file of its own so that the credentials (credentials.ts), the endpoint operations (endpoints.ts) and
 * the engine share the row without importing each other.
 */

import type postgres from "postgres";
import type { SqlOrTransaction } from "../../infra/db.ts";
import type { TransportName } from "../destinations/transport.ts";

/** A secret rotated away, as stored: sealed, with the instant it stops signing. */
export type StoredPreviousSecret = { secret: string; expires_at: string };

/**
 * How an endpoint's deliveries are signed (docs/webhooks.md, "Ed25519 signatures"): with its shared secret, or with
 * its Ed25519 private key, which only the service holds (the receiver verifies with the published public key).
 */
export const SIGNATURE_SCHEMES = ["hmac-sha256", "ed25519"] as const;

export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** An Ed25519 key rotated away, as stored: the private key sealed, the public one as published, its expiry. */
export type StoredPreviousSigningKey = { secret_key: string; public_key: string; expires_at: string };

export type DisabledReason = "manual" | "gone" | "failing";

/** An endpoint's `batch` setting as stored (sql/0049, docs/webhooks.md "Batches"). */
export type BatchSetting = { max_events: number; max_wait_ms: number };

/** How the client authenticates at the token URL (RFC 6749 §2.3.1; the names are RFC 8414's). */
export const OAUTH2_CLIENT_AUTH = ["client_secret_basic", "client_secret_post"] as const;

/**
 * An endpoint's OAuth2 client credentials as stored (docs/webhooks.md, "OAuth2 client credentials"): the client
 * secret sealed (domain/webhooks/endpoints/oauth2.ts), the rest as the integrator set it.
 */
export type StoredOAuth2 = {
  token_url: string;
  client_id: string;
  sealed_client_secret: string;
  scope: string | null;
  audience: string | null;
  client_auth: (typeof OAUTH2_CLIENT_AUTH)[number];
};

export type EndpointRow = {
  id: string;
  company_id: string;
  url: string;
  status: "active" | "disabled";
  /** Why it is disabled (docs/webhooks.md, When an endpoint is disabled); null while active. */
  disabled_reason: DisabledReason | null;
  disabled_at: Date | null;
  /** Since when every attempt failed (docs/webhooks.md, When an endpoint is disabled); null after a success. */
  failing_since?: Date | null;
  enabled_events: string[];
  delivery_mode: "parallel" | "sequential";
  event_payload_type: "snapshot" | "thin";
  inject_secret_in_body: boolean;
  wrap_in_notification: boolean;
  max_concurrency: number;
  event_mapping: Record<string, string> | null;
  /** Which events it gets, beyond enabled_events (docs/webhooks.md, Filters); null: all of them. */
  filter: string | null;
  /** Deliveries per second at most (docs/webhooks.md, Throttle); null: no throttle. Absent in fakes of older tests. */
  rate_limit?: number | null;
  /** The signing secret, sealed (domain/infra/secret_box.ts): `openSecrets` reads it. Null for ed25519. */
  sealed_secret: string | null;
  /** Secrets rotated away, sealed, newest first; expired ones are ignored, and dropped at the next rotation. */
  sealed_previous_secrets: StoredPreviousSecret[];
  signature_scheme: SignatureScheme;
  /** The `whsk_` Ed25519 private key, sealed; null for hmac-sha256. */
  sealed_signing_key: string | null;
  /** The `whpk_` public key of `sealed_signing_key`, as published; null for hmac-sha256. */
  public_key: string | null;
  /** Ed25519 keys rotated away (or left by a switch to hmac-sha256), newest first, as the secrets above. */
  previous_signing_keys: StoredPreviousSigningKey[];
  /** Custom headers sent in clear with every attempt (custom_headers.ts); `{}` for none. */
  custom_headers?: Record<string, string>;
  /** Custom headers whose values are secret, each sealed for the endpoint and its name; `{}` for none. */
  sealed_custom_headers?: Record<string, string>;
  /** The mTLS client certificate (PEM, leaf first), as sent; null without one (mtls.ts). */
  client_certificate?: string | null;
  /** Its private key, sealed for this endpoint; null without one. */
  sealed_client_key?: string | null;
  /** The payload version it is pinned to (sql/0043, docs/webhooks.md "Payload versions"); null: the first. */
  payload_version?: string | null;
  inserted_at: Date;
  updated_at: Date;
  /** OAuth2 client credentials for a bearer token sent with every attempt; null (or absent before 0042) for none. */
  oauth2?: StoredOAuth2 | null;
  /** `http`, or the broker its url names (sql/0047, docs/webhooks.md "Destinations"); absent in fakes of older tests. */
  transport?: TransportName;
  /** Where on the broker its messages go (the transport's keys, `{type}` not replaced); null for http. */
  destination?: Record<string, string | number> | null;
  /** The broker's credentials as sealed JSON (domain/webhooks/endpoints/brokers.ts); null without. */
  sealed_broker_credentials?: string | null;
  /** Its events go in batches of at most `max_events` (docs/webhooks.md, "Batches"); null or absent: one by one. */
  batch?: BatchSetting | null;
};

/**
 * The one way an endpoint becomes disabled, as the SET list of an update of `webhook_endpoints`: by hand (`manual`),
 * or by its attempts (`gone`, `failing`: domain/webhooks/engine/statements/record.ts). The first reason and instant are kept:
 * disabling a disabled endpoint again changes neither. Its failing clock stops, and so does its failing streak
 * (docs/webhooks.md, "Operational events").
 */
export function disabling(sql: SqlOrTransaction, reason: postgres.Fragment): postgres.Fragment {
  return sql`status = 'disabled', updated_at = now(), failing_since = null,
    consecutive_failures = 0, failing_alerted_at = null,
    disabled_reason = case when status = 'active' then ${reason} else disabled_reason end,
    disabled_at = case when status = 'active' then now() else disabled_at end`;
}
