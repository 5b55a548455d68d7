/**
 * What an endpoint holds when its url names a message broker (docs/webhooks.md, "Destinations"): the URL's rules (the
 * address guard's, as for https, and the transport's path), the `destination` and `broker_credentials` beside it, the
 * credentials sealed at rest and shown masked, what an update does to them, and the pass that re-seals them. The
 * destinations' own rules are domain/webhooks/destinations/.
 */

import type { Sql } from "../../infra/db.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import { ErrorBag } from "../../basics/errors.ts";
import {
  brokerCredentialsOf,
  checkBrokerCredentials,
  checkDestination,
  transportForScheme,
} from "../destinations/registry.ts";
import type { BrokerCredentials, BrokerTarget, Destination, Transport } from "../destinations/transport.ts";
import { isIpLiteral, isLocalHostname, isNeverReachable, isPrivateAddress } from "./url_guard.ts";
import type { EndpointRow } from "./endpoint_row.ts";
import { MASK } from "./custom_headers.ts";

/** What a body may give of a broker endpoint: absent leaves a field on update, null removes it (credentials only). */
export type BrokerInput = {
  url?: string | null;
  destination?: unknown;
  broker_credentials?: unknown;
};

const sealContext = (endpointId: string) => `webhook_endpoints:${endpointId}:broker_credentials`;

/**
 * Where a broker URL points, or null with errors under `url` (never echoing its password): the transport's TLS scheme,
 * or its plaintext one only where http is allowed; no user or password in it (they go in `broker_credentials`); a
 * public host unless private URLs are allowed, and never a link-local or metadata one; the path as the transport reads
 * it; no query or fragment. Names are not resolved here: every (re)connect checks the resolved addresses.
 */
export function brokerTarget(errors: ErrorBag, url: URL, allowPrivateUrls: boolean): BrokerTarget | null {
  const transport = transportForScheme(url.protocol);
  if (!transport) return null;
  const before = Object.keys(errors.errors).length;
  const secure = url.protocol === `${transport.schemes.tls}:`;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (!host) errors.add("url", "must name the broker's host");
  if (url.username || url.password) {
    errors.add("url", "must not contain credentials: give them in broker_credentials, which are stored sealed");
  }
  if (url.search || url.hash) errors.add("url", "must not have a query or a fragment");
  if (host && isNeverReachable(host)) {
    errors.add("url", "must not point to a link-local or cloud metadata address (no setting allows it)");
  }
  if (!secure && !allowPrivateUrls) {
    errors.add(
      "url",
      `must use ${transport.schemes.tls}:// (${transport.schemes.plain}:// needs WEBHOOK_ALLOW_PRIVATE_URLS=true, ` +
        "never in production)",
    );
  } else if (!allowPrivateUrls && host && (isLocalHostname(host) || (isIpLiteral(host) && isPrivateAddress(host)))) {
    errors.add(
      "url",
      "must not point to a private, loopback or link-local address (those need WEBHOOK_ALLOW_PRIVATE_URLS=true, " +
        "never in production)",
    );
  }
  const path = transport.parsePath(errors, url.pathname);
  if (Object.keys(errors.errors).length > before) return null;
  return {
    transport: transport.name,
    secure,
    host,
    port: url.port ? Number(url.port) : transport.defaultPort(secure),
    path,
  };
}

/** The broker an endpoint's stored url names; null for an http endpoint. */
export function endpointTarget(e: Pick<EndpointRow, "url" | "transport">): BrokerTarget | null {
  if (!e.transport || e.transport === "http") return null;
  return brokerTarget(new ErrorBag(), new URL(e.url), true);
}

/** The transport of a broker URL, or null for any other. */
export function brokerTransportOf(raw: string): Transport | null {
  try {
    return transportForScheme(new URL(raw).protocol);
  } catch {
    return null;
  }
}

/**
 * The rules of `destination` and `broker_credentials` against the URL the endpoint will have (`url`, the stored one on
 * an update without it): both only beside a broker URL; `destination` required on create, and on an update that moves
 * to another broker URL it is checked as given or as stored. Adds errors; the URL's own are checkEndpointUrl's.
 */
export function checkBrokerSettings(
  errors: ErrorBag,
  input: BrokerInput,
  url: string,
  opts: { creating: boolean },
): void {
  const transport = brokerTransportOf(url);
  if (!transport) {
    if (input.destination != null) errors.add("destination", "is only for a broker url (amqps://, tls://, ...)");
    if (input.broker_credentials != null) {
      errors.add("broker_credentials", "is only for a broker url (amqps://, tls://, ...)");
    }
    return;
  }
  if (opts.creating || input.destination !== undefined) checkDestination(errors, transport, input.destination);
  if (isMaskedCredentials(input.broker_credentials)) return;
  checkBrokerCredentials(errors, transport, input.broker_credentials);
}

/** Credentials sent back as shown: kept as stored (`presentBrokerCredentials`). */
export function isMaskedCredentials(given: unknown): boolean {
  if (!given || typeof given !== "object") return false;
  const g = given as Record<string, unknown>;
  return g.token === MASK || g.password === MASK;
}

/** The destination to store, from a checked input. */
export function destinationColumn(url: string, destination: unknown): Destination | null {
  const transport = brokerTransportOf(url);
  return transport ? transport.storedDestination(destination as Record<string, unknown>) : null;
}

/**
 * The credentials column an update or a create writes: sealed JSON, or null. `stored` is the column as it is (null
 * on create); masked credentials keep the stored secret (with the user name given, when given).
 */
export async function brokerCredentialsColumn(
  box: SecretBox,
  endpointId: string,
  given: unknown,
  stored: string | null,
): Promise<string | null> {
  if (given === null || given === undefined) return null;
  const g = given as Record<string, unknown>;
  let plain: BrokerCredentials = brokerCredentialsOf(g);
  if (isMaskedCredentials(g)) {
    const kept = stored ? await openBrokerCredentials(box, endpointId, stored) : null;
    const errors = new ErrorBag();
    if (!kept || ("token" in g) !== ("token" in kept)) {
      errors.add(["broker_credentials", "token" in g ? "token" : "password"], "is a mask, and no such value is stored");
    }
    errors.throwIfAny(422);
    plain = kept && "username" in kept && typeof g.username === "string" && g.username
      ? { username: g.username, password: kept.password }
      : kept;
  }
  return await box.seal(JSON.stringify(plain), sealContext(endpointId));
}

/** The stored credentials opened; null without any. Throws as `SecretBox.open` does (a wrong key). */
export async function openBrokerCredentials(
  box: SecretBox,
  endpointId: string,
  sealed: string | null | undefined,
): Promise<BrokerCredentials> {
  if (!sealed) return null;
  return brokerCredentialsOf(JSON.parse(await box.open(sealed, sealContext(endpointId))));
}

/** The endpoint object's `broker_credentials`: the user name and a mask, or the token's mask; null without. */
export async function presentBrokerCredentials(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "sealed_broker_credentials">,
): Promise<{ username: string; password: string } | { token: string } | null> {
  const open = await openBrokerCredentials(box, e.id, e.sealed_broker_credentials);
  if (!open) return null;
  return "token" in open ? { token: MASK } : { username: open.username, password: MASK };
}

/**
 * An update that would keep stored broker credentials (absent, or sent back masked) while the url moves to another
 * broker (scheme, host, port or vhost/database): the credentials are never sent elsewhere (docs/webhooks.md, "Secrets
 * stay with their URL").
 */
export function brokerCredentialsLeftBehind(
  errors: ErrorBag,
  held: { url: string; credentials: boolean },
  input: BrokerInput,
  moved: string,
): void {
  if (!held.credentials || input.url == null || input.broker_credentials === null) return;
  if (brokerAddress(input.url) === brokerAddress(held.url)) return;
  if (input.broker_credentials === undefined || isMaskedCredentials(input.broker_credentials)) {
    errors.add("broker_credentials", moved);
  }
}

/** A broker URL's address as credentials are bound to it: scheme, host, port and path (vhost or database). */
function brokerAddress(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname}`.toLowerCase();
  } catch {
    return raw;
  }
}

/**
 * Re-seals every broker credential an older SECRET_ENCRYPTION_KEY sealed with the current one (`deno task
 * reseal-secrets`), as the client keys are (mtls.ts): a maintenance pass over every company; a value changed meanwhile
 * is not overwritten. Returns the number of endpoints rewritten.
 */
export async function resealBrokerCredentials(sql: Sql, box: SecretBox): Promise<number> {
  let rewritten = 0;
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const rows = await sql<{ id: string; company_id: string; sealed_broker_credentials: string }[]>`
      select id, company_id, sealed_broker_credentials from webhook_endpoints
      where id > ${after} and sealed_broker_credentials is not null
        and not starts_with(sealed_broker_credentials, ${box.currentPrefix})
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const context = sealContext(row.id);
      const resealed = await box.seal(await box.open(row.sealed_broker_credentials, context), context);
      const updated = await sql`
        update webhook_endpoints set sealed_broker_credentials = ${resealed}
        where company_id = ${row.company_id} and id = ${row.id}
          and sealed_broker_credentials = ${row.sealed_broker_credentials}`;
      rewritten += updated.count;
    }
  }
}
