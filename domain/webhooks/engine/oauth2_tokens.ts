/**
 * Bearer tokens for endpoints with OAuth2 client credentials (docs/webhooks.md, "OAuth2 client credentials"): the
 * token request (RFC 6749 §4.4) and its answer read, and the process's cache of tokens, one fetch in flight per
 * credential. Its own file because the cache lives as long as the process, across attempts, like the connection pool
 * (connections.ts), while sender.ts makes one attempt; the POST itself is the sender's, so the token URL goes through
 * the same URL guard, timeout and answer size bound as a delivery.
 */

import type { StoredOAuth2 } from "../endpoints/endpoint_row.ts";
import { urlOrigin } from "../endpoints/bound_secrets.ts";
import { redactSecrets, type Secret } from "./redaction.ts";

/** A token is dropped this long before the server said it expires, or a fifth of its life when that is shorter. */
export const TOKEN_EXPIRY_MARGIN_SECONDS = 30;
/** How long a token is used when its answer names no `expires_in` (RFC 6749 §5.1 leaves it to the server). */
export const DEFAULT_TOKEN_SECONDS = 300;
/** The longest a token is kept, whatever the server says. */
export const MAX_TOKEN_SECONDS = 24 * 60 * 60;
/** Tokens kept per process: one per endpoint credential of a busy instance; past it the oldest goes. */
export const MAX_CACHED_TOKENS = 10_000;
/** The longest access token taken: it is sent in a header with every attempt. */
export const MAX_TOKEN_LENGTH = 8 * 1024;

/** The POST the token request is made with (the sender's: it never throws, and bounds time and size). */
export type TokenPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
) => Promise<{ ok: boolean; httpStatus: number; responseBody: string }>;

/** A token to send, or why there is none: the attempt's `last_error` (it never holds the client secret). */
export type TokenOutcome = { token: string; expiresAt: number } | { failure: string };

/**
 * What makes one token: a change of any of them (a new secret included) is another credential, another token. The
 * origin of the endpoint's URL is one of them: a token goes only to the origin it was fetched for, so a URL moved to
 * another origin gets a token of its own (docs/webhooks.md, "Secrets stay with their URL").
 */
export function credentialKey(endpointId: string, endpointUrl: string, c: StoredOAuth2): string {
  return JSON.stringify([
    endpointId,
    urlOrigin(endpointUrl),
    c.token_url,
    c.client_id,
    c.sealed_client_secret,
    c.scope,
    c.audience,
    c.client_auth,
  ]);
}

/** `application/x-www-form-urlencoded` as RFC 6749 Appendix B has it (space as `+`). */
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, "+");

/** What stands for the client secret wherever a token server's answer echoed it. */
export const CLIENT_SECRET_LABEL = "[client secret]";

/**
 * The token request of RFC 6749 §4.4.2: `grant_type=client_credentials`, with `scope` and `audience` when set, and
 * the client authenticated by HTTP Basic (the default; id and secret form-encoded first, §2.3.1) or in the body.
 * `secret` is the client secret as the request sends it, for its answer to be cleared of (redaction.ts): in the body
 * it is an encoding of the secret, in a Basic credential base64 of the form-encoded pair, and of the raw pair, which
 * other clients send.
 */
export function tokenRequest(
  c: StoredOAuth2,
  clientSecret: string,
): { body: string; headers: Record<string, string>; secret: Secret } {
  const fields: [string, string][] = [["grant_type", "client_credentials"]];
  if (c.scope) fields.push(["scope", c.scope]);
  if (c.audience) fields.push(["audience", c.audience]);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  const secret: Secret = { value: clientSecret, label: CLIENT_SECRET_LABEL };
  if (c.client_auth === "client_secret_post") fields.push(["client_id", c.client_id], ["client_secret", clientSecret]);
  else {
    const pair = `${formEncode(c.client_id)}:${formEncode(clientSecret)}`;
    headers.authorization = `Basic ${btoa(pair)}`;
    const raw = new TextEncoder().encode(`${c.client_id}:${clientSecret}`).toBase64();
    secret.sentAs = [btoa(pair), raw];
  }
  return { body: fields.map(([k, v]) => `${k}=${formEncode(v)}`).join("&"), headers, secret };
}

/**
 * Printable text cut to `max`, with the client secret, should the server echo it, cleared first in any of its
 * encodings (redaction.ts): a cut could otherwise leave a part of it that no longer reads as the whole.
 */
function shown(value: unknown, max: number, secret: Secret): string | null {
  if (typeof value !== "string" || value === "") return null;
  return redactSecrets(value, [secret]).replace(/[^\x20-\x7e]/g, "?").slice(0, max);
}

/**
 * The token of a token endpoint's answer (RFC 6749 §5.1), or why there is none (§5.2): "oauth2 token: HTTP 400
 * invalid_client (...)". `nowMs` is when the request was sent: the token's life counts from then.
 */
export function readTokenAnswer(
  answer: { ok: boolean; httpStatus: number; responseBody: string },
  clientSecret: Secret,
  nowMs: number,
): TokenOutcome {
  const failed = (why: string): TokenOutcome => ({ failure: `oauth2 token: ${why}` });
  // no answer: the sender's reason (a refusal by the URL guard, a timeout, a refused connection) names no address
  if (answer.httpStatus === 0) return failed(answer.responseBody);
  let json: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(answer.responseBody);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) json = parsed;
  } catch { /* not JSON, or cut at the answer's size bound */ }
  if (!answer.ok) {
    const code = shown(json?.error, 64, clientSecret);
    const description = shown(json?.error_description, 200, clientSecret);
    return failed(`HTTP ${answer.httpStatus}${code ? ` ${code}` : ""}${description ? ` (${description})` : ""}`);
  }
  if (!json) return failed(`HTTP ${answer.httpStatus}, but the answer is not a JSON object of at most 16 KiB`);
  const token = json.access_token;
  if (typeof token !== "string" || token === "") return failed("the answer has no access_token");
  if (token.length > MAX_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    return failed(`the access_token is not printable ASCII of at most ${MAX_TOKEN_LENGTH} characters`);
  }
  if (json.token_type !== undefined && String(json.token_type).toLowerCase() !== "bearer") {
    return failed(`token_type ${shown(json.token_type, 32, clientSecret)} is not bearer`);
  }
  const raw = typeof json.expires_in === "string" ? Number(json.expires_in) : json.expires_in;
  const life = typeof raw === "number" && Number.isFinite(raw) && raw > 0
    ? Math.min(raw, MAX_TOKEN_SECONDS)
    : DEFAULT_TOKEN_SECONDS;
  const margin = Math.min(TOKEN_EXPIRY_MARGIN_SECONDS, life / 5);
  return { token, expiresAt: nowMs + (life - margin) * 1000 };
}

/**
 * The tokens of this process, by credential (`credentialKey`): a token is used until shortly before it expires, a
 * receiver's 401 drops it (`drop`), and attempts asking at once for a credential with no token share one request.
 * A failed request is not kept: the next attempt asks again, on the retry schedule.
 */
export class TokenCache {
  readonly #tokens = new Map<string, { token: string; expiresAt: number }>();
  readonly #inFlight = new Map<string, Promise<TokenOutcome>>();
  readonly #max: number;

  constructor(max = MAX_CACHED_TOKENS) {
    this.#max = max;
  }

  /** A valid token for `key`, from the cache or from `fetch` (one call at a time per key). */
  async bearer(key: string, fetch: () => Promise<TokenOutcome>, nowMs = Date.now()): Promise<TokenOutcome> {
    const known = this.#tokens.get(key);
    if (known && known.expiresAt > nowMs) return known;
    if (known) this.#tokens.delete(key);
    const pending = this.#inFlight.get(key);
    if (pending) return await pending;
    const request = (async () => {
      try {
        const outcome = await fetch();
        if ("token" in outcome) this.#keep(key, outcome);
        return outcome;
      } finally {
        this.#inFlight.delete(key);
      }
    })();
    this.#inFlight.set(key, request);
    return await request;
  }

  /** Forgets `token` for `key` (a receiver refused it); a newer token fetched meanwhile stays. */
  drop(key: string, token: string): void {
    if (this.#tokens.get(key)?.token === token) this.#tokens.delete(key);
  }

  /** Tokens kept (for tests and metrics). */
  get size(): number {
    return this.#tokens.size;
  }

  #keep(key: string, entry: { token: string; expiresAt: number }) {
    this.#tokens.delete(key);
    if (this.#tokens.size >= this.#max) this.#tokens.delete(this.#tokens.keys().next().value!);
    this.#tokens.set(key, entry);
  }
}

/** The process's tokens when the caller brings no cache of its own (the drainers bring theirs). */
export const processTokens = new TokenCache();
