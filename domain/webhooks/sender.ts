import { renderBody } from "./body.ts";
import { type EndpointRow, validPreviousSecret } from "./endpoints.ts";
import { signPayload } from "./signature.ts";
import { assertPublicDestination, BlockedDestination } from "./url_guard.ts";

/** Names the service to receivers (and in their logs). */
export const USER_AGENT = "payments-api-webhooks/1.0";
/** What is kept of a receiver's answer. */
export const MAX_RESPONSE_BYTES = 16 * 1024;

/** One attempt as the receiver answered it: what is recorded, and what decides the record's next state. */
export type SendResult = { ok: boolean; httpStatus: number; responseBody: string; durationMs: number };

type SendOptions = { timeoutMs: number; allowPrivateUrls: boolean; signal?: AbortSignal };

let client: Deno.HttpClient | null = null;

/**
 * No connection reuse: a pooled keep-alive connection that the receiver resets makes fetch send the POST again on
 * its own, so the receiver would see two arrivals for one recorded attempt.
 */
function httpClient(): Deno.HttpClient {
  return client ??= Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
}

/**
 * One POST attempt. Never throws: a refusal, a network error or a timeout is a failed attempt with status 0 and
 * the error as its text. Redirects are not followed (a 3xx is a failed attempt), and unless private URLs are
 * allowed the destination must be https and resolve only to public addresses. The timeout covers name
 * resolution, the request and reading the first 16 KiB of the answer.
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
  const failed = (message: string): SendResult => ({
    ok: false,
    httpStatus: 0,
    responseBody: message,
    durationMs: performance.now() - started,
  });
  try {
    const target = new URL(url);
    if (!opts.allowPrivateUrls) {
      if (target.protocol !== "https:") return failed("refused: only https URLs are delivered");
      await raceAbort(assertPublicDestination(target), signal);
    }
    const res = await fetch(target, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "user-agent": USER_AGENT, ...headers },
      redirect: "manual",
      signal,
      client: httpClient(),
    });
    const text = await readPrefix(res, MAX_RESPONSE_BYTES);
    return {
      ok: res.status >= 200 && res.status < 300,
      httpStatus: res.status,
      responseBody: text,
      durationMs: performance.now() - started,
    };
  } catch (err) {
    if (err instanceof BlockedDestination) return failed(err.message);
    if (timeout.aborted) return failed(`timeout after ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) return failed("aborted: the worker is shutting down");
    return failed(err instanceof Error ? err.message : String(err));
  }
}

/** Renders one delivery for its endpoint, signs it with the endpoint's secrets and POSTs it. Never throws. */
export async function sendDelivery(
  endpoint: EndpointRow,
  delivery: { id: string; type: string; data: Record<string, unknown> },
  opts: SendOptions,
): Promise<SendResult> {
  const body = renderBody(endpoint, delivery);
  const signature = await signPayload(body, endpoint.secret, {
    previousSecret: validPreviousSecret(endpoint)?.secret,
  });
  return await sendWebhook(endpoint.url, body, { "service-signature": signature }, opts);
}

/** The first `limit` bytes of the body as text; the rest is not read. */
async function readPrefix(res: Response, limit: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, limit));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.length - at);
    bytes.set(part, at);
    at += part.length;
    if (at >= bytes.length) break;
  }
  // A cut in the middle of a UTF-8 sequence decodes to U+FFFD: drop it. Postgres text cannot hold NUL.
  const text = new TextDecoder().decode(bytes).replaceAll("\u0000", "");
  return size > limit ? text.replace(/\uFFFD$/, "") : text;
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
