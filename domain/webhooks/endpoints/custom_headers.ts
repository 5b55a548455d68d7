/**
 * An endpoint's custom headers (docs/webhooks.md, "Custom headers"): the names and values it may carry, the secret
 * ones sealed at rest and shown masked, what an update does to them, the headers an attempt sends, and the pass that
 * re-seals them after SECRET_ENCRYPTION_KEY was rotated. A file of its own: the endpoint operations, the sender and
 * the re-seal command all use it, and none of its rules touch the signing credentials (credentials.ts).
 */

import type postgres from "postgres";
import type { Sql, SqlOrTransaction } from "../../infra/db.ts";
import { ErrorBag, notFound } from "../../basics/errors.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import type { EndpointRow } from "./endpoint_row.ts";

/** Headers per endpoint, plain and secret together: each is sent with every attempt. */
export const MAX_CUSTOM_HEADERS = 20;
/** Longest header name. */
export const MAX_HEADER_NAME_CHARS = 64;
/** Longest header value. */
export const MAX_HEADER_VALUE_CHARS = 1024;
/** Names and values of all of an endpoint's headers together, well under what servers accept in a request head. */
export const MAX_CUSTOM_HEADERS_CHARS = 8 * 1024;
/** What a secret value is shown as, before its last characters (`maskSecret`). */
export const MASK = "****";
/** A secret shorter than this is shown as the mask alone: its last 4 characters would give away too much. */
const MIN_CHARS_TO_SHOW_END = 16;

/** RFC 9110's token: the characters a header name may have. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A value of visible ASCII, spaces and tabs inside: no CR, LF or NUL can split the request head. */
const VALUE = /^[\x21-\x7e]([\t\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Names the service sets itself, or that would change how the request travels: the signatures and their ids, the
 * body's type and length, the host, the credentials a receiver checks, the trace, and the hop-by-hop headers.
 */
const RESERVED = new Set([
  "service-signature",
  "content-type",
  "content-length",
  "content-encoding",
  "host",
  "authorization",
  "traceparent",
  "tracestate",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);
const RESERVED_PREFIXES = ["webhook-", "proxy-"];

/** Why a header name cannot be set, or null when it can. */
export function refusedHeaderName(name: string): string | null {
  if (name.length > MAX_HEADER_NAME_CHARS) return `is too long (maximum is ${MAX_HEADER_NAME_CHARS} characters)`;
  if (!TOKEN.test(name)) return "is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)";
  const lower = name.toLowerCase();
  const prefix = RESERVED_PREFIXES.find((p) => lower.startsWith(p));
  if (prefix) return `cannot be set: ${prefix}* headers are the service's own or hop-by-hop`;
  if (RESERVED.has(lower)) return "cannot be set: the service sets it, or it is hop-by-hop";
  return null;
}

/** The custom-header fields of an endpoint's create or update body; absent leaves them, null removes them all. */
export type CustomHeadersInput = {
  headers?: Record<string, string> | null;
  secret_headers?: Record<string, string> | null;
};

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The names and values of one map that break a rule of their own, each under its field and name. */
function checkMap(errors: ErrorBag, field: "headers" | "secret_headers", map: Record<string, unknown>) {
  for (const [name, value] of Object.entries(map)) {
    const refused = refusedHeaderName(name);
    if (refused) errors.add([field, name], refused);
    else if (typeof value !== "string") errors.add([field, name], "is invalid: must be a string");
    else if (value.length > MAX_HEADER_VALUE_CHARS) {
      errors.add([field, name], `is too long (maximum is ${MAX_HEADER_VALUE_CHARS} characters)`);
    } else if (!VALUE.test(value)) {
      errors.add(
        [field, name],
        "must be visible ASCII characters, with spaces or tabs only between them (no line breaks)",
      );
    }
  }
}

/** The rules that span both maps as the endpoint would have them: one name once, the count and the size. */
function checkTogether(errors: ErrorBag, headers: Record<string, unknown>, secret: Record<string, unknown>) {
  const seen = new Map<string, string>();
  for (const [field, map] of [["headers", headers], ["secret_headers", secret]] as const) {
    for (const name of Object.keys(map)) {
      const other = seen.get(name.toLowerCase());
      if (other !== undefined) errors.add([field, name], `is given twice (as ${other}): names ignore case`);
      else seen.set(name.toLowerCase(), `${field}.${name}`);
    }
  }
  if (seen.size > MAX_CUSTOM_HEADERS) {
    errors.add("headers", `has too many items (maximum is ${MAX_CUSTOM_HEADERS}, headers and secret_headers together)`);
  }
  const chars = [...Object.entries(headers), ...Object.entries(secret)]
    .reduce((n, [name, value]) => n + name.length + (typeof value === "string" ? value.length : 0), 0);
  if (chars > MAX_CUSTOM_HEADERS_CHARS) {
    errors.add(
      "headers",
      `are too long together (maximum is ${MAX_CUSTOM_HEADERS_CHARS} characters of names and values, ` +
        "headers and secret_headers together)",
    );
  }
}

/**
 * The rules a body's custom headers can be checked against alone (names, values, and, for the maps it carries, the
 * spanning ones). An update giving one map is checked against the other as stored by `customHeadersSet`.
 */
export function checkCustomHeaders(errors: ErrorBag, input: { headers?: unknown; secret_headers?: unknown }) {
  const headers = isMap(input.headers) ? input.headers : {};
  const secret = isMap(input.secret_headers) ? input.secret_headers : {};
  checkMap(errors, "headers", headers);
  checkMap(errors, "secret_headers", secret);
  checkTogether(errors, headers, secret);
}

/** The seal context of one secret header: its endpoint and name, so a sealed value opens nowhere else. */
const sealContext = (endpointId: string, name: string) =>
  `webhook_endpoints:${endpointId}:header:${name.toLowerCase()}`;

/** A secret as the API shows it after create: the mask, then its last 4 characters when it is long enough. */
export function maskSecret(value: string): string {
  return value.length >= MIN_CHARS_TO_SHOW_END ? `${MASK}${value.slice(-4)}` : MASK;
}

/** The secret headers opened, names as stored. Throws as `SecretBox.open` does (a wrong key). */
async function openSecretHeaders(box: SecretBox, e: Pick<EndpointRow, "id" | "sealed_custom_headers">) {
  const entries = Object.entries(e.sealed_custom_headers ?? {});
  return Object.fromEntries(
    await Promise.all(entries.map(async ([name, sealed]) => [name, await box.open(sealed, sealContext(e.id, name))])),
  ) as Record<string, string>;
}

/** The endpoint object's fields: plain headers as they are, secret ones masked (`maskSecret`). */
export async function presentCustomHeaders(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "custom_headers" | "sealed_custom_headers">,
) {
  const secret = await openSecretHeaders(box, e);
  return {
    headers: e.custom_headers ?? {},
    secret_headers: Object.fromEntries(Object.entries(secret).map(([name, value]) => [name, maskSecret(value)])),
  };
}

/**
 * Every custom header an attempt sends, secrets opened (`headers`), and the secret ones alone (`secret`): what the
 * answers to the attempt are cleared of (docs/webhooks.md, "Secrets never echoed").
 */
export async function headersToSend(
  box: SecretBox,
  e: Pick<EndpointRow, "id" | "custom_headers" | "sealed_custom_headers">,
): Promise<{ headers: Record<string, string>; secret: Record<string, string> }> {
  const secret = await openSecretHeaders(box, e);
  return { headers: { ...(e.custom_headers ?? {}), ...secret }, secret };
}

/**
 * The stored sealed value that a given one keeps, if any: the stored value of the same name when the given value is
 * what the API shows of it (its masked form, `maskSecret`), so an endpoint object read and sent back as it is changes
 * no secret (docs/webhooks.md, "Custom headers").
 */
async function keptByMask(
  box: SecretBox,
  endpointId: string,
  name: string,
  value: string,
  storedByName: Map<string, string>,
): Promise<string | undefined> {
  const kept = storedByName.get(name.toLowerCase());
  if (kept === undefined || !value.startsWith(MASK)) return undefined;
  return maskSecret(await box.open(kept, sealContext(endpointId, name))) === value ? kept : undefined;
}

const byName = (stored: Record<string, string>) =>
  new Map(Object.entries(stored).map(([name, sealed]) => [name.toLowerCase(), sealed]));

/** The secret headers of a body, sealed for the endpoint; a value sent back masked keeps the stored one (`keptByMask`). */
async function sealSecretHeaders(
  box: SecretBox,
  endpointId: string,
  given: Record<string, string>,
  stored: Record<string, string> = {},
): Promise<Record<string, string>> {
  const storedByName = byName(stored);
  const sealed: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    sealed[name] = await keptByMask(box, endpointId, name, value, storedByName) ??
      await box.seal(value, sealContext(endpointId, name));
  }
  return sealed;
}

/**
 * The names of a body's secret headers sent back masked, which would keep their stored values: a URL moving to another
 * origin takes none of them along (domain/webhooks/endpoints/bound_secrets.ts).
 */
export async function maskedKept(
  box: SecretBox,
  endpointId: string,
  given: Record<string, string>,
  stored: Record<string, string> = {},
): Promise<string[]> {
  const storedByName = byName(stored);
  const names: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    if (await keptByMask(box, endpointId, name, value, storedByName) !== undefined) names.push(name);
  }
  return names;
}

/** The columns of a new endpoint's custom headers (`checkCustomHeaders` has passed). */
export async function newCustomHeaders(box: SecretBox, endpointId: string, input: CustomHeadersInput) {
  return {
    custom_headers: input.headers ?? {},
    sealed_custom_headers: await sealSecretHeaders(box, endpointId, input.secret_headers ?? {}),
  };
}

/**
 * What an update does to the custom headers: nothing (an empty fragment, wrapped, as a fragment is a thenable)
 * unless the body gives `headers` or `secret_headers`; a map given replaces the stored one, null empties it. The
 * maps the endpoint would have are checked together under the row's lock: a name in both, too many, too long.
 */
export async function customHeadersSet(
  tx: SqlOrTransaction,
  box: SecretBox,
  companyId: string,
  id: string,
  input: CustomHeadersInput,
): Promise<{ set: postgres.Fragment }> {
  if (input.headers === undefined && input.secret_headers === undefined) return { set: tx`` };
  const [current] = await tx<Pick<EndpointRow, "custom_headers" | "sealed_custom_headers">[]>`
    select custom_headers, sealed_custom_headers from webhook_endpoints
    where company_id = ${companyId} and id = ${id} for no key update`;
  if (!current) throw notFound();
  const headers = input.headers === undefined ? current.custom_headers ?? {} : input.headers ?? {};
  const sealed = input.secret_headers === undefined
    ? current.sealed_custom_headers ?? {}
    : await sealSecretHeaders(box, id, input.secret_headers ?? {}, current.sealed_custom_headers);
  const errors = new ErrorBag();
  // the stored secrets' lengths count as they are when opened: a sealed value is longer than its secret
  const secretValues = await openSecretHeaders(box, { id, sealed_custom_headers: sealed });
  checkTogether(errors, headers, secretValues);
  errors.throwIfAny(422);
  return { set: tx`, custom_headers = ${tx.json(headers)}, sealed_custom_headers = ${tx.json(sealed)}` };
}

/**
 * Re-seals with the current key every secret header another key sealed, so that SECRET_ENCRYPTION_KEY_PREVIOUS can
 * be removed (docs/production.md). A maintenance pass over every company, hence no company filter; a row changed
 * meanwhile is left as it is (it was written with the current key). Returns the number of endpoints rewritten.
 */
export async function resealCustomHeaders(sql: Sql, box: SecretBox): Promise<number> {
  let rewritten = 0;
  let after = "00000000-0000-0000-0000-000000000000";
  for (;;) {
    const rows = await sql<Pick<EndpointRow, "id" | "company_id" | "sealed_custom_headers">[]>`
      select id, company_id, sealed_custom_headers from webhook_endpoints e
      where id > ${after} and exists (
        select 1 from jsonb_each_text(e.sealed_custom_headers) h where not starts_with(h.value, ${box.currentPrefix})
      )
      order by id limit 200`;
    if (rows.length === 0) return rewritten;
    after = rows[rows.length - 1].id;
    for (const row of rows) {
      const opened = await openSecretHeaders(box, row);
      const resealed: Record<string, string> = {};
      for (const [name, value] of Object.entries(opened)) {
        resealed[name] = await box.seal(value, sealContext(row.id, name));
      }
      const updated = await sql`
        update webhook_endpoints set sealed_custom_headers = ${sql.json(resealed)}
        where company_id = ${row.company_id} and id = ${row.id}
          and sealed_custom_headers = ${sql.json(row.sealed_custom_headers ?? {})}`;
      rewritten += updated.count;
    }
  }
}
