import type postgres from "postgres";
import type { Sql, Tx } from "../infra/db.ts";
import { conflict, ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { isoUtc, isoUtcOrNull } from "../basics/time.ts";
import { isSealed, SEALED_PREFIX, type SecretBox } from "../infra/secret_box.ts";
import { isIpLiteral, isLocalHostname, isPrivateAddress } from "./url_guard.ts";
import { checkEndpointQuota, type EndpointQuota, fitSlots } from "./quotas.ts";

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

/** How long a secret rotated away keeps signing (as v0) and verifying. */
export const PREVIOUS_SECRET_TTL_HOURS = 24;
/** At most this many secrets rotated away are kept (the oldest goes first): each adds a v0 to every signature. */
export const MAX_PREVIOUS_SECRETS = 10;
/** Slot rows 0..99 can exist per endpoint: the ceiling of max_concurrency. */
export const MAX_CONCURRENCY = 100;

/** A secret rotated away, as stored: sealed, with the instant it stops signing. */
export type StoredPreviousSecret = { secret: string; expires_at: string };

export type DisabledReason = "manual" | "gone" | "failing";

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
  /** The signing secret, sealed (domain/infra/secret_box.ts): `openSecrets` reads it. */
  sealed_secret: string;
  /** Secrets rotated away, sealed, newest first; expired ones are ignored, and dropped at the next rotation. */
  sealed_previous_secrets: StoredPreviousSecret[];
  inserted_at: Date;
  updated_at: Date;
};

/** An endpoint's secrets in plain text: the current one, and those rotated away that still sign, newest first. */
export type EndpointSecrets = { secret: string; previous: { secret: string; expiresAt: Date }[] };

/** 32 random bytes as 64 lowercase hex characters. */
export function newSecret(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A secret is sealed for its endpoint: copied to another endpoint's row, it does not open. */
const sealContext = (endpointId: string) => `webhook_endpoints:${endpointId}`;

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
    secret: await box.open(e.sealed_secret, context),
    previous: await Promise.all(
      previous.map(async (p) => ({ secret: await box.open(p.sealed, context), expiresAt: p.expiresAt })),
    ),
  };
}

/**
 * The endpoint object of the API, secrets included (create, show, update and list all carry them).
 * `previous_secret` is the most recent secret rotated away; `previous_secrets` lists every one still signing.
 */
export async function presentEndpoint(box: SecretBox, e: EndpointRow) {
  const { secret, previous } = await openSecrets(box, e);
  return {
    id: e.id,
    company_id: e.company_id,
    url: e.url,
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
    secret,
    previous_secret: previous[0]?.secret ?? null,
    previous_secret_expires_at: isoUtcOrNull(previous[0]?.expiresAt ?? null),
    previous_secrets: previous.map((p) => ({ secret: p.secret, expires_at: isoUtc(p.expiresAt) })),
    inserted_at: isoUtc(e.inserted_at),
    updated_at: isoUtc(e.updated_at),
  };
}

/** The answer to rotate_secret: the new secret and the one it replaced. */
export async function presentRotation(box: SecretBox, e: EndpointRow) {
  const { secret, previous } = await openSecrets(box, e);
  return {
    id: e.id,
    secret,
    previous_secret: previous[0]?.secret ?? null,
    previous_secret_expires_at: isoUtcOrNull(previous[0]?.expiresAt ?? null),
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
 * of what its receiver gets would fail verification (docs/webhooks.md, "One endpoint per URL"). Called under the
 * company's row lock that the quota check takes, so two registrations at once cannot both pass.
 */
async function refuseSecondAtUrl(tx: Tx, companyId: string, url: string, exceptId?: string): Promise<void> {
  const [existing] = await tx<{ id: string }[]>`
    select id from webhook_endpoints
    where company_id = ${companyId} and url = ${url} and status = 'active'
      and id is distinct from ${exceptId ?? null}::uuid
    limit 1`;
  if (existing) {
    throw conflict({
      url: [`is already the URL of active endpoint ${existing.id}: update that endpoint, or disable it first`],
    });
  }
}

/** The settings' rules that depend on configuration (the URL); throws every error at once. */
export function validateEndpointInput(input: { url?: string | null }, opts: { allowPrivateUrls: boolean }) {
  const errors = new ErrorBag();
  if (typeof input.url === "string") checkEndpointUrl(errors, input.url, opts.allowPrivateUrls);
  errors.throwIfAny(422);
}

export async function createEndpoint(
  sql: Sql,
  companyId: string,
  input: EndpointCreateInput,
  opts: { allowPrivateUrls: boolean; quota: EndpointQuota; box: SecretBox },
): Promise<EndpointRow> {
  validateEndpointInput(input, opts);
  const id = newId();
  const maxConcurrency = input.max_concurrency ?? 10;
  const sealedSecret = await opts.box.seal(newSecret(), sealContext(id));
  return await sql.begin(async (tx) => {
    await checkEndpointQuota(tx, companyId, opts.quota, { maxConcurrency });
    await refuseSecondAtUrl(tx, companyId, input.url);
    const [row] = await tx<EndpointRow[]>`
      insert into webhook_endpoints (
        id, company_id, url, enabled_events, delivery_mode, event_payload_type, inject_secret_in_body,
        wrap_in_notification, max_concurrency, event_mapping, sealed_secret
      ) values (
        ${id}, ${companyId}, ${input.url}, ${input.enabled_events ?? ["*"]}, ${input.delivery_mode ?? "parallel"},
        ${input.event_payload_type ?? "snapshot"}, ${input.inject_secret_in_body ?? false},
        ${input.wrap_in_notification ?? false}, ${maxConcurrency},
        ${input.event_mapping ? tx.json(input.event_mapping) : null}, ${sealedSecret}
      ) returning *`;
    await fitSlots(tx, [id]);
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
  opts: { allowPrivateUrls: boolean; quota: EndpointQuota },
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
  return await sql.begin(async (tx) => {
    if (input.max_concurrency != null) {
      await checkEndpointQuota(tx, companyId, opts.quota, { endpointId: id, maxConcurrency: input.max_concurrency });
    }
    if (input.url != null) {
      await tx`select 1 from companies where id = ${companyId} for update`;
      const [self] = await tx<{ status: string }[]>`
        select status from webhook_endpoints where company_id = ${companyId} and id = ${id}`;
      if (self?.status === "active") await refuseSecondAtUrl(tx, companyId, input.url, id);
    }
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
    await fitSlots(tx, [id]);
    return row;
  });
}

/**
 * The one way an endpoint becomes disabled, as the SET list of an update of `webhook_endpoints`: by hand (`manual`),
 * or by its attempts (`gone`, `failing`: domain/webhooks/delivery/record.ts). The first reason and instant are kept:
 * disabling a disabled endpoint again changes neither. Its failing clock stops.
 */
export function disabling(sql: Tx, reason: postgres.Fragment): postgres.Fragment {
  return sql`status = 'disabled', updated_at = now(), failing_since = null,
    disabled_reason = case when status = 'active' then ${reason} else disabled_reason end,
    disabled_at = case when status = 'active' then now() else disabled_at end`;
}

/** Soft delete: the endpoint gets nothing more, and what was still pending for it is marked failed. */
export async function disableEndpoint(sql: Sql, companyId: string, id: string): Promise<EndpointRow> {
  return await sql.begin(async (tx) => {
    const [row] = await tx<EndpointRow[]>`
      update webhook_endpoints set ${disabling(tx, tx`'manual'`)}
      where company_id = ${companyId} and id = ${id} returning *`;
    if (!row) throw notFound();
    await failPendingDeliveries(tx, companyId, [id]);
    await fitSlots(tx, [id]);
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
    await refuseSecondAtUrl(tx, companyId, current.url, id);
    const [row] = await tx<EndpointRow[]>`
      update webhook_endpoints
      set status = 'active', updated_at = now(), disabled_reason = null, disabled_at = null, failing_since = null
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

export async function failPendingDeliveries(tx: Tx, companyId: string, endpointIds: string[]) {
  if (endpointIds.length === 0) return;
  await tx`
    update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = now()
    where company_id = ${companyId} and endpoint_id = any(${endpointIds}::uuid[]) and status = 'pending'`;
}

/**
 * A new secret. The one it replaces keeps signing (as v0) and verifying for 24 hours, and so do the ones rotated
 * away before it, each until its own expiry (at most MAX_PREVIOUS_SECRETS, newest first).
 */
export async function rotateSecret(sql: Sql, box: SecretBox, companyId: string, id: string): Promise<EndpointRow> {
  const sealed = await box.seal(newSecret(), sealContext(id));
  // In an update, sealed_secret and sealed_previous_secrets on the right-hand side are the values before it.
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set
      sealed_previous_secrets = (
        select coalesce(jsonb_agg(p order by (p->>'expires_at')::timestamptz desc), '[]'::jsonb)
        from (
          select p from (
            select jsonb_build_object(
              'secret', sealed_secret,
              'expires_at', now() + make_interval(hours => ${PREVIOUS_SECRET_TTL_HOURS})
            ) as p
            union all
            select p from jsonb_array_elements(sealed_previous_secrets) p
          ) candidates
          where (p->>'expires_at')::timestamptz > now()
          order by (p->>'expires_at')::timestamptz desc
          limit ${MAX_PREVIOUS_SECRETS}
        ) kept
      ),
      sealed_secret = ${sealed},
      updated_at = now()
    where company_id = ${companyId} and id = ${id} returning *`;
  if (!row) throw notFound();
  return row;
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
  for (;;) {
    const rows = await sql<Pick<EndpointRow, "id" | "company_id" | "sealed_secret" | "sealed_previous_secrets">[]>`
      select id, company_id, sealed_secret, sealed_previous_secrets from webhook_endpoints e
      where id > ${after} and (
        not starts_with(sealed_secret, ${wanted})
        or exists (
          select 1 from jsonb_array_elements(e.sealed_previous_secrets) p where not starts_with(p->>'secret', ${wanted})
        )
      )
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const context = sealContext(row.id);
      const reseal = async (value: string) =>
        await box.seal(isSealed(value) ? await box.open(value, context) : value, context);
      const previous: StoredPreviousSecret[] = [];
      for (const p of row.sealed_previous_secrets) {
        if (new Date(p.expires_at).getTime() > Date.now()) {
          previous.push({ secret: await reseal(p.secret), expires_at: p.expires_at });
        }
      }
      const updated = await sql`
        update webhook_endpoints
        set sealed_secret = ${await reseal(row.sealed_secret)}, sealed_previous_secrets = ${sql.json(previous)}
        where company_id = ${row.company_id} and id = ${row.id}
          and sealed_secret = ${row.sealed_secret}
          and sealed_previous_secrets = ${sql.json(row.sealed_previous_secrets)}`;
      rewritten += updated.count;
    }
  }
}
