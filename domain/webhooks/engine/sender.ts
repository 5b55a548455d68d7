/**
 * One delivery attempt over HTTP: render, sign, add the endpoint's OAuth2 bearer token when it has one, POST, and
 * clear the answer of the secrets it was sent (`sendDelivery`), and the POST itself (`sendWebhook`), which never
 * throws and connects only to the addresses the URL guard checked (docs/webhooks.md, "Where requests go"); the token
 * request is such a POST too.
 */

import { raceAbort } from "../../basics/abort.ts";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { SecretBox } from "../../infra/secret_box.ts";
import { renderBody } from "./body.ts";
import { honoursRetryAfter } from "../endpoints/decisions.ts";
import type { ConnectionPool } from "./connections.ts";
import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import { openSecrets, openSigningKeys } from "../endpoints/credentials.ts";
import { headersToSend } from "../endpoints/custom_headers.ts";
import { type ClientCredential, openClientCredential } from "../endpoints/mtls.ts";
import { signPayload, standardWebhookHeaders } from "../endpoints/signature.ts";
import {
  BlockedDestination,
  checkedAddresses,
  isIpLiteral,
  type Resolver,
  systemResolver,
} from "../endpoints/url_guard.ts";
import { tracedAttempt } from "./attempt_trace.ts";
import { credentialKey, processTokens, readTokenAnswer, type TokenCache, tokenRequest } from "./oauth2_tokens.ts";
import { redactSecrets, type Secret } from "./redaction.ts";
import { openClientSecret } from "../endpoints/oauth2.ts";
import type { StoredOAuth2 } from "../endpoints/endpoint_row.ts";

/** Names the service to receivers (and in their logs). */
export const USER_AGENT = "payments-api-webhooks/1.0";
/** What is kept of a receiver's answer. */
export const MAX_RESPONSE_BYTES = 16 * 1024;

/** One attempt as the receiver answered it: what is recorded, and what decides the record's next state. */
export type SendResult = {
  ok: boolean;
  httpStatus: number;
  responseBody: string;
  durationMs: number;
  /** The answer's headers worth keeping (`keptHeaders`); empty without an answer. */
  responseHeaders?: Record<string, string>;
  /** A 429 or 503 answer's Retry-After, in seconds from the answer (at most a day); null otherwise. */
  retryAfterSeconds?: number | null;
  /** A broker's permanent refusal (docs/webhooks.md, "Destinations"): disables the endpoint as a 410 does. */
  permanent?: boolean;
};

/** A delivery as it is sent: its body and the headers that sign it, and the secrets an answer is cleared of. */
export type SignedDelivery = { body: string; headers: Record<string, string>; echoed: Secret[] };

/** What `sendDelivery` and a broker's publish (publisher.ts) deliver: one record of one event. */
export type DeliveryToSend = {
  id: string;
  type: string;
  data: Record<string, unknown>;
  traceparent?: string | null;
  occurredAt?: Date | null;
};

/** Headers of an answer that help to understand it; never cookies or credentials. */
const KEPT_HEADERS = new Set([
  "content-type",
  "content-length",
  "retry-after",
  "server",
  "date",
  "location",
  "x-request-id",
  "request-id",
  "x-correlation-id",
  "cf-ray",
  "x-amzn-requestid",
  "x-amz-cf-id",
]);
/** Header values are cut to this many characters. */
const MAX_HEADER_CHARS = 256;

/** The headers of an answer that are recorded with the attempt. */
export function keptHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (!KEPT_HEADERS.has(key) || value === undefined) continue;
    kept[key] = (Array.isArray(value) ? value.join(", ") : value).replaceAll("\u0000", "").slice(0, MAX_HEADER_CHARS);
  }
  return kept;
}

/** The longest postponement a Retry-After can ask for. */
export const MAX_RETRY_AFTER_SECONDS = 24 * 60 * 60;

/**
 * Seconds to wait according to a Retry-After value, in either of its forms (delay-seconds or an HTTP date), capped
 * at a day; null when it is absent or malformed. A date in the past is 0.
 */
export function retryAfterSeconds(value: string | undefined | null, nowMs = Date.now()): number | null {
  if (!value) return null;
  const text = value.trim();
  let seconds: number;
  if (/^\d+$/.test(text)) seconds = Number(text);
  else {
    // an HTTP date names its day of the week and GMT; Date.parse alone would also take "5" or "2026"
    if (!/^[A-Za-z]{3},? /.test(text)) return null;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    seconds = Math.max(0, Math.ceil((at - nowMs) / 1000));
  }
  return Math.min(seconds, MAX_RETRY_AFTER_SECONDS);
}

export type SendOptions = {
  timeoutMs: number;
  /** Development and tests: http and private or loopback receivers. */
  allowPrivateUrls: boolean;
  signal?: AbortSignal;
  /** Name resolution, done once per attempt; the operating system's unless a test swaps it. */
  resolve?: Resolver;
  /** Certificate authorities (PEM) trusted instead of the default ones: tests with their own TLS receivers. */
  ca?: string[];
  /** Keep-alive connections to reuse (docs/webhooks.md, "Connections"); without it each attempt opens its own. */
  connections?: ConnectionPool;
  /** The endpoint's client certificate, presented to an https receiver (docs/webhooks.md, "Client certificates (mTLS)"). */
  client?: ClientCredential | null;
  /** OAuth2 bearer tokens to reuse (docs/webhooks.md, "OAuth2 client credentials"); the process's own without it. */
  tokens?: TokenCache;
};

/**
 * Renders one delivery for its endpoint, signs it with the endpoint's current and previous secrets under both
 * schemes (`service-signature` and the Standard Webhooks headers, with one timestamp) and POSTs it. Ed25519 keys
 * (an ed25519 endpoint's, or those still signing after a switch) add `v1a` signatures to `webhook-signature`;
 * `service-signature` is sent only while an HMAC secret signs, which an ed25519 endpoint has only in the 24 hours
 * after a switch from hmac-sha256 (docs/webhooks.md, "Ed25519 signatures").
 * Only a secret that does not open (a wrong SECRET_ENCRYPTION_KEY) throws: the drain run fails and the delivery stays
 * pending until the key is fixed (docs/production.md).
 */
export async function sendDelivery(
  box: SecretBox,
  endpoint: EndpointRow,
  delivery: DeliveryToSend,
  opts: SendOptions,
): Promise<SendResult> {
  // each control is opened only for an endpoint that has it, as OAuth2 is below
  const client = endpoint.client_certificate ? await openClientCredential(box, endpoint) : null;
  return await postSigned(box, endpoint, delivery, await signedDelivery(box, endpoint, delivery, client), client, opts);
}

/**
 * A batch's request (docs/webhooks.md, "Batches"): the bodies of its records as `sendDelivery` renders them one by
 * one, in one JSON array (`batchBody`, batches.ts), signed once under both schemes with the batch's id as
 * `webhook-id`, and `webhook-batch-size` saying how many it carries. The same POST, OAuth2 token, client certificate,
 * custom headers and answer clearing as a single delivery.
 */
export async function sendBatch(
  box: SecretBox,
  endpoint: EndpointRow,
  batch: { id: string; body: string; size: number; first: DeliveryToSend },
  opts: SendOptions,
): Promise<SendResult> {
  const client = endpoint.client_certificate ? await openClientCredential(box, endpoint) : null;
  const { secret, previous } = await openSecrets(box, endpoint);
  const signed = await signedBody(box, endpoint, batch.id, batch.body, secret, previous, client);
  signed.headers["webhook-batch-size"] = String(batch.size);
  return await postSigned(box, endpoint, { ...batch.first, id: batch.id }, signed, client, opts);
}

/** The POST of a signed body, with the endpoint's bearer token when it has OAuth2, in a span of its own. */
async function postSigned(
  box: SecretBox,
  endpoint: EndpointRow,
  delivery: DeliveryToSend,
  signed: SignedDelivery,
  client: ClientCredential | null,
  opts: SendOptions,
): Promise<SendResult> {
  const { body, headers } = signed;
  // a span of its own, continuing the trace of the request that emitted the event (docs/webhooks.md, "Tracing")
  // the client certificate goes to the receiver only, never to the token URL (docs/webhooks.md, mTLS and OAuth2)
  const toReceiver = client ? { ...opts, client } : opts;
  return await tracedAttempt(endpoint, delivery, async (trace) => {
    if (!endpoint.oauth2) {
      return cleared(await sendWebhook(endpoint.url, body, { ...headers, ...trace }, toReceiver), signed.echoed);
    }
    return cleared(
      await withBearer(
        box,
        endpoint,
        endpoint.oauth2,
        opts,
        (bearer) =>
          sendWebhook(endpoint.url, body, { ...headers, ...trace, authorization: `Bearer ${bearer}` }, toReceiver),
      ),
      signed.echoed,
    );
  });
}

/**
 * A delivery rendered and signed for its endpoint, whatever carries it (an HTTP POST, or a broker's message:
 * publisher.ts): the body, and the endpoint's custom headers with the signature headers after them, none of whose
 * names a custom header may take (docs/webhooks.md, "Custom headers").
 */
export async function signedDelivery(
  box: SecretBox,
  endpoint: EndpointRow,
  delivery: DeliveryToSend,
  client: ClientCredential | null = null,
): Promise<SignedDelivery> {
  const { secret, previous } = await openSecrets(box, endpoint);
  // an ed25519 endpoint cannot inject a secret (checkSchemeSettings): its body never reads this one
  const body = renderBody({ ...endpoint, secret: secret ?? "" }, delivery);
  return await signedBody(box, endpoint, delivery.id, body, secret, previous, client);
}

/** A body signed for its endpoint under `id` (a record's, or a batch's), with the custom headers before the signatures. */
async function signedBody(
  box: SecretBox,
  endpoint: EndpointRow,
  id: string,
  body: string,
  secret: string | null,
  previous: { secret: string }[],
  client: ClientCredential | null,
): Promise<SignedDelivery> {
  const signingKeys = await openSigningKeys(box, endpoint);
  const secrets = [...(secret === null ? [] : [secret]), ...previous.map((p) => p.secret)];
  const timestamp = Math.floor(Date.now() / 1000);
  const standard = standardWebhookHeaders(id, timestamp, body, secrets, {
    signingKeys,
    asymmetricFirst: endpoint.signature_scheme === "ed25519",
  });
  const headers: Record<string, string> = secrets.length
    ? {
      "service-signature": signPayload(body, secrets[0], { previousSecrets: secrets.slice(1), timestamp }),
      ...standard,
    }
    : standard;
  const opened = hasCustomHeaders(endpoint) ? await headersToSend(box, endpoint) : null;
  return {
    body,
    headers: { ...opened?.headers ?? {}, ...headers },
    echoed: secretsAtHand(opened?.secret ?? {}, client),
  };
}

/**
 * The secrets an attempt opened that the receiver's answer is cleared of (docs/webhooks.md, "Secrets never echoed"):
 * the secret headers it sends, and the client certificate's key. The OAuth2 client secret never goes to the receiver;
 * the token server's answer is cleared of it where it is read (oauth2_tokens.ts).
 */
function secretsAtHand(secretHeaders: Record<string, string>, client: ClientCredential | null): Secret[] {
  const secrets: Secret[] = Object.entries(secretHeaders).map(([name, value]) => ({
    value,
    label: `[secret header ${name}]`,
  }));
  if (client) secrets.push({ value: client.key, label: "[client certificate key]" });
  return secrets;
}

/**
 * The answer as it is recorded, logged and shown: its text and kept headers without `secrets` in any encoding
 * (redaction.ts). An endpoint without secrets keeps its answer as it came, at no cost.
 */
export function cleared(result: SendResult, secrets: Secret[]): SendResult {
  if (secrets.length === 0) return result;
  const headers = Object.entries(result.responseHeaders ?? {}).map(([name, value]) => [
    name,
    redactSecrets(value, secrets),
  ]);
  return {
    ...result,
    responseBody: redactSecrets(result.responseBody, secrets),
    responseHeaders: Object.fromEntries(headers),
  };
}

/**
 * Sends with the endpoint's OAuth2 bearer token (docs/webhooks.md, "OAuth2 client credentials"): the cached one, or
 * one asked for now at the token URL, through `sendWebhook` and so through the URL guard, the timeout and the answer
 * size bound of a delivery. No token is a failed attempt whose reason starts with `oauth2 token:`, and nothing is
 * sent to the receiver. A 401 from the receiver drops the token and stays a failed attempt: the retry schedule sends
 * again, with a new token, rather than this attempt sending twice.
 */
async function withBearer(
  box: SecretBox,
  endpoint: Pick<EndpointRow, "id" | "url">,
  credentials: StoredOAuth2,
  opts: SendOptions,
  send: (bearer: string) => Promise<SendResult>,
): Promise<SendResult> {
  const tokens = opts.tokens ?? processTokens;
  // the token is kept for the endpoint's origin too: one fetched for another origin never goes to this one
  const key = credentialKey(endpoint.id, endpoint.url, credentials);
  const started = performance.now();
  const outcome = await tokens.bearer(key, async () => {
    const clientSecret = await openClientSecret(box, endpoint.id, credentials);
    const request = tokenRequest(credentials, clientSecret);
    const sentAt = Date.now();
    const answer = await sendWebhook(credentials.token_url, request.body, request.headers, opts);
    return readTokenAnswer(answer, request.secret, sentAt);
  });
  if ("failure" in outcome) {
    return {
      ok: false,
      httpStatus: 0,
      responseBody: outcome.failure,
      durationMs: performance.now() - started,
      responseHeaders: {},
      retryAfterSeconds: null,
    };
  }
  const result = await send(outcome.token);
  if (result.httpStatus === 401) tokens.drop(key, outcome.token);
  return result;
}

/**
 * One POST attempt. Never throws: a refusal, a network error or a timeout is a failed attempt with status 0 and
 * the error as its text, which never names an address. Redirects are not followed (a 3xx is a failed attempt), and
 * unless private URLs are allowed the destination must be https and resolve only to public addresses.
 *
 * The host name is resolved once, the addresses checked, and the connection opened to one of those addresses only
 * (the request's `lookup` answers with them), so a second DNS answer can never redirect it; TLS still uses the host
 * name for SNI and to verify the certificate. With `opts.connections` the connection is kept for the next attempt
 * to the same host and checked addresses (a receiver that closes it meanwhile fails that attempt, which is never
 * sent twice); without it, each attempt has a connection of its own, closed after the answer.
 * The timeout covers name resolution, the request and reading the first 16 KiB of the answer.
 */
export async function sendWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  const result = (httpStatus: number, responseBody: string, answerHeaders: Answer["headers"] = {}): SendResult => ({
    ok: httpStatus >= 200 && httpStatus < 300,
    httpStatus,
    responseBody,
    durationMs: performance.now() - started,
    responseHeaders: keptHeaders(answerHeaders),
    retryAfterSeconds: honoursRetryAfter(httpStatus)
      ? retryAfterSeconds(firstValue(answerHeaders["retry-after"]))
      : null,
  });
  try {
    const target = new URL(url);
    if (target.protocol !== "https:" && (target.protocol !== "http:" || !opts.allowPrivateUrls)) {
      // the setting is named so that whoever reads the attempt log knows what would change it (docs/webhooks.md)
      return result(
        0,
        "refused: only https URLs are delivered (WEBHOOK_ALLOW_PRIVATE_URLS=true allows http, never in production)",
      );
    }
    const addresses = await raceAbort(
      checkedAddresses(target, { resolve: opts.resolve ?? systemResolver, allowPrivate: opts.allowPrivateUrls }),
      signal,
    );
    const answer = await post(target, addresses, body, {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      ...headers,
    }, { signal, ca: opts.ca, connections: opts.connections, client: opts.client });
    return result(answer.status, decodePrefix(answer.bytes, answer.truncated), answer.headers);
  } catch (err) {
    if (err instanceof BlockedDestination) return result(0, err.message);
    if (timeout.aborted) return result(0, `timeout after ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) return result(0, "aborted: the worker is shutting down");
    return result(0, describeFailure(err));
  }
}

type Answer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Uint8Array;
  truncated: boolean;
};

const firstValue = (value: string | string[] | undefined) => Array.isArray(value) ? value[0] : value;

/**
 * POSTs to one of `addresses`, over a pooled connection or a fresh one, and reads the status and the first 16 KiB of
 * the answer. A connection is closed unless the answer was read to its end and the pool keeps it.
 */
function post(
  target: URL,
  addresses: string[],
  body: string,
  headers: Record<string, string>,
  opts: { signal: AbortSignal; ca?: string[]; connections?: ConnectionPool; client?: ClientCredential | null },
): Promise<Answer> {
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const pinned: LookupFunction = (_name, options, callback) => {
    const all = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    if ((options as { all?: boolean }).all) (callback as (e: null, a: typeof all) => void)(null, all);
    else callback(null, all[0].address, all[0].family);
  };
  const bytes = new TextEncoder().encode(body);
  const secure = target.protocol === "https:";
  const port = target.port ? Number(target.port) : secure ? 443 : 80;
  const pool = opts.connections;
  const client = secure ? opts.client ?? null : null;
  const agent = pool ? pool.agentFor({ secure, host, port, addresses, ca: opts.ca, client }) : false;
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void, keep = false) => {
      if (settled) return;
      settled = true;
      opts.signal.removeEventListener("abort", onAbort);
      if (!keep || !pool) request.destroy();
      outcome();
    };
    const onAbort = () => settle(() => reject(opts.signal.reason));
    const request = (secure ? https : http).request({
      host,
      port,
      path: `${target.pathname}${target.search}`,
      method: "POST",
      headers: { ...headers, "content-length": String(bytes.length), ...(pool ? {} : { connection: "close" }) },
      // without a pool this connection is used for this request only
      agent,
      lookup: pinned,
      // the certificate must name the host (an IP literal is matched as an IP address)
      ...(secure ? { servername: isIpLiteral(host) ? undefined : host, ca: opts.ca, rejectUnauthorized: true } : {}),
      // the endpoint's client certificate, for a receiver that asks for one (mTLS); the pooled agent has it too
      ...(client ? { cert: client.cert, key: client.key } : {}),
    }, (response) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      // The status and headers arrived: a body cut short (a reset, a close) still counts as the receiver's answer.
      const answered = (truncated: boolean, complete = false) =>
        settle(() =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            bytes: concat(chunks, MAX_RESPONSE_BYTES),
            truncated,
          }), complete);
      response.on("data", (chunk: Uint8Array) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) answered(true);
      });
      // read to its end: the connection may carry the next attempt
      response.on("end", () => answered(false, true));
      response.on("close", () => answered(false));
      response.on("error", () => answered(false));
    });
    // Deno's node:http sends a request again, unasked, when a kept connection turns out closed (its
    // maybeRetryRequest, skipped for a request marked as a retry already): a POST the receiver may have read must
    // fail this attempt instead, to be recorded and retried on the schedule (docs/webhooks.md, "Connections").
    // tests/webhooks/connections_test.ts fails if a Deno upgrade sends it twice again.
    if (pool) (request as unknown as { _retrying: boolean })._retrying = true;
    request.on("error", (err) => settle(() => reject(err)));
    if (opts.signal.aborted) return onAbort();
    opts.signal.addEventListener("abort", onAbort, { once: true });
    request.end(bytes);
  });
}

function concat(chunks: Uint8Array[], limit: number): Uint8Array {
  const size = Math.min(limit, chunks.reduce((n, c) => n + c.length, 0));
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    if (at >= size) break;
    const part = chunk.subarray(0, size - at);
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The answer as text. A cut in the middle of a UTF-8 sequence decodes to U+FFFD: drop it. Postgres text cannot hold NUL. */
function decodePrefix(bytes: Uint8Array, truncated: boolean): string {
  const text = new TextDecoder().decode(bytes).replaceAll("\u0000", "");
  return truncated ? text.replace(/\uFFFD$/, "") : text;
}

/** Network and TLS errors by kind: their own messages may hold the address that was connected to. */
const FAILURES: [RegExp, string][] = [
  [/^ECONNREFUSED$/, "connection refused"],
  [/^(ECONNRESET|EPIPE)$/, "connection reset"],
  [/^(EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL)$/, "host unreachable"],
  [/^ETIMEDOUT$/, "connection timed out"],
  // an alert is the receiver's verdict on our side of the handshake: the client certificate (docs/webhooks.md,
  // "Client certificates (mTLS)"); listed first, since its codes also read CERTIFICATE or EXPIRED
  [/_ALERT_CERTIFICATE_REQUIRED$/, "TLS: the receiver requires a client certificate"],
  [
    /_ALERT_(BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_\w+|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED)$/,
    "TLS: the receiver refused the client certificate",
  ],
  [/ALTNAME|HOSTNAME/i, "TLS: the certificate does not match the host name"],
  [/EXPIRED/i, "TLS: the certificate has expired"],
  [/CERT|VERIFY|SIGNATURE|ISSUER/i, "TLS: the certificate is not trusted"],
  [/SSL|TLS/i, "TLS handshake failed"],
  [/^HPE_/, "the answer is not valid HTTP"],
];

/** What went wrong, with the error code so that an operator can look it up: "connection refused (ECONNREFUSED)". */
export function describeFailure(err: unknown): string {
  const raw = (err as { code?: unknown })?.code;
  // codes are short upper-case names; anything else is not shown, since a message could name an address
  const code = typeof raw === "string" && /^[A-Z0-9_]{2,64}$/.test(raw) ? raw : "";
  const text = FAILURES.find(([pattern]) => pattern.test(code))?.[1] ?? "connection failed";
  return code ? `${text} (${code})` : text;
}

/** Whether the endpoint has custom headers, plain or secret (both `{}` without: sql/0040). */
const hasCustomHeaders = (e: Pick<EndpointRow, "custom_headers" | "sealed_custom_headers">) =>
  Object.keys(e.custom_headers ?? {}).length > 0 || Object.keys(e.sealed_custom_headers ?? {}).length > 0;
