import type { Sql, Tx } from "../platform/db.ts";
import { ErrorBag, notFound } from "../platform/errors.ts";
import { newId } from "../platform/ids.ts";
import { isoUtc, isoUtcOrNull } from "../platform/time.ts";
import { isIpLiteral, isLocalHostname, isPrivateAddress } from "./url_guard.ts";

/** Endpoint settings as a client sends them; `null` or absent means the default on create, unchanged on update. */
export type EndpointSettings = {
  enabled_events?: string[] | null;
  delivery_mode?: "parallel" | "sequential" | null;
  event_payload_type?: "snapshot" | "thin" | null;
  inject_secret_in_body?: boolean | null;
  wrap_in_notification?: boolean | null;
  max_concurrency?: number | null;
  event_mapping?: Record<string, string> | null;
};
export type EndpointCreateInput = EndpointSettings & { url: string };
export type EndpointUpdateInput = EndpointSettings & { url?: string };

/** How long the secret before a rotation keeps signing (as v0) and verifying. */
export const PREVIOUS_SECRET_TTL_HOURS = 24;
/** Slot rows 0..99 can exist per endpoint: the ceiling of max_concurrency. */
export const MAX_CONCURRENCY = 100;

export type EndpointRow = {
  id: string;
  company_id: string;
  url: string;
  status: "active" | "disabled";
  enabled_events: string[];
  delivery_mode: "parallel" | "sequential";
  event_payload_type: "snapshot" | "thin";
  inject_secret_in_body: boolean;
  wrap_in_notification: boolean;
  max_concurrency: number;
  event_mapping: Record<string, string> | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  inserted_at: Date;
  updated_at: Date;
};

/** 32 random bytes as 64 lowercase hex characters. */
export function newSecret(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The previous secret while it is still valid, else null (it stops signing and stops being shown). */
export function validPreviousSecret(e: Pick<EndpointRow, "previous_secret" | "previous_secret_expires_at">) {
  return e.previous_secret && e.previous_secret_expires_at && e.previous_secret_expires_at.getTime() > Date.now()
    ? { secret: e.previous_secret, expiresAt: e.previous_secret_expires_at }
    : null;
}

/** The endpoint object as the API shows it, secret included (create, show, update and list all carry it). */
export function presentEndpoint(e: EndpointRow) {
  const previous = validPreviousSecret(e);
  return {
    id: e.id,
    company_id: e.company_id,
    url: e.url,
    status: e.status,
    enabled_events: e.enabled_events,
    delivery_mode: e.delivery_mode,
    event_payload_type: e.event_payload_type,
    inject_secret_in_body: e.inject_secret_in_body,
    wrap_in_notification: e.wrap_in_notification,
    max_concurrency: e.max_concurrency,
    event_mapping: e.event_mapping,
    secret: e.secret,
    previous_secret: previous?.secret ?? null,
    previous_secret_expires_at: isoUtcOrNull(previous?.expiresAt ?? null),
    inserted_at: isoUtc(e.inserted_at),
    updated_at: isoUtc(e.updated_at),
  };
}

/**
 * https only, unless private URLs are allowed (local development and tests), in which case http and loopback or
 * private hosts are accepted too. Names are not resolved here: the delivery checks the resolved addresses.
 */
export function checkEndpointUrl(errors: ErrorBag, raw: string, allowPrivateUrls: boolean) {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return errors.add("url", "has invalid format");
  }
  if (!["https:", "http:"].includes(url.protocol) || !url.hostname) return errors.add("url", "has invalid format");
  if (url.username || url.password) return errors.add("url", "must not contain credentials");
  if (allowPrivateUrls) return;
  if (url.protocol !== "https:") return errors.add("url", "must be an https URL");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isLocalHostname(host) || (isIpLiteral(host) && isPrivateAddress(host))) {
    errors.add("url", "must not point to a private, loopback or link-local address");
  }
}

/** Slot rows for the endpoint's concurrency; extra rows beyond a lowered max_concurrency are simply unused. */
async function ensureSlots(tx: Tx, endpointId: string, maxConcurrency: number) {
  await tx`
    insert into webhook_slots (endpoint_id, slot)
    select ${endpointId}, s from generate_series(0, ${maxConcurrency - 1}::int) s
    on conflict do nothing`;
}

export async function createEndpoint(
  sql: Sql,
  companyId: string,
  input: EndpointCreateInput,
  opts: { allowPrivateUrls: boolean },
): Promise<EndpointRow> {
  const errors = new ErrorBag();
  checkEndpointUrl(errors, input.url, opts.allowPrivateUrls);
  errors.throwIfAny(422);
  const id = newId();
  const maxConcurrency = input.max_concurrency ?? 10;
  return await sql.begin(async (tx) => {
    const [row] = await tx<EndpointRow[]>`
      insert into webhook_endpoints (
        id, company_id, url, enabled_events, delivery_mode, event_payload_type, inject_secret_in_body,
        wrap_in_notification, max_concurrency, event_mapping, secret
      ) values (
        ${id}, ${companyId}, ${input.url}, ${input.enabled_events ?? ["*"]}, ${input.delivery_mode ?? "parallel"},
        ${input.event_payload_type ?? "snapshot"}, ${input.inject_secret_in_body ?? false},
        ${input.wrap_in_notification ?? false}, ${maxConcurrency},
        ${input.event_mapping ? tx.json(input.event_mapping) : null}, ${newSecret()}
      ) returning *`;
    await ensureSlots(tx, id, maxConcurrency);
    return row;
  });
}

export async function getEndpoint(sql: Tx, companyId: string, id: string): Promise<EndpointRow> {
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
  opts: { allowPrivateUrls: boolean },
): Promise<EndpointRow> {
  const errors = new ErrorBag();
  if (input.url !== undefined) checkEndpointUrl(errors, input.url, opts.allowPrivateUrls);
  errors.throwIfAny(422);
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
  return await sql.begin(async (tx) => {
    const mapping = input.event_mapping === undefined
      ? tx`event_mapping`
      : input.event_mapping === null
      ? tx`null`
      : tx`${tx.json(input.event_mapping)}`;
    const [row] = Object.keys(changes).length
      ? await tx<EndpointRow[]>`
          update webhook_endpoints set ${tx(changes)}, event_mapping = ${mapping}, updated_at = now()
          where company_id = ${companyId} and id = ${id} returning *`
      : await tx<EndpointRow[]>`
          update webhook_endpoints set event_mapping = ${mapping}, updated_at = now()
          where company_id = ${companyId} and id = ${id} returning *`;
    if (!row) throw notFound();
    await ensureSlots(tx, id, row.max_concurrency);
    return row;
  });
}

/** Soft delete: the endpoint gets nothing more, and what was still pending for it is marked failed. */
export async function disableEndpoint(sql: Sql, companyId: string, id: string): Promise<EndpointRow> {
  return await sql.begin(async (tx) => {
    const [row] = await tx<EndpointRow[]>`
      update webhook_endpoints set status = 'disabled', updated_at = now()
      where company_id = ${companyId} and id = ${id} returning *`;
    if (!row) throw notFound();
    await failPendingDeliveries(tx, companyId, [id]);
    return row;
  });
}

export async function disableAllEndpoints(sql: Sql, companyId: string): Promise<void> {
  await sql.begin(async (tx) => {
    const rows = await tx<{ id: string }[]>`
      update webhook_endpoints set status = 'disabled', updated_at = now()
      where company_id = ${companyId} and status = 'active' returning id`;
    await failPendingDeliveries(tx, companyId, rows.map((r) => r.id));
  });
}

export async function failPendingDeliveries(tx: Tx, companyId: string, endpointIds: string[]) {
  if (endpointIds.length === 0) return;
  await tx`
    update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = now()
    where company_id = ${companyId} and endpoint_id = any(${endpointIds}::uuid[]) and status = 'pending'`;
}

/** A new secret; the old one keeps signing as v0 (and verifying) for 24 hours. */
export async function rotateSecret(sql: Sql, companyId: string, id: string): Promise<EndpointRow> {
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set
      previous_secret = secret,
      previous_secret_expires_at = now() + make_interval(hours => ${PREVIOUS_SECRET_TTL_HOURS}),
      secret = ${newSecret()},
      updated_at = now()
    where company_id = ${companyId} and id = ${id} returning *`;
  if (!row) throw notFound();
  return row;
}
