/**
 * Webhook endpoints: their settings and checks, the API's endpoint object, and create, update, rotate, disable and
 * enable. Every way an endpoint becomes disabled goes through here; the credentials themselves are credentials.ts.
 */

import type postgres from "postgres";
import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import { conflict, ErrorBag, invalidFormat, notFound } from "../../basics/errors.ts";
import { newId } from "../../basics/ids.ts";
import { isoUtc, isoUtcOrNull } from "../../basics/time.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import { isIpLiteral, isLocalHostname, isNeverReachable, isPrivateAddress, loopbackForm } from "./url_guard.ts";
import { checkEndpointQuota, type EndpointQuota, fitSlots } from "./quotas.ts";
import { emitEndpointDisabled } from "../outbox/operational.ts";
import { checkFilter } from "../outbox/filters.ts";
import { checkNewEndpointFilter, checkUpdatedEndpointFilter } from "./typed_filter.ts";
import { newCredential, newCredentialSet, openSecrets, previousPublicKeys, retiringCurrent } from "./credentials.ts";
import { type BatchSetting, disabling, type EndpointRow, type SignatureScheme } from "./endpoint_row.ts";
import { checkBatch, storedBatch } from "./batch_rules.ts";
import { checkRateLimit, fitThrottle } from "./throttle.ts";
import {
  checkCustomHeaders,
  type CustomHeadersInput,
  customHeadersSet,
  newCustomHeaders,
  presentCustomHeaders,
} from "./custom_headers.ts";
import {
  checkClientCertificate,
  type ClientCertificateInput,
  clientCertificateSet,
  presentClientCertificate,
  storedClientCertificate,
} from "./mtls.ts";
import { checkOAuth2, oauth2Column, type OAuth2Input, presentOAuth2, storedOAuth2 } from "./oauth2.ts";
import { refuseSecretsLeftBehind } from "./bound_secrets.ts";
import { payloadVersionOf } from "../outbox/payload_versions.ts";
import {
  brokerCredentialsColumn,
  brokerTarget,
  checkBrokerSettings,
  destinationColumn,
  presentBrokerCredentials,
} from "./brokers.ts";
import { acceptedSchemes, transportOfUrl } from "../destinations/registry.ts";
import type { Destination } from "../destinations/transport.ts";

/** Endpoint settings as a client sends them; `null` or absent means the default on create, unchanged on update. */
export type EndpointSettings = {
  enabled_events?: string[] | null;
  delivery_mode?: "parallel" | "sequential" | null;
  event_payload_type?: "snapshot" | "thin" | null;
  inject_secret_in_body?: boolean | null;
  wrap_in_notification?: boolean | null;
  max_concurrency?: number | null;
  event_mapping?: Record<string, string> | null;
  /** A CEL expression (filters.ts); `null` removes it on update, absent leaves it. */
  filter?: string | null;
  signature_scheme?: SignatureScheme | null;
  /** Deliveries per second at most (throttle.ts); `null` removes the throttle on update, absent leaves it. */
  rate_limit?: number | null;
  /** The mTLS client certificate and key (mtls.ts); `null` removes it on update, absent leaves it. */
  client_certificate?: ClientCertificateInput | null;
  /** OAuth2 client credentials (oauth2.ts); `null` removes them on update, absent leaves them. */
  oauth2?: OAuth2Input | null;
  /** The payload version to pin (payload_versions.ts); `null` unpins (the first version), absent leaves it. */
  payload_version?: string | null;
  /** Deliver in batches (batch_rules.ts); `null` removes it on update, absent leaves it. */
  batch?: BatchSetting | null;
};
/** Where a broker endpoint publishes and with which credentials (brokers.ts); absent leaves them on update. */
type BrokerSettings = { destination?: unknown; broker_credentials?: unknown };
export type EndpointCreateInput = EndpointSettings & CustomHeadersInput & BrokerSettings & { url: string };
export type EndpointUpdateInput = EndpointSettings & CustomHeadersInput & BrokerSettings & { url?: string };

/** Slot rows 0..99 can exist per endpoint: the ceiling of max_concurrency. */
export const MAX_CONCURRENCY = 100;

/**
 * The endpoint object of the API, secrets included (create, show, update and list all carry them).
 * `previous_secret` is the most recent secret rotated away; `previous_secrets` lists every one still signing.
 * An ed25519 endpoint shows `secret: null` and its `public_key`; its private key is never shown.
 */
export async function presentEndpoint(box: SecretBox, e: EndpointRow) {
  const { secret, previous } = await openSecrets(box, e);
  return {
    id: e.id,
    company_id: e.company_id,
    url: e.url,
    transport: e.transport ?? "http",
    destination: e.destination ?? null,
    broker_credentials: await presentBrokerCredentials(box, e),
    status: e.status,
    disabled_reason: e.status === "disabled" ? e.disabled_reason : null,
    disabled_at: isoUtcOrNull(e.status === "disabled" ? e.disabled_at : null),
    enabled_events: e.enabled_events,
    delivery_mode: e.delivery_mode,
    event_payload_type: e.event_payload_type,
    inject_secret_in_body: e.inject_secret_in_body,
    wrap_in_notification: e.wrap_in_notification,
    max_concurrency: e.max_concurrency,
    event_mapping: e.event_mapping,
    filter: e.filter,
    rate_limit: e.rate_limit ?? null,
    batch: storedBatch(e.batch),
    secret,
    previous_secret: previous[0]?.secret ?? null,
    previous_secret_expires_at: isoUtcOrNull(previous[0]?.expiresAt ?? null),
    previous_secrets: previous.map((p) => ({ secret: p.secret, expires_at: isoUtc(p.expiresAt) })),
    signature_scheme: e.signature_scheme,
    public_key: e.public_key,
    previous_public_keys: previousPublicKeys(e),
    ...await presentCustomHeaders(box, e),
    client_certificate: presentClientCertificate(e),
    payload_version: payloadVersionOf(e.payload_version),
    inserted_at: isoUtc(e.inserted_at),
    updated_at: isoUtc(e.updated_at),
    oauth2: presentOAuth2(e.oauth2),
  };
}

/** The answer to rotate_secret: the new secret (or public key) and the ones it replaced. */
export async function presentRotation(box: SecretBox, e: EndpointRow) {
  const { secret, previous } = await openSecrets(box, e);
  return {
    id: e.id,
    secret,
    previous_secret: previous[0]?.secret ?? null,
    previous_secret_expires_at: isoUtcOrNull(previous[0]?.expiresAt ?? null),
    signature_scheme: e.signature_scheme,
    public_key: e.public_key,
    previous_public_keys: previousPublicKeys(e),
  };
}

const URL_FORMAT = invalidFormat("an https:// URL", "https://example.com/hooks");

/**
 * https only, unless private URLs are allowed (local development and tests), in which case http and loopback or
 * private hosts are accepted too; link-local and cloud metadata addresses never are. A broker URL (amqps://, tls://,
 * rediss://, mqtts://, and their plaintext schemes where http is allowed) obeys the same address rules and its
 * transport's (brokers.ts). Names are not resolved here: the delivery checks the resolved addresses.
 */
export function checkEndpointUrl(errors: ErrorBag, raw: string, allowPrivateUrls: boolean) {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return errors.add("url", URL_FORMAT);
  }
  const transport = transportOfUrl(raw);
  if (transport !== "http" && transport !== null) {
    brokerTarget(errors, url, allowPrivateUrls);
    return;
  }
  if (!["https:", "http:"].includes(url.protocol) || !url.hostname) {
    return errors.add(
      "url",
      invalidFormat(`a URL starting ${acceptedSchemes(allowPrivateUrls).join(", ")}`, "https://example.com/hooks"),
    );
  }
  if (url.username || url.password) return errors.add("url", "must not contain credentials");
  if (isNeverReachable(url.hostname.replace(/^\[|\]$/g, ""))) {
    return errors.add("url", "must not point to a link-local or cloud metadata address (no setting allows it)");
  }
  if (allowPrivateUrls) return;
  // the setting is named: a refused local receiver otherwise leaves its developer guessing (README, "Quickstart")
  if (url.protocol !== "https:") {
    return errors.add(
      "url",
      "must be an https URL (http:// needs WEBHOOK_ALLOW_PRIVATE_URLS=true, never in production)",
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isLocalHostname(host) || (isIpLiteral(host) && isPrivateAddress(host))) {
    errors.add(
      "url",
      "must not point to a private, loopback or link-local address (those need WEBHOOK_ALLOW_PRIVATE_URLS=true, " +
        "never in production)",
    );
  }
}

/**
 * One active endpoint per URL and company: a second would get every event again, signed with another secret, so half
 * of what its receiver gets would fail verification (docs/webhooks.md, "One endpoint per URL"). A loopback URL is one
 * URL under any of its names (`loopbackForm`: localhost, 127.0.0.1, [::1]), which only development accepts at all.
 * Called under the company's row lock that the quota check takes, so two registrations at once cannot both pass.
 */
async function refuseSecondAtUrl(
  tx: SqlOrTransaction,
  companyId: string,
  url: string,
  destination: Destination | null,
  exceptId?: string,
): Promise<void> {
  const loopback = loopbackForm(url);
  // a broker endpoint is one per url and destination: two exchanges on one vhost are two endpoints
  const target = destination ? tx`and destination = ${tx.json(destination)}` : tx`and destination is null`;
  // a loopback URL is compared with the company's other active endpoints (at most its endpoint quota) in their one form
  const candidates = await tx<{ id: string; url: string }[]>`
    select id, url from webhook_endpoints
    where company_id = ${companyId} and status = 'active' and id is distinct from ${exceptId ?? null}::uuid
      ${loopback === null ? tx`and url = ${url}` : tx``} ${target}
    order by url = ${url} desc, id`;
  const existing = candidates.find((e) => e.url === url || (loopback !== null && loopbackForm(e.url) === loopback));
  if (!existing) return;
  const alias = existing.url === url ? "" : ` (as ${existing.url}: localhost, 127.0.0.1 and [::1] are one receiver)`;
  const what = destination ? "URL and destination" : "URL";
  throw conflict({
    url: [
      `is already the ${what} of active endpoint ${existing.id}${alias}: update that endpoint, or disable it first`,
    ],
  });
}

/**
 * An ed25519 endpoint has no shared secret, so none can be put in its bodies (docs/webhooks.md, "Ed25519
 * signatures"). `scheme` and `injectSecret` are the values the endpoint would have after the request.
 */
export function checkSchemeSettings(errors: ErrorBag, scheme: SignatureScheme, injectSecret: boolean) {
  if (scheme === "ed25519" && injectSecret) {
    errors.add("inject_secret_in_body", "must be false with signature_scheme ed25519, which has no shared secret");
  }
}

/** What only an HTTP receiver has: a broker endpoint has no TLS client certificate and no OAuth2 token to send. */
function checkHttpOnly(errors: ErrorBag, input: { client_certificate?: unknown; oauth2?: unknown }, url: string) {
  if (transportOfUrl(url) === "http") return;
  if (input.client_certificate != null) errors.add("client_certificate", "is only for an https url");
  if (input.oauth2 != null) errors.add("oauth2", "is only for an https url");
}

/** The settings' rules that depend on configuration (the URL) or on each other; throws every error at once. */
export function validateEndpointInput(
  input: {
    url?: string | null;
    signature_scheme?: SignatureScheme | null;
    inject_secret_in_body?: boolean | null;
    filter?: unknown;
    rate_limit?: number | null;
    headers?: unknown;
    secret_headers?: unknown;
    client_certificate?: Partial<ClientCertificateInput> | null;
    oauth2?: unknown;
    destination?: unknown;
    broker_credentials?: unknown;
  },
  opts: { allowPrivateUrls: boolean; creating?: boolean },
) {
  const errors = new ErrorBag();
  if (typeof input.url === "string") {
    checkEndpointUrl(errors, input.url, opts.allowPrivateUrls);
    // on create the destination is required; an update that gives the url checks what it gives against it
    checkBrokerSettings(errors, input, input.url, { creating: opts.creating ?? false });
    checkHttpOnly(errors, input, input.url);
  }
  checkOAuth2(errors, input.oauth2, (bag, raw) => checkEndpointUrl(bag, raw, opts.allowPrivateUrls));
  checkFilter(errors, input.filter);
  checkRateLimit(errors, input.rate_limit);
  checkCustomHeaders(errors, input);
  if (input.client_certificate) checkClientCertificate(errors, input.client_certificate);
  checkSchemeSettings(errors, input.signature_scheme ?? "hmac-sha256", input.inject_secret_in_body ?? false);
  errors.throwIfAny(422);
}

export async function createEndpoint(
  sql: Sql,
  companyId: string,
  input: EndpointCreateInput,
  opts: { allowPrivateUrls: boolean; quota: EndpointQuota; box: SecretBox },
): Promise<EndpointRow> {
  validateEndpointInput(input, { ...opts, creating: true });
  const batchErrors = new ErrorBag();
  checkBatch(batchErrors, input.batch, {
    transport: transportOfUrl(input.url) ?? "http",
    wrap_in_notification: input.wrap_in_notification ?? false,
    inject_secret_in_body: input.inject_secret_in_body ?? false,
    rate_limit: input.rate_limit ?? null,
  });
  batchErrors.throwIfAny(422);
  checkNewEndpointFilter(input);
  const id = newId();
  const destination = destinationColumn(input.url, input.destination);
  const brokerCredentials = await brokerCredentialsColumn(opts.box, id, input.broker_credentials, null);
  const maxConcurrency = input.max_concurrency ?? 10;
  const scheme = input.signature_scheme ?? "hmac-sha256";
  const credential = await newCredential(opts.box, id, scheme);
  const custom = await newCustomHeaders(opts.box, id, input);
  const client = await storedClientCertificate(opts.box, id, input.client_certificate ?? null);
  const oauth2 = await oauth2Column(opts.box, id, input.oauth2 ?? null, null);
  return await sql.begin(async (tx) => {
    await checkEndpointQuota(tx, companyId, opts.quota, { maxConcurrency });
    await refuseSecondAtUrl(tx, companyId, input.url, destination);
    const [row] = await tx<EndpointRow[]>`
      insert into webhook_endpoints (
        id, company_id, url, transport, destination, sealed_broker_credentials, filter, enabled_events, delivery_mode, event_payload_type, inject_secret_in_body,
        wrap_in_notification, max_concurrency, event_mapping, signature_scheme, sealed_secret, sealed_signing_key,
        public_key, custom_headers, sealed_custom_headers, client_certificate, sealed_client_key, oauth2,
        payload_version
      ) values (
        ${id}, ${companyId}, ${input.url}, ${transportOfUrl(input.url)}, ${destination ? tx.json(destination) : null},
        ${brokerCredentials}, ${input.filter ?? null}, ${input.enabled_events ?? ["*"]},
        ${input.delivery_mode ?? "parallel"},
        ${input.event_payload_type ?? "snapshot"}, ${input.inject_secret_in_body ?? false},
        ${input.wrap_in_notification ?? false}, ${maxConcurrency},
        ${input.event_mapping ? tx.json(input.event_mapping) : null}, ${scheme}, ${credential.sealed_secret},
        ${credential.sealed_signing_key}, ${credential.public_key}, ${tx.json(custom.custom_headers)},
        ${tx.json(custom.sealed_custom_headers)}, ${client.client_certificate}, ${client.sealed_client_key},
        ${oauth2 ? tx.json(oauth2) : null},
        ${input.payload_version ?? null}
      ) returning *`;
    // a statement of its own, as rate_limit's: the create statement stays as it was
    const made = input.batch ? await setBatch(tx, id, input.batch) : row;
    await fitSlots(tx, [id]);
    if (input.rate_limit != null) return await setRateLimit(tx, id, input.rate_limit);
    return made;
  });
}

export async function getEndpoint(sql: SqlOrTransaction, companyId: string, id: string): Promise<EndpointRow> {
  const [row] = await sql<EndpointRow[]>`
    select * from webhook_endpoints where company_id = ${companyId} and id = ${id}`;
  if (!row) throw notFound();
  return row;
}

/** Every endpoint of the company, oldest first, disabled ones included. */
export function listEndpoints(sql: Sql, companyId: string): Promise<EndpointRow[]> {
  return sql<EndpointRow[]>`select * from webhook_endpoints where company_id = ${companyId} order by id`;
}

export async function updateEndpoint(
  sql: Sql,
  companyId: string,
  id: string,
  input: EndpointUpdateInput,
  opts: { allowPrivateUrls: boolean; quota: EndpointQuota; box: SecretBox },
): Promise<EndpointRow> {
  validateEndpointInput(input, opts);
  const changes: Record<string, unknown> = {};
  for (
    const key of [
      "url",
      "enabled_events",
      "delivery_mode",
      "event_payload_type",
      "inject_secret_in_body",
      "wrap_in_notification",
      "max_concurrency",
    ] as const
  ) {
    if (input[key] !== undefined && input[key] !== null) changes[key] = input[key];
  }
  // null clears the filter, as it clears event_mapping
  if (input.filter !== undefined) changes.filter = input.filter;
  // null unpins: the endpoint gets the first version again (docs/webhooks.md, "Payload versions")
  if (input.payload_version !== undefined) changes.payload_version = input.payload_version;
  return await sql.begin(async (tx) => {
    if (input.max_concurrency != null) {
      await checkEndpointQuota(tx, companyId, opts.quota, { endpointId: id, maxConcurrency: input.max_concurrency });
    }
    const broker = await brokerChange(tx, companyId, id, input, opts.box);
    if (input.url != null || input.destination !== undefined) {
      await tx`select 1 from companies where id = ${companyId} for update`;
      const [self] = await tx<{ status: string }[]>`
        select status from webhook_endpoints where company_id = ${companyId} and id = ${id}`;
      if (self?.status === "active") await refuseSecondAtUrl(tx, companyId, broker.url, broker.destination, id);
    }
    // after the company's lock, as every update takes its locks: the company, then the endpoint's row
    await refuseSecretsLeftBehind(tx, opts.box, companyId, id, input);
    await checkUpdatedEndpointFilter(tx, companyId, id, input);
    const { set: schemeSet } = await schemeSwitch(tx, companyId, id, input, opts.box);
    const { set: oauth2Set } = await oauth2Change(tx, companyId, id, input, opts.box);
    const switching = tx`${schemeSet}${oauth2Set}${broker.set}`;
    await checkBatchAfterUpdate(tx, companyId, id, input);
    const { set: headers } = await customHeadersSet(tx, opts.box, companyId, id, input);
    // absent leaves the client certificate as it is; null removes it (docs/webhooks.md, "Client certificates (mTLS)")
    const client = input.client_certificate === undefined
      ? tx``
      : clientCertificateSet(tx, await storedClientCertificate(opts.box, id, input.client_certificate));
    const mapping = input.event_mapping === undefined
      ? tx`event_mapping`
      : input.event_mapping === null
      ? tx`null`
      : tx`${tx.json(input.event_mapping)}`;
    const [row] = Object.keys(changes).length
      ? await tx<EndpointRow[]>`
          update webhook_endpoints set ${
        tx(changes)
      }, event_mapping = ${mapping}${switching}${headers}${client}, updated_at = now()
          where company_id = ${companyId} and id = ${id} returning *`
      : await tx<EndpointRow[]>`
          update webhook_endpoints set event_mapping = ${mapping}${switching}${headers}${client}, updated_at = now()
          where company_id = ${companyId} and id = ${id} returning *`;
    if (!row) throw notFound();
    // the slots move with it (2,000,000 on for a batched endpoint: sql/0049), by fitSlots below
    const batched = input.batch !== undefined ? await setBatch(tx, id, input.batch) : row;
    await fitSlots(tx, [id]);
    if (input.rate_limit !== undefined) return await setRateLimit(tx, id, input.rate_limit);
    return batched;
  });
}

/** Sets (or with null removes) the endpoint's `batch` (docs/webhooks.md, "Batches"); its slots follow by fitSlots. */
async function setBatch(tx: SqlOrTransaction, id: string, batch: BatchSetting | null): Promise<EndpointRow> {
  const stored = storedBatch(batch);
  const [row] = await tx<EndpointRow[]>`
    update webhook_endpoints set batch = ${stored ? tx.json(stored) : null} where id = ${id} returning *`;
  return row;
}

/**
 * The batch rules (batch_rules.ts) on the values the endpoint will have after the update: a batch given, or one kept
 * while a setting it cannot go with is turned on. 404 is left to the update itself.
 */
async function checkBatchAfterUpdate(tx: SqlOrTransaction, companyId: string, id: string, input: EndpointUpdateInput) {
  const [current] = await tx<
    Pick<EndpointRow, "transport" | "wrap_in_notification" | "inject_secret_in_body" | "rate_limit" | "batch">[]
  >`
    select transport, wrap_in_notification, inject_secret_in_body, rate_limit, batch from webhook_endpoints
    where company_id = ${companyId} and id = ${id}`;
  if (!current) return;
  const batch = input.batch !== undefined ? input.batch : current.batch;
  const errors = new ErrorBag();
  checkBatch(errors, batch, {
    transport: (input.url ? transportOfUrl(input.url) : null) ?? current.transport ?? "http",
    wrap_in_notification: input.wrap_in_notification ?? current.wrap_in_notification,
    inject_secret_in_body: input.inject_secret_in_body ?? current.inject_secret_in_body,
    rate_limit: input.rate_limit !== undefined ? input.rate_limit : current.rate_limit ?? null,
  });
  errors.throwIfAny(422);
}

/**
 * Sets (or with null removes) the endpoint's rate_limit and keeps its throttle row in step (throttle.ts), in the
 * transaction that created or updated it: a statement of its own, so the create and update statements stay as they
 * were.
 */
async function setRateLimit(tx: SqlOrTransaction, id: string, rate: number | null): Promise<EndpointRow> {
  const [row] = await tx<EndpointRow[]>`
    update webhook_endpoints set rate_limit = ${rate} where id = ${id} returning *`;
  await fitThrottle(tx, id);
  return row;
}

/**
 * What an update does to a broker endpoint's `destination` and `broker_credentials` (brokers.ts), checked against the
 * url it will have: the url keeps its transport (422 otherwise: a broker endpoint and an HTTP one deliver differently,
 * so the change is a new endpoint), a destination given replaces the stored one, and credentials given replace the
 * stored ones, which masked ones keep. Returns the url and destination the endpoint will have, and the SET fragment.
 */
async function brokerChange(
  tx: SqlOrTransaction,
  companyId: string,
  id: string,
  input: EndpointUpdateInput,
  box: SecretBox,
): Promise<{ url: string; destination: Destination | null; set: postgres.Fragment }> {
  const [current] = await tx<Pick<EndpointRow, "url" | "transport" | "destination" | "sealed_broker_credentials">[]>`
    select url, transport, destination, sealed_broker_credentials from webhook_endpoints
    where company_id = ${companyId} and id = ${id}`;
  if (!current) throw notFound();
  const url = input.url ?? current.url;
  const errors = new ErrorBag();
  const transport = current.transport ?? "http";
  if (input.url != null && transportOfUrl(input.url) !== transport) {
    errors.add(
      "url",
      `cannot move this ${transport} endpoint to another transport: create a new endpoint for ${
        input.url.split(":")[0]
      }`,
    );
  }
  if (input.url == null) {
    checkBrokerSettings(errors, input, url, { creating: false });
    checkHttpOnly(errors, input, url);
  }
  errors.throwIfAny(422);
  const destination = input.destination !== undefined
    ? destinationColumn(url, input.destination)
    : current.destination ?? null;
  const changed = input.destination !== undefined
    ? tx`, destination = ${destination ? tx.json(destination) : null}`
    : tx``;
  if (input.broker_credentials === undefined) return { url, destination, set: changed };
  const sealed = await brokerCredentialsColumn(
    box,
    id,
    input.broker_credentials,
    current.sealed_broker_credentials ?? null,
  );
  return { url, destination, set: tx`${changed}, sealed_broker_credentials = ${sealed}` };
}

/**
 * What an update does to the endpoint's signing (docs/webhooks.md, "Ed25519 signatures"): nothing (an empty
 * fragment, wrapped: a fragment is a thenable, which an async function would run) unless `signature_scheme` changes, in which case a credential of the new scheme is made and the current
 * one keeps signing for 24 hours, so the receiver can move to the new scheme without refusing a delivery. Checks the
 * settings the endpoint would have (no secret in the body of an ed25519 endpoint) under the row's lock.
 */
async function schemeSwitch(
  tx: SqlOrTransaction,
  companyId: string,
  id: string,
  input: EndpointUpdateInput,
  box: SecretBox,
): Promise<{ set: postgres.Fragment }> {
  if (input.signature_scheme == null && input.inject_secret_in_body !== true) return { set: tx`` };
  const [current] = await tx<Pick<EndpointRow, "signature_scheme" | "inject_secret_in_body">[]>`
    select signature_scheme, inject_secret_in_body from webhook_endpoints
    where company_id = ${companyId} and id = ${id} for no key update`;
  if (!current) throw notFound();
  const scheme = input.signature_scheme ?? current.signature_scheme;
  const errors = new ErrorBag();
  checkSchemeSettings(errors, scheme, input.inject_secret_in_body ?? current.inject_secret_in_body);
  errors.throwIfAny(422);
  if (scheme === current.signature_scheme) return { set: tx`` };
  return { set: tx`, ${newCredentialSet(tx, await newCredential(box, id, scheme), scheme)}` };
}

/**
 * What an update does to the endpoint's OAuth2 client credentials (oauth2.ts): nothing (an empty fragment, wrapped as
 * in `schemeSwitch`) when `oauth2` is absent; null removes them; an object replaces them, keeping the stored client
 * secret when none is given, which `refuseSecretsLeftBehind` (bound_secrets.ts) allowed before (read under the row's
 * lock).
 */
async function oauth2Change(
  tx: SqlOrTransaction,
  companyId: string,
  id: string,
  input: EndpointUpdateInput,
  box: SecretBox,
): Promise<{ set: postgres.Fragment }> {
  if (input.oauth2 === undefined) return { set: tx`` };
  const current = input.oauth2 === null ? null : await storedOAuth2(tx, companyId, id);
  const value = await oauth2Column(box, id, input.oauth2, current);
  return { set: tx`, oauth2 = ${value ? tx.json(value) : null}` };
}

/**
 * Soft delete: the endpoint gets nothing more, and what was still pending for it is marked failed. The company's
 * other endpoints that subscribe hear of it (`endpoint.disabled`, reason `manual`) when it was active.
 */
export async function disableEndpoint(sql: Sql, companyId: string, id: string): Promise<EndpointRow> {
  return await sql.begin(async (tx) => {
    // the company before the endpoint, the order an update under the company's lock takes them in: the event's
    // records take a key-share lock on the company
    await tx`select 1 from companies where id = ${companyId} for key share`;
    // no key update, the lock the update takes anyway: a stronger one would wait on, and deadlock with, the record
    // statement adding to this endpoint's stats, whose foreign key takes a key-share lock (docs/webhooks.md)
    const [before] = await tx<{ status: string }[]>`
      select status from webhook_endpoints where company_id = ${companyId} and id = ${id} for no key update`;
    const [row] = await tx<EndpointRow[]>`
      update webhook_endpoints set ${disabling(tx, tx`'manual'`)}
      where company_id = ${companyId} and id = ${id} returning *`;
    if (!row) throw notFound();
    await failPendingDeliveries(tx, companyId, [id]);
    await fitSlots(tx, [id]);
    if (before?.status === "active") await emitEndpointDisabled(tx, row);
    return row;
  });
}

/**
 * Makes a disabled endpoint active again, within the company's quota (as if created), with its slots back. Records
 * that failed while it was disabled stay failed: recover them (`recoverDeliveries`) to have them sent. Enabling an
 * active endpoint changes nothing.
 */
export async function enableEndpoint(
  sql: Sql,
  companyId: string,
  id: string,
  opts: { quota: EndpointQuota },
): Promise<EndpointRow> {
  return await sql.begin(async (tx) => {
    // the lock the quota check takes, taken before reading: two enables at once then see each other's result
    await tx`select 1 from companies where id = ${companyId} for update`;
    const current = await getEndpoint(tx, companyId, id);
    if (current.status === "active") return current;
    await checkEndpointQuota(tx, companyId, opts.quota, { maxConcurrency: current.max_concurrency });
    await refuseSecondAtUrl(tx, companyId, current.url, current.destination ?? null, id);
    const [row] = await tx<EndpointRow[]>`
      update webhook_endpoints
      set status = 'active', updated_at = now(), disabled_reason = null, disabled_at = null, failing_since = null,
        consecutive_failures = 0, failing_alerted_at = null
      where company_id = ${companyId} and id = ${id} returning *`;
    await fitSlots(tx, [id]);
    return row;
  });
}

export async function disableAllEndpoints(sql: Sql, companyId: string): Promise<void> {
  await sql.begin(async (tx) => {
    const rows = await tx<{ id: string }[]>`
      update webhook_endpoints set ${disabling(tx, tx`'manual'`)}
      where company_id = ${companyId} and status = 'active' returning id`;
    await failPendingDeliveries(tx, companyId, rows.map((r) => r.id));
    await fitSlots(tx, rows.map((r) => r.id));
  });
}

export async function failPendingDeliveries(tx: SqlOrTransaction, companyId: string, endpointIds: string[]) {
  if (endpointIds.length === 0) return;
  await tx`
    update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = now()
    where company_id = ${companyId} and endpoint_id = any(${endpointIds}::uuid[]) and status = 'pending'`;
}

/**
 * A new secret. The one it replaces keeps signing (as v0) and verifying for 24 hours, and so do the ones rotated
 * away before it, each until its own expiry (at most MAX_PREVIOUS_SECRETS, newest first). An ed25519 endpoint gets a
 * new key pair instead, its current key signing for 24 hours the same way.
 */
export async function rotateSecret(sql: Sql, box: SecretBox, companyId: string, id: string): Promise<EndpointRow> {
  // One of each kind is made, and the statement keeps the one of the scheme the row has when it is updated: an update
  // changing the scheme at the same moment cannot make the rotation give it a credential of the other kind.
  const secret = await newCredential(box, id, "hmac-sha256");
  const key = await newCredential(box, id, "ed25519");
  const ed25519 = sql`signature_scheme = 'ed25519'`;
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set ${retiringCurrent(sql)},
      sealed_secret = case when ${ed25519} then null else ${secret.sealed_secret} end,
      sealed_signing_key = case when ${ed25519} then ${key.sealed_signing_key} end,
      public_key = case when ${ed25519} then ${key.public_key} end,
      updated_at = now()
    where company_id = ${companyId} and id = ${id} returning *`;
  if (!row) throw notFound();
  return row;
}
