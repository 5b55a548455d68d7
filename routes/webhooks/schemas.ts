/**
 * The shapes of the webhook routes: endpoint bodies and objects, the rotated secret, delivery records and their
 * attempts, the events query, recover and the endpoint stats. The event types they name come from the domain's lists.
 */

import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { EVENT_TYPES, OPERATIONAL_EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { MAX_PREVIOUS_SECRETS } from "../../domain/webhooks/endpoints/credentials.ts";
import { SIGNATURE_SCHEMES } from "../../domain/webhooks/endpoints/endpoint_row.ts";
import { MAX_FILTER_LENGTH } from "../../domain/webhooks/outbox/filters.ts";
import { MAX_RATE_LIMIT, MIN_RATE_LIMIT } from "../../domain/webhooks/endpoints/throttle.ts";
import { MAX_BATCH_EVENTS, MAX_BATCH_WAIT_MS, MIN_BATCH_EVENTS } from "../../domain/webhooks/endpoints/batch_rules.ts";
import {
  MAX_CUSTOM_HEADERS,
  MAX_CUSTOM_HEADERS_CHARS,
  MAX_HEADER_NAME_CHARS,
  MAX_HEADER_VALUE_CHARS,
} from "../../domain/webhooks/endpoints/custom_headers.ts";
import { MAX_CLIENT_CERTIFICATE_CHARS, MAX_CLIENT_KEY_CHARS } from "../../domain/webhooks/endpoints/mtls.ts";
import type { TimeBound } from "../../domain/webhooks/endpoints/deliveries.ts";
import { REPLAY_LIMIT } from "../../domain/webhooks/outbox/replay.ts";
import { TRANSACTION_SEARCH_EVENTS } from "../../domain/webhooks/outbox/event_search.ts";
import { LATEST_PAYLOAD_VERSION, VERSION_NAMES } from "../../domain/webhooks/outbox/payload_versions.ts";
import { UUID_RE } from "../../domain/basics/ids.ts";
import { BROKER_TRANSPORTS } from "../../domain/webhooks/destinations/transport.ts";
import { optionalText, requiredText, uuid } from "../openapi/schemas.ts";
import {
  MAX_CLIENT_ID_LENGTH,
  MAX_CLIENT_SECRET_LENGTH,
  MAX_SCOPE_LENGTH,
  OAUTH2_CLIENT_AUTH,
} from "../../domain/webhooks/endpoints/oauth2.ts";

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);
const ONE_OF_TYPES = `must be one of: ${EVENT_TYPES.join(", ")}`;

/** `["*"]` or known event types; one flat message for the field, whatever element is wrong. */
export const enabledEvents = z.array(z.unknown()).superRefine((list, ctx) => {
  if (list.length === 0) ctx.addIssue({ code: "custom", message: "is invalid" });
  else if (!list.every((t) => typeof t === "string" && (t === "*" || KNOWN_TYPES.has(t)))) {
    ctx.addIssue({ code: "custom", message: `must be one of: *, ${EVENT_TYPES.join(", ")}` });
  }
}).transform((list) => [...new Set(list as string[])])
  .openapi({
    type: ["array", "null"],
    items: { type: "string", enum: ["*", ...EVENT_TYPES] },
    minItems: 1,
    example: ["*"],
    description: `\`["*"]\` (every type, the default) or a list of event types. \`"*"\` does not take in the ` +
      `operational types (${OPERATIONAL_EVENT_TYPES.join(", ")}): name them to receive them`,
  });

/** Outbound renames: keys are known event types, values the names the receiver expects. */
const eventMapping = z.record(z.string(), z.string().trim().min(1, "is invalid").max(100)).superRefine((map, ctx) => {
  if (!Object.keys(map).every((k) => KNOWN_TYPES.has(k))) ctx.addIssue({ code: "custom", message: ONE_OF_TYPES });
}).nullable().openapi({
  type: ["object", "null"],
  // keys are event types: each a property of its own, so a generated client knows them
  properties: Object.fromEntries(EVENT_TYPES.map((t) => [t, { type: "string", minLength: 1, maxLength: 100 }])),
  additionalProperties: false,
  example: { identified: "paid" },
  description: "Event type → the name the receiver gets instead; null removes every rename",
});

/**
 * A CEL expression over `event_type` and `data`; its rules (it parses, type-checks, gives a bool, no `matches()`, no
 * list macro nested in another) are domain/webhooks/outbox/filters.ts's, run by the routes with the URL's, so a 422 names the
 * position of the fault.
 * The check against the subscribed types' schemas (domain/webhooks/outbox/filter_types.ts) runs in the domain, which
 * knows the stored types on update.
 */
export const filter = z.string().nullable().openapi({
  type: ["string", "null"],
  maxLength: MAX_FILTER_LENGTH,
  example: 'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0',
  description: "A CEL expression over the event (`event_type`, and `data` as the snapshot body carries it): the " +
    "endpoint gets an event only when it gives true; an error (a missing key) means not delivered. null removes " +
    "it on update. Test events ignore it. Type-checked against the schemas of the subscribed event types when it " +
    "or enabled_events changes: a field none has, or a string compared with a number, is a 422 naming line and " +
    "column. docs/webhooks.md, Filters",
});

/**
 * Custom headers (docs/webhooks.md, "Custom headers"): shape only here; the names that cannot be set, the value
 * characters and the limits are domain/webhooks/endpoints/custom_headers.ts's, run by the routes with the URL's.
 */
const headerMap = (description: string, example: Record<string, string>) =>
  z.record(z.string(), z.string()).nullish().openapi({
    type: ["object", "null"],
    additionalProperties: { type: "string", minLength: 1, maxLength: MAX_HEADER_VALUE_CHARS },
    maxProperties: MAX_CUSTOM_HEADERS,
    example,
    description,
  });
const HEADER_RULES = `At most ${MAX_CUSTOM_HEADERS} headers, \`headers\` and \`secret_headers\` together, ` +
  `${MAX_CUSTOM_HEADERS_CHARS} characters of names and values; names are HTTP tokens of at most ` +
  `${MAX_HEADER_NAME_CHARS} characters, values visible ASCII (no line breaks); a name once, whatever its case. These names cannot ` +
  "be set (422 naming the header): webhook-*, service-signature, content-type, content-length, content-encoding, " +
  "host, authorization, traceparent, tracestate, and hop-by-hop ones (connection, keep-alive, transfer-encoding, " +
  "te, trailer, upgrade, expect, proxy-*). Absent leaves the map as it is on update; a map replaces it; null or {} " +
  "removes every header of the map";
const customHeaders = {
  headers: headerMap(
    `Headers sent with every attempt to the endpoint, shown as they are. ${HEADER_RULES}`,
    { "X-Tenant": "acme" },
  ),
  secret_headers: headerMap(
    "Headers whose values are secret: sent with every attempt, stored sealed, and shown masked after create " +
      "(`****` then the last 4 characters of a value of 16 or more). A value sent back exactly as shown keeps the " +
      "stored one, except in an update moving url to another origin, which must give the values again (422 " +
      `otherwise). ${HEADER_RULES}`,
    { "X-Api-Key": "k_live_0123456789abcdef" },
  ),
};
/**
 * The mTLS client certificate and key, as PEM text. Only the shape here: whether they parse, match and are valid now
 * is domain/webhooks/endpoints/mtls.ts's, run by the routes with the URL's rule, so a 422 names the
 * field, and so is the size bound (named in its message), as the filter's is.
 */
const clientCertificate = z.object({
  certificate: z.string().openapi({
    maxLength: MAX_CLIENT_CERTIFICATE_CHARS,
    description: "PEM: the client certificate first, then any intermediates the receiver needs; each valid now",
    example: "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n",
  }),
  private_key: z.string().openapi({
    maxLength: MAX_CLIENT_KEY_CHARS,
    description: "PEM, unencrypted (`-----BEGIN PRIVATE KEY-----`, or the RSA/EC forms), matching the certificate. " +
      "Stored sealed; never shown again",
    example: "-----BEGIN PRIVATE KEY-----\nMIGH...\n-----END PRIVATE KEY-----\n",
  }),
}).nullable().openapi("WebhookClientCertificateInput", {
  description: "A client certificate presented to the receiver on every https attempt (mutual TLS); null removes " +
    "it on update, absent leaves it, except in an update moving url to another origin, which must give it again. " +
    "docs/webhooks.md, Client certificates (mTLS)",
});

/**
 * OAuth2 client credentials (RFC 6749 §4.4) for a bearer token sent with every attempt; the token URL obeys the
 * endpoint URL's rule, run by the routes (domain/webhooks/endpoints/oauth2.ts).
 */
const oauth2 = z.object({
  token_url: requiredText(2048).openapi({ example: "https://auth.example.com/oauth2/token" }),
  client_id: requiredText(MAX_CLIENT_ID_LENGTH).openapi({ example: "payments-webhooks" }),
  client_secret: z.string().min(1).max(MAX_CLIENT_SECRET_LENGTH).nullish().openapi({
    description: "Required on create, and on an update that moves token_url or the endpoint's url to another origin " +
      "(scheme, host or port) or changes client_auth; left out otherwise, an update keeps the stored one. Stored " +
      "sealed and never shown again. docs/webhooks.md, Secrets stay with their URL",
  }),
  scope: optionalText(MAX_SCOPE_LENGTH).openapi({ example: "webhooks:write" }),
  audience: optionalText(2048).openapi({ description: "Sent as `audience` when set (Auth0 and others ask for it)" }),
  client_auth: z.enum(OAUTH2_CLIENT_AUTH).nullish().openapi({
    description: "`client_secret_basic` (the default: HTTP Basic) or `client_secret_post` (id and secret in the body)",
  }),
}).openapi("WebhookOAuth2Settings").nullable().openapi({
  description: "OAuth2 client credentials: the service asks the token URL for a token (grant_type " +
    "client_credentials), keeps it until shortly before it expires and sends it as `Authorization: Bearer`. null " +
    "removes them on update. docs/webhooks.md, OAuth2 client credentials",
});
/** A payload version's name (domain/webhooks/outbox/payload_versions.ts). */
export const payloadVersion = z.enum(VERSION_NAMES).openapi({ example: LATEST_PAYLOAD_VERSION });
/** Deliveries per second (domain/webhooks/endpoints/throttle.ts holds the same bounds for every caller). */
const rateLimit = z.number().min(MIN_RATE_LIMIT).max(MAX_RATE_LIMIT).nullable().openapi({
  type: ["number", "null"],
  example: 5,
  description: `At most this many deliveries per second to the endpoint, across every instance; fractional allowed ` +
    `(0.5: one every two seconds), from ${MIN_RATE_LIMIT} to ${MAX_RATE_LIMIT}. null removes the throttle on ` +
    "update; absent: none on create, unchanged on update. docs/webhooks.md, Throttle",
});
/** Batches (domain/webhooks/endpoints/batch_rules.ts holds the same bounds and the rules between settings). */
const batchShape = z.object({
  max_events: z.number().int().min(MIN_BATCH_EVENTS).max(MAX_BATCH_EVENTS).openapi({
    example: 50,
    description: `At most this many events a request, ${MIN_BATCH_EVENTS} to ${MAX_BATCH_EVENTS}`,
  }),
  max_wait_ms: z.number().int().min(0).max(MAX_BATCH_WAIT_MS).openapi({
    example: 200,
    description: `A batch goes once its oldest event has waited this long, if not full before; 0 to ` +
      `${MAX_BATCH_WAIT_MS}`,
  }),
}).openapi("WebhookBatch");
const batch = batchShape.nullable().openapi({
  description: "Deliver in batches: one request carries a JSON array of up to `max_events` bodies (at most 1 MB), " +
    "signed once, with `webhook-batch-size`. Not with `wrap_in_notification`, `inject_secret_in_body`, `rate_limit` " +
    "or a broker url. null removes it on update; absent: none on create, unchanged on update. docs/webhooks.md, " +
    "Batches",
});
const rateLimitAnswer = z.number().nullable().openapi({
  description: "Deliveries per second at most (docs/webhooks.md, Throttle); null: no throttle",
  example: 5,
});

/** `null` counts as absent for fields that always have a value (defaults on create, unchanged on update). */
const settings = {
  enabled_events: enabledEvents.nullish(),
  delivery_mode: z.enum(["parallel", "sequential"]).nullish(),
  event_payload_type: z.enum(["snapshot", "thin"]).nullish(),
  inject_secret_in_body: z.boolean().nullish(),
  wrap_in_notification: z.boolean().nullish(),
  max_concurrency: z.number().int().min(1).max(100).nullish(),
  event_mapping: eventMapping.optional(),
  signature_scheme: z.enum(SIGNATURE_SCHEMES).nullish().openapi({
    description: "`hmac-sha256` (the default: a shared `secret`) or `ed25519` (Standard Webhooks' `v1a`: the service " +
      "signs with a private key only it holds, the receiver verifies with `public_key`; no shared secret, so " +
      "`inject_secret_in_body` must be false). Changing it gives the endpoint a credential of the new scheme; the " +
      "current one keeps signing for 24 hours. docs/webhooks.md, Ed25519 signatures",
  }),
  filter: filter.optional(),
  rate_limit: rateLimit.optional(),
  batch: batch.optional(),
  client_certificate: clientCertificate.optional(),
  oauth2: oauth2.optional(),
  payload_version: payloadVersion.nullish().openapi({
    description: "The payload version the receiver was built against: its snapshot bodies keep that version's " +
      "shape whatever is added later. Absent on create, or null: the first version (`{id, type, data}`); null on " +
      "update unpins, absent leaves it. The versions and what each changed: GET /api/v2/notifications/event_types. " +
      "docs/webhooks.md, Payload versions",
  }),
};

/**
 * Shape only; whether http or a private host is allowed depends on configuration (domain/webhooks/endpoints/endpoints.ts),
 * and the routes run that rule even when this shape fails.
 */
const url = requiredText(2048).openapi({
  example: "https://example.com/webhooks",
  description: "Where deliveries go. `https://` for an HTTP receiver; or a message broker, whose scheme picks the " +
    "transport: `amqps://` (RabbitMQ; the path is the vhost, percent-encoded: `amqps://mq.example/%2F`), `tls://` " +
    "(NATS JetStream), `rediss://` (Redis Streams; the path is the database number), `mqtts://` (MQTT 5). The " +
    "plaintext schemes (`http`, `amqp`, `nats`, `redis`, `mqtt`) need WEBHOOK_ALLOW_PRIVATE_URLS=true, never in " +
    "production. No user or password in it: a broker's go in `broker_credentials`. A broker url needs a " +
    "`destination`. An update cannot move an endpoint to another transport. docs/webhooks.md, Destinations",
});

/** Where on its broker a broker endpoint publishes, one shape per transport (`{type}`: the event type). */
const AmqpDestination = z.object({
  exchange: z.string().max(255).openapi({ example: "payments", description: '`""` is the default exchange' }),
  routing_key: z.string().max(200).optional().openapi({ example: "pay.{type}", description: "Default `{type}`" }),
}).openapi("AmqpDestination", { description: "RabbitMQ: published mandatory and persistent, with publisher confirms" });
const NatsDestination = z.object({
  subject: z.string().max(255).openapi({ example: "payments.{type}" }),
}).openapi("NatsDestination", { description: "NATS JetStream: a stream must take the subject (a PubAck)" });
const RedisDestination = z.object({
  stream: z.string().max(255).openapi({ example: "payments" }),
  maxlen: z.number().int().min(1).max(10_000_000).optional().openapi({
    example: 100000,
    description: "Approximate trimming (`XADD ... MAXLEN ~ n`); absent: none",
  }),
}).openapi("RedisDestination", { description: "Redis Streams: one XADD per delivery" });
const MqttDestination = z.object({
  topic: z.string().max(255).openapi({ example: "payments/{type}" }),
}).openapi("MqttDestination", { description: "MQTT 5: QoS 1, the headers as user properties" });
/**
 * Puts the four destination shapes among the document's components, which the bodies' and the endpoint object's
 * `destination` name in their `oneOf` (they are not zod schemas of a body: see `destination` below).
 */
export function documentDestinations(registry: OpenAPIHono["openAPIRegistry"]) {
  for (const [name, shape] of Object.entries(DESTINATION_SHAPES)) registry.register(name, shape);
}
const DESTINATION_SHAPES = { AmqpDestination, NatsDestination, RedisDestination, MqttDestination };

/**
 * Shape only for the document: which keys a destination must have depends on the url's transport, which the domain
 * checks (domain/webhooks/destinations/registry.ts), naming the key of another transport in its 422.
 */
const destination = z.record(z.string(), z.unknown()).nullish().openapi({
  // the four shapes are components of the document (`documentDestinations`)
  oneOf: Object.keys(DESTINATION_SHAPES).map((name) => ({
    $ref: `#/components/schemas/${name}`,
  })),
  description: "Where on the broker: `{exchange, routing_key}` (amqp), `{subject}` (nats), `{stream, maxlen}` " +
    "(redis), `{topic}` (mqtt); `{type}` in a value is replaced by the event type. Required with a broker url, " +
    "refused with an https one; a key of another transport is a 422 naming it. docs/webhooks.md, Destinations",
});
const brokerCredentials = z.record(z.string(), z.string()).nullish().openapi({
  oneOf: [
    {
      type: "object",
      required: ["username", "password"],
      properties: { username: { type: "string", maxLength: 1024 }, password: { type: "string", maxLength: 1024 } },
    },
    { type: "object", required: ["token"], properties: { token: { type: "string", maxLength: 1024 } } },
  ],
  example: { username: "payments", password: "s3cret-password" },
  description: "The broker's credentials: `{username, password}`, or `{token}` for NATS. Stored sealed and never " +
    "shown: the endpoint shows `****` for the secret, and credentials sent back as shown keep the stored secret, " +
    "except in an update moving url to another broker address, which must give them again. null removes them",
});
const brokerSettings = { destination, broker_credentials: brokerCredentials };

export const EndpointCreateBody = z.object({ url, ...settings, ...customHeaders, ...brokerSettings })
  .openapi("WebhookEndpointCreate");
export const EndpointUpdateBody = z.object({ url: url.optional(), ...settings, ...customHeaders, ...brokerSettings })
  .openapi("WebhookEndpointUpdate");

export const ENDPOINT_CREATE_EXAMPLE: z.input<typeof EndpointCreateBody> = {
  url: "https://example.com/webhooks",
  enabled_events: ["*"],
  delivery_mode: "sequential",
};

export const ENDPOINT_UPDATE_EXAMPLE: z.input<typeof EndpointUpdateBody> = {
  enabled_events: ["identified", "wire_created"],
  event_mapping: { identified: "paid" },
};

const ts = z.string().openapi({ example: "2026-11-21T07:00:00.123Z" });

const PreviousSecret = z.object({
  secret: z.string(),
  expires_at: ts.openapi({ description: "When it stops signing and verifying" }),
}).openapi("WebhookPreviousSecret");

const PreviousPublicKey = z.object({
  public_key: z.string().openapi({ example: "whpk_Hn2Jp0vJ3fE1y8H5+5lZ6a0N1n8JdGkq1Ykq1Q6Tw2Y=" }),
  expires_at: ts.openapi({ description: "When its private key stops signing" }),
}).openapi("WebhookPreviousPublicKey");

/** How an endpoint signs and the public keys that verify it: in the endpoint object and the rotation's answer. */
const publicKeys = {
  signature_scheme: z.enum(SIGNATURE_SCHEMES),
  public_key: z.string().nullable().openapi({
    description: "ed25519: `whpk_` then the base64 of the 32-byte Ed25519 public key that verifies the `v1a` " +
      "signatures of `webhook-signature`; null for hmac-sha256",
    example: "whpk_Hn2Jp0vJ3fE1y8H5+5lZ6a0N1n8JdGkq1Ykq1Q6Tw2Y=",
  }),
  previous_public_keys: z.array(PreviousPublicKey).openapi({
    description: "Public keys of Ed25519 keys rotated away (or left by a switch to hmac-sha256) that still sign, " +
      `one more \`v1a\` each, newest first; at most ${MAX_PREVIOUS_SECRETS}`,
  }),
};

export const Endpoint = z.object({
  id: z.string(),
  company_id: z.string(),
  url: z.string(),
  transport: z.enum(["http", ...BROKER_TRANSPORTS]).openapi({
    description: "`http`, or the broker the url names. docs/webhooks.md, Destinations",
  }),
  destination: z.record(z.string(), z.union([z.string(), z.number()])).nullable().openapi({
    type: ["object", "null"],
    oneOf: Object.keys(DESTINATION_SHAPES).map((name) => ({ $ref: `#/components/schemas/${name}` })),
    description: "Where on the broker it publishes; null for an http endpoint",
  }),
  broker_credentials: z.record(z.string(), z.string()).nullable().openapi({
    type: ["object", "null"],
    example: { username: "payments", password: "****" },
    description: 'The broker\'s user name and `****` for its password, or `{token: "****"}`; null without',
  }),
  status: z.enum(["active", "disabled"]),
  disabled_reason: z.enum(["manual", "gone", "failing"]).nullable().openapi({
    description: "Why it is disabled: by the integrator, the receiver answered 410 Gone, or attempts kept failing; " +
      "null while active",
  }),
  disabled_at: ts.nullable().openapi({ description: "When it was disabled; null while active" }),
  enabled_events: z.array(z.string()),
  delivery_mode: z.enum(["parallel", "sequential"]),
  event_payload_type: z.enum(["snapshot", "thin"]),
  inject_secret_in_body: z.boolean(),
  wrap_in_notification: z.boolean(),
  max_concurrency: z.number().int(),
  event_mapping: z.record(z.string(), z.string()).nullable(),
  filter: z.string().nullable().openapi({
    description: "The endpoint's CEL filter; null when it gets every event it enables",
    example: 'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0',
  }),
  rate_limit: rateLimitAnswer,
  batch: batchShape.nullable().openapi({
    description: "Its events go in batches (docs/webhooks.md, Batches); null: one event a request",
  }),
  secret: z.string().nullable().openapi({
    description: "64 lowercase hex characters; null for an ed25519 endpoint, which has no shared secret",
  }),
  previous_secret: z.string().nullable().openapi({
    description: "The most recent secret rotated away, while it still signs (24 hours after its rotation)",
  }),
  previous_secret_expires_at: ts.nullable(),
  previous_secrets: z.array(PreviousSecret).openapi({
    description:
      `Every secret rotated away that still signs (as v0) and verifies, newest first; at most ${MAX_PREVIOUS_SECRETS}`,
  }),
  ...publicKeys,
  headers: z.record(z.string(), z.string()).openapi({
    description: "Custom headers sent with every attempt, as they are; {} for none. docs/webhooks.md, Custom headers",
    example: { "X-Tenant": "acme" },
  }),
  secret_headers: z.record(z.string(), z.string()).openapi({
    description: "Custom headers with secret values, masked: `****` then the last 4 characters (only `****` for a " +
      "value under 16 characters); {} for none",
    example: { "X-Api-Key": "****cdef" },
  }),
  client_certificate: z.object({
    subject: z.string().openapi({ example: "O=Example Integrator, CN=payments-api client" }),
    issuer: z.string().openapi({ example: "CN=Example Integrator client authority" }),
    fingerprint_sha256: z.string().openapi({ example: "16:CF:C3:D4:2E:EC:C9:DA:13:ED:08:E9:B9:23:5A:9E:50:F5:..." }),
    not_before: ts,
    expires_at: ts.openapi({ description: "After it, receivers refuse it: save a new one before" }),
  }).nullable().openapi("WebhookClientCertificate", {
    description: "The client certificate presented on every https attempt (mTLS), as its certificate says; its " +
      "private key is never shown. null without one",
  }),
  inserted_at: ts,
  updated_at: ts,
  oauth2: z.object({
    token_url: z.string(),
    client_id: z.string(),
    scope: z.string().nullable(),
    audience: z.string().nullable(),
    client_auth: z.enum(OAUTH2_CLIENT_AUTH),
  }).nullable().openapi("WebhookOAuth2", {
    description: "The endpoint's OAuth2 client credentials without the client secret, which is never shown; null " +
      "when it sends no bearer token",
  }),
  payload_version: payloadVersion.openapi({
    description: "The payload version its snapshot bodies have; the first one unless it was pinned to another",
  }),
}).openapi("WebhookEndpoint");

export const RotatedSecret = z.object({
  id: z.string(),
  secret: z.string().nullable().openapi({ description: "The new secret; null for ed25519 (see `public_key`)" }),
  previous_secret: z.string().nullable(),
  previous_secret_expires_at: ts.nullable(),
  ...publicKeys,
}).openapi("WebhookSecretRotation");

export const Attempt = z.object({
  id: z.string(),
  attempt_number: z.number().int(),
  http_status: z.number().int().openapi({ description: "0 when no response arrived" }),
  response_body: z.string().openapi({
    description: "First 16 KiB of the answer, or why none came: `timeout after <ms> ms`, " +
      "`connection refused (ECONNREFUSED)`, `TLS: ...`, `DNS: ...`, `refused: private address`, " +
      "`oauth2 token: HTTP 400 invalid_client` (no bearer token for the endpoint)...",
  }),
  duration_ms: z.number().int().nullable().openapi({ description: "How long the attempt took" }),
  response_headers: z.record(z.string(), z.string()).openapi({
    description: "A few headers of the answer (content-type, retry-after, server, request ids); never cookies",
    example: { "content-type": "text/plain", "retry-after": "120" },
  }),
  inserted_at: ts,
}).openapi("WebhookAttempt");

export const Delivery = z.object({
  id: z.string().openapi({
    description: "The delivery record's id: the `id` of the bodies sent for it and their `webhook-id` header " +
      '(docs/webhooks.md, "Which id is which")',
  }),
  event_id: z.string().openapi({
    description: "The event's id, shared by its records at every endpoint; never in a body. " +
      "`?event_id=` lists them",
  }),
  endpoint_id: z.string(),
  company_id: z.string().optional().openapi({ description: "Detail only" }),
  type: z.string(),
  status: z.enum(["pending", "succeeded", "failed"]),
  attempts_count: z.number().int().openapi({ description: "Attempts made so far, manual retries included" }),
  batch_id: z.string().nullable().openapi({
    description: "The batch that carries it (the `webhook-id` of its requests), kept across its retries; null for a " +
      "record sent alone or not yet sent. An acknowledge or a retry applies to its whole batch. docs/webhooks.md, " +
      "Batches",
  }),
  next_attempt_at: ts.nullable().openapi({
    description: "When the next attempt is due while the record is pending; null once it succeeded or failed, " +
      "while its filter's verdict is deferred, and while it waits behind its sequential endpoint's head (waiting_for)",
  }),
  waiting_for: z.object({
    delivery_id: z.string(),
    next_attempt_at: ts.nullable(),
    filter_deferred: z.literal(true).optional(),
  }).optional().openapi({
    description: "Present while the record is pending behind the head of its sequential endpoint's queue, which " +
      'goes first (docs/webhooks.md, "Delivery modes and ordering"): the head\'s id and its next try (null, with ' +
      "filter_deferred, while the head waits for its filter)",
  }),
  filter_deferred: z.literal(true).optional().openapi({
    description: "Present while the record waits for its endpoint's filter, which the company's filter time could " +
      'not pay for when the event came (docs/webhooks.md, "What a company\'s filters may spend"): decided before ' +
      "its first attempt; a refused record is removed",
  }),
  last_error: z.string().nullable().openapi({
    description: "What went wrong with the last attempt: `HTTP <status>`, or why no answer came (`timeout after " +
      "10000 ms`, `connection refused (ECONNREFUSED)`); null before any attempt and after a success",
    example: "HTTP 503",
  }),
  payload: z.record(z.string(), z.unknown()),
  event_created_at: ts,
  inserted_at: ts,
  attempts: z.array(Attempt).optional().openapi({ description: "Detail only" }),
  request: z.object({
    body: z.string(),
    headers: z.record(z.string(), z.string()),
  }).optional().openapi({
    description: "Detail only: the request its attempts send, rendered again from the event and the endpoint as they " +
      "are now, with the injected secret, secret header values, signatures and bearer tokens masked " +
      '(docs/webhooks.md, "What was sent")',
  }),
}).openapi("WebhookEvent");

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;

export const timeBound = z.string().trim().transform((raw, ctx): TimeBound => {
  // An unencoded "+03:00" in a query string arrives as " 03:00".
  const s = raw.replace(/(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:?\d{2})$/, "$1+$2");
  const m = DATE_RE.exec(s) ?? DATETIME_RE.exec(s);
  if (m) {
    const [, y, mo, d, h, mi, sec, frac, zone = "Z"] = m;
    const offset = zone.toUpperCase() === "Z" ? "Z" : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
    const ms = frac ? `.${frac.padEnd(3, "0").slice(0, 3)}` : "";
    const at = new Date(`${y}-${mo}-${d}T${h ?? "00"}:${mi ?? "00"}:${sec ?? "00"}${ms}${offset}`);
    // Date() rolls 2026-02-30 over to March: a real calendar day reads back the same.
    const day = new Date(`${y}-${mo}-${d}T00:00:00Z`);
    const realDay = !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === `${y}-${mo}-${d}`;
    if (realDay && !Number.isNaN(at.getTime())) {
      // there is no year 0 (1 BC comes before AD 1): Postgres refuses it, so it is a client error here
      if (y === "0000") {
        ctx.addIssue({ code: "custom", message: "is out of range (0001-01-01 to 9999-12-31)" });
        return z.NEVER;
      }
      const step = h === undefined ? 86_400_000 : sec === undefined ? 60_000 : frac ? 1 : 1000;
      return { at, end: new Date(at.getTime() + step) };
    }
  }
  ctx.addIssue({ code: "custom", message: "has invalid format, expected YYYY-MM-DD or an ISO 8601 datetime" });
  return z.NEVER;
}).openapi({ type: "string", example: "2026-11-21" });

const queryUuid = z.string().trim().regex(UUID_RE, "is invalid").transform((s) => s.toLowerCase());

export const EventsQuery = z.object({
  last_id: queryUuid.optional().openapi({ description: "Id of the last record of the previous page" }),
  // digits only; any number over 100 means 100, however long
  per_page: z.string().trim().regex(/^\d+$/, "is invalid").transform((d) => d.length > 6 ? 100 : Number(d))
    .pipe(z.number().int().min(1)).transform((n) => Math.min(n, 100)).optional()
    // typed as the integer it is; a query string carries it as digits
    .openapi({ type: "integer", minimum: 1, description: "Default 20; values over 100 mean 100" }),
  order_by: z.enum(["desc", "asc"]).optional().openapi({ description: "By inserted_at; desc by default" }),
  status: z.enum(["pending", "succeeded", "failed"]).optional().openapi({ description: "Only records in this state" }),
  type: z.string().transform((s) => s.split(",").map((t) => t.trim()).filter(Boolean)).superRefine((list, ctx) => {
    if (list.length === 0 || !list.every((t) => KNOWN_TYPES.has(t))) {
      ctx.addIssue({ code: "custom", message: ONE_OF_TYPES });
    }
  }).optional().openapi({
    type: "string",
    example: "identified,wire_created",
    description: `One event type or a comma-separated list of them: ${EVENT_TYPES.join(", ")}`,
  }),
  endpoint_id: queryUuid.optional().openapi({ description: "Only records of this endpoint" }),
  event_id: queryUuid.optional().openapi({
    description:
      "Only records of this event (one per endpoint it went to): a record's `event_id`, not a body's `id`, " +
      "which is the record's own",
  }),
  transaction_id: queryUuid.optional().openapi({
    description: "Only records of events whose data names this transaction (`transaction_id` or `transaction_ids`), " +
      `the oldest ${TRANSACTION_SEARCH_EVENTS} such events at most (docs/webhooks.md, Search by event or transaction id)`,
  }),
  from: timeBound.optional().openapi({ description: "Inclusive, UTC; YYYY-MM-DD or a full datetime" }),
  to: timeBound.optional().openapi({ description: "Inclusive, UTC; YYYY-MM-DD (the whole day) or a full datetime" }),
});

/**
 * `since` is required (absent, or no body at all: 400 naming it); both bounds are instants, and `until` is exclusive.
 */
export const RecoverBody = z.object({
  since: timeBound.openapi({
    type: "string",
    example: "2026-11-21T00:00:00Z",
    description: "Records inserted at or after this instant (UTC unless an offset is given; a date means its start)",
  }),
  until: timeBound.optional().openapi({
    type: "string",
    example: "2026-11-22T00:00:00Z",
    description: "Records inserted before this instant (exclusive); absent: up to now",
  }),
  include_skipped: z.boolean().optional().openapi({
    description: "Also send, in event order, the events the endpoint would have received while it was disabled " +
      `within [since, until) and the retention, at most ${REPLAY_LIMIT} per call (docs/webhooks.md, Replay what a ` +
      "disabled endpoint missed); default false",
  }),
  skipped_after: uuid.nullish().openapi({
    description: "With include_skipped: go on after this event, the `skipped_after` of the previous call's answer " +
      "(each call reads a bounded number of events, WEBHOOK_RECOVER_SCAN_EVENTS); absent: from the range's start",
  }),
}).openapi("WebhookRecover");

export const RECOVER_EXAMPLE: z.input<typeof RecoverBody> = { since: "2026-11-21T00:00:00Z" };

export const RecoverResult = z.object({
  endpoint_id: z.string(),
  deliveries: z.number().int().openapi({ description: "How many records were queued: failed + skipped" }),
  failed: z.number().int().openapi({ description: "How many failed records were re-queued" }),
  failed_remaining: z.boolean().openapi({
    description:
      `More failed records remain past this call's limit (${REPLAY_LIMIT}): recover again with the same body`,
  }),
  skipped: z.number().int().openapi({
    description: "How many events skipped while the endpoint was disabled were queued (0 without include_skipped)",
  }),
  skipped_remaining: z.boolean().openapi({
    description: "More of the range remains past this call's bounds: recover again with `skipped_after` set to the " +
      "answer's",
  }),
  skipped_after: z.string().nullable().openapi({
    description: "The event this call's replay stopped after, while more remain (pass it back as `skipped_after`); " +
      "null once the range is done",
  }),
  skipped_deferred: z.number().int().openapi({
    description: "Of the skipped events queued, those whose filter the company's filter time could not pay for now: " +
      'queued waiting, decided before their first attempt (docs/webhooks.md, "What a company\'s filters may spend")',
  }),
}).openapi("WebhookRecoverResult");

export const TestEventBody = z.object({
  type: z.enum(EVENT_TYPES).nullish().openapi({
    description: "The event type to send; absent: the first type the endpoint enables",
  }),
}).openapi("WebhookTestEvent");

export const TEST_EVENT_EXAMPLE: z.input<typeof TestEventBody> = { type: "identified" };

/** One version of the bodies: what changed, and each event type's schema and example in it. */
export const PayloadVersionEntry = z.object({
  version: payloadVersion,
  changes: z.string(),
  latest: z.boolean(),
  event_types: z.array(z.object({
    type: z.enum(EVENT_TYPES),
    schema: z.record(z.string(), z.unknown()).openapi({
      description: "JSON Schema (2020-12) of the snapshot body an endpoint pinned to this version receives",
    }),
    example: z.record(z.string(), z.unknown()),
  })),
}).openapi("WebhookPayloadVersion");

export const EventTypeEntry = z.object({
  type: z.enum(EVENT_TYPES),
  description: z.string(),
  schema: z.record(z.string(), z.unknown()).openapi({
    description: "JSON Schema (2020-12) of the body an endpoint with the default settings receives",
  }),
}).openapi("WebhookEventType");

/** `since` of an endpoint's stats: optional, an instant (UTC unless an offset is given; a date means its start). */
export const EndpointStatsQuery = z.object({
  since: timeBound.optional().openapi({
    type: "string",
    example: "2026-11-21T07:00:00Z",
    description: "Count attempts from the start of this instant's minute; absent: 24 hours ago",
  }),
});

const outcomeCount = (description: string) => z.number().int().openapi({ description });

export const EndpointStats = z.object({
  endpoint_id: z.string(),
  since: ts.openapi({ description: "The start of the minute the counts begin at" }),
  attempts: z.object({
    total: outcomeCount("Every attempt since `since`"),
    succeeded: outcomeCount("Answered 2xx"),
    failed: outcomeCount("Every other attempt: the sum of the classes below"),
    http_3xx: outcomeCount("Answered a status under 400 that is not a 2xx (a redirect is not followed)"),
    http_4xx: outcomeCount("Answered 400-499"),
    http_5xx: outcomeCount("Answered 500 or more"),
    timeout: outcomeCount("No answer within WEBHOOK_TIMEOUT_MS"),
    network: outcomeCount("Connection refused or reset, TLS or DNS failure"),
    refused: outcomeCount("The service refused to call the URL (a private address, say)"),
  }).openapi("WebhookEndpointAttemptCounts"),
  requests: z.object({
    total: outcomeCount("Requests made since `since`: a batch's request counts once, its events each in `attempts`"),
    batches: outcomeCount("Of them, the requests that carried a batch (docs/webhooks.md, Batches)"),
  }).openapi("WebhookEndpointRequestCounts"),
  success_rate: z.number().nullable().openapi({
    description: "succeeded / total, 4 decimals; null without attempts",
    example: 0.9875,
  }),
  duration_ms: z.object({
    p50: z.number().int().nullable(),
    p95: z.number().int().nullable(),
  }).openapi({
    description: "Median and 95th percentile of the attempts' durations, from a histogram whose buckets are 26% " +
      "wide (each estimate is within that of the exact value); null without attempts",
  }),
  last_success_at: ts.nullable().openapi({ description: "The endpoint's last successful attempt, whenever it was" }),
  last_failure: z.object({
    at: ts,
    reason: z.string().nullable().openapi({
      description: "As the record's `last_error`: `HTTP <status>`, or why no answer came",
      example: "HTTP 503",
    }),
  }).nullable().openapi({ description: "The endpoint's last failed attempt, whenever it was; null if none failed" }),
  filter_errors: z.object({
    total: outcomeCount(
      "Events the endpoint's filter could not decide on, since the endpoint was created: none of " +
        "them was delivered to it",
    ),
    last: z.object({
      at: ts,
      message: z.string().openapi({
        description: "Why, with where in the filter when known",
        example: "line 1, column 1: No such key: bank_transaction",
      }),
    }).nullable().openapi({ description: "The last such error; null if none" }),
    deferred: outcomeCount(
      "Records written before the filter was evaluated, the company's filter time being spent (docs/webhooks.md, " +
        '"What a company\'s filters may spend"): each waits, and is decided before its first attempt',
    ),
    refused_after_deferral: outcomeCount(
      "Of the deferred records, those the filter then refused: removed, as a record the filter refuses at once is " +
        "never written",
    ),
    deferred_waiting: outcomeCount("Deferred records still waiting for their filter's verdict"),
  }).openapi({
    description: "Errors of the endpoint's filter (docs/webhooks.md, Filters): a key the event lacks, a value of " +
      "another type, the filter's budget, a filter stored before a rule that now refuses it",
  }),
  throttle: z.object({
    rate_limit: rateLimitAnswer,
    throttled_until: ts.nullable().openapi({
      description: "While the endpoint waits for its next turn (its rate_limit's interval, or a 429's Retry-After): " +
        "when it comes; null when an attempt may start now",
    }),
    pending: z.number().int().openapi({ description: "Deliveries waiting to be made to the endpoint (its backlog)" }),
  }).openapi({ description: "The endpoint's throttle and backlog (docs/webhooks.md, Throttle)" }),
}).openapi("WebhookEndpointStats");
