/**
 * Bearer tokens: HS256 signing and checking, why a token is refused, and the constant-time comparison of the metrics
 * token. No database here: whether a valid token was revoked since is token_guard.ts's question.
 */
import { timingSafeEqual } from "node:crypto";
import { sign, verify } from "hono/jwt";
import { decodeBase64Url } from "hono/utils/encode";
import { JwtAlgorithmMismatch, JwtHeaderInvalid, JwtTokenSignatureMismatched } from "hono/utils/jwt/types";
import type { Config } from "../infra/config.ts";
import { UUID_RE } from "../basics/ids.ts";

/** What signing and checking a bearer token needs from the configuration. */
export type TokenSettings = Pick<Config, "jwtSecret" | "jwtIssuer" | "jwtAudience" | "jwtMaxTtlSeconds">;

/**
 * How far the clocks of the instances (and of whatever signs tokens) may differ: a token issued "2 s from now" by a
 * neighbour whose clock runs ahead is fine, and `exp` and `nbf` get the same margin.
 */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * The audience of a portal session's token (docs/webhooks.md, "Portal links"): the service's own with `:portal`
 * after it, never the service's own alone, so an instance that knows nothing of portal sessions (the previous release,
 * during an upgrade) refuses the token instead of taking it for one that opens the whole company.
 */
export const portalAudience = (settings: Pick<TokenSettings, "jwtAudience">) => `${settings.jwtAudience}:portal`;

/**
 * Signs an HS256 token whose `sub` is the company id (the integrator account), with this service's `iss` and `aud`.
 * It lives `ttlSeconds`, the longest lifetime accepted unless told otherwise. A token from sign-in names its session
 * as `jti` (domain/integrators/sessions.ts), so it can be revoked on its own; a portal session's token (`portal`) has
 * the portal audience, and opens only what a portal may do (routes/policy/portal_scope.ts). A negative `ttlSeconds`
 * signs a token that expired that long ago (`deno task token --expires-in`, for testing a client's refresh), its `iat`
 * at its `exp` so that it never claims to have been issued after it expired.
 */
export function signToken(
  settings: TokenSettings,
  companyId: string,
  ttlSeconds = settings.jwtMaxTtlSeconds,
  sessionId?: string,
  opts: { portal?: boolean } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub: companyId,
    iss: settings.jwtIssuer,
    aud: opts.portal ? portalAudience(settings) : settings.jwtAudience,
    iat: Math.min(now, now + ttlSeconds),
    exp: now + ttlSeconds,
  };
  return sign(sessionId ? { ...claims, jti: sessionId } : claims, settings.jwtSecret, "HS256");
}

// the scheme in any case (RFC 7235, section 2.1: `bearer` and `BEARER` are `Bearer`)
const TOKEN_RE = /^Bearer ([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)$/i;
const JWT_RE = /^[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*$/;

/** `portal`: the token of a portal session (docs/webhooks.md, "Portal links"), which opens the webhook routes only. */
export type Verified = { companyId: string; iat: number; exp: number; sessionId: string | null; portal: boolean };

/** The reasons a token is refused for: a closed set, the first words of every refusal's description. */
export type RefusalReason = "missing" | "malformed" | "bad signature" | "expired" | "revoked" | "invalid claims";

/**
 * Why a request's token was refused, said in the 401's `WWW-Authenticate` and in the request's log line (docs/errors.md,
 * "Why a 401"). `description` starts with `reason` and may say which part was wrong. Each is built once: a refusal
 * costs no allocation, and what it says is fixed text, never an echo of the token.
 */
export type TokenRefusal = { readonly reason: RefusalReason; readonly description: string };

const refusal = (reason: RefusalReason, detail?: string): TokenRefusal =>
  Object.freeze({ reason, description: detail ? `${reason}: ${detail}` : reason });

/** Every refusal `checkBearer` and the token guard can give, by what was wrong. */
export const REFUSED = {
  missing: refusal("missing"),
  empty: refusal("malformed", "nothing after Bearer"),
  words: refusal("malformed", "expected one token after Bearer"),
  spaces: refusal("malformed", "expected one space between Bearer and the token"),
  scheme: refusal("malformed", "expected the scheme Bearer before the token"),
  notJwt: refusal("malformed", "not a JWT (three base64url parts: header, claims, signature)"),
  headerNotJson: refusal("malformed", "the JWT header (first part) is not base64url-encoded JSON"),
  claimsNotJson: refusal("malformed", "the JWT claims (second part) are not base64url-encoded JSON"),
  claimsNotObject: refusal("malformed", "the JWT claims (second part) are not a JSON object"),
  signatureNotBase64: refusal("malformed", "the JWT signature (third part) is not base64url"),
  header: refusal("malformed", "the JWT header must name alg HS256"),
  algorithm: refusal("bad signature", "only HS256 is accepted"),
  signature: refusal("bad signature"),
  expired: refusal("expired"),
  issuer: refusal("invalid claims", "iss is not this service's"),
  audience: refusal("invalid claims", "aud does not name this service"),
  subject: refusal("invalid claims", "sub must be a company id (a UUID)"),
  times: refusal("invalid claims", "iat and exp are required"),
  lifetime: refusal("invalid claims", "exp is further from iat than the longest lifetime allowed"),
  early: refusal("invalid claims", "iat or nbf is in the future"),
  session: refusal("invalid claims", "jti must be a session id (a UUID)"),
  portalSession: refusal("invalid claims", "a portal session's token must name its session (jti)"),
  revoked: refusal("revoked"),
} as const;

/**
 * The JWT of an `Authorization` header, or why there is none. A header with another scheme (or none) is `missing`,
 * as RFC 6750 has a client that did not attempt Bearer told nothing more; a Bearer header that holds no single JWT
 * is `malformed`, with what its shape lacks. The exact form is matched first, so a good header costs one regex.
 */
function bearerToken(header: string | undefined): string | TokenRefusal {
  const match = TOKEN_RE.exec(header ?? "");
  if (match) return match[1];
  const given = header?.trim() ?? "";
  if (!given) return REFUSED.missing;
  const [scheme, ...words] = given.split(/\s+/);
  if (scheme.toLowerCase() !== "bearer") return JWT_RE.test(given) ? REFUSED.scheme : REFUSED.missing;
  if (words.length === 0) return REFUSED.empty;
  if (words.length > 1) return REFUSED.words;
  if (!JWT_RE.test(words[0])) return REFUSED.notJwt;
  return REFUSED.spaces;
}

const UTF8 = new TextDecoder();

/**
 * Which part of a token of three base64url parts does not decode as a JWT's must: the header and the claims JSON, the
 * signature bytes. Asked only once the token was refused, so an accepted one is decoded once, by `verify`.
 */
function undecodablePart(token: string): TokenRefusal {
  const [header, claims, signature] = token.split(".");
  const json = (part: string) => {
    try {
      return { value: JSON.parse(UTF8.decode(decodeBase64Url(part))) };
    } catch {
      return null;
    }
  };
  if (!json(header)) return REFUSED.headerNotJson;
  const decoded = json(claims);
  if (!decoded) return REFUSED.claimsNotJson;
  if (typeof decoded.value !== "object" || decoded.value === null) return REFUSED.claimsNotObject;
  try {
    decodeBase64Url(signature);
  } catch {
    return REFUSED.signatureNotBase64;
  }
  return REFUSED.notJwt;
}

/**
 * The company, session and lifetime of a valid bearer token, or why it is refused. Only HS256 is accepted (`alg:
 * none` never is), `iss` and `aud` must name this service, and `iat` and `exp` must both be there, at most
 * `jwtMaxTtlSeconds` apart: a leaked token stops working by itself, and nobody holding an old key can sign one that
 * never expires. `iat`, `nbf` and `exp` are compared with `CLOCK_SKEW_SECONDS` of margin. The signature is checked
 * before any claim, so what a refusal says of the claims is said only of a token this service signed. Whether the
 * token was revoked since is the TokenGuard's question (domain/integrators/token_guard.ts). A token whose audience is
 * the portal's is a portal session's (`portal: true`).
 */
export async function checkBearer(
  settings: TokenSettings,
  header: string | undefined,
  nowSeconds = Date.now() / 1000,
): Promise<Verified | TokenRefusal> {
  const token = bearerToken(header);
  if (typeof token !== "string") return token;
  let claims;
  try {
    // the claims are checked below, once the signature is known to be ours, with the margin hono's checks lack
    claims = await verify(token, settings.jwtSecret, { alg: "HS256", exp: false, nbf: false, iat: false });
  } catch (err) {
    if (err instanceof JwtTokenSignatureMismatched) return REFUSED.signature;
    if (err instanceof JwtAlgorithmMismatch) return REFUSED.algorithm;
    if (err instanceof JwtHeaderInvalid) return REFUSED.header;
    return undecodablePart(token);
  }
  // a signed payload that is JSON but not an object (`null`, `7`) holds no claims
  if (typeof claims !== "object" || claims === null) return REFUSED.claimsNotObject;
  const { sub, exp, iat, nbf, jti, iss, aud } = claims;
  if (iss !== settings.jwtIssuer) return REFUSED.issuer;
  const audiences = Array.isArray(aud) ? aud : [aud];
  // naming the portal's audience at all limits the token to the portal, whatever else it names
  const portal = audiences.includes(portalAudience(settings));
  if (!portal && !audiences.includes(settings.jwtAudience)) return REFUSED.audience;
  if (typeof sub !== "string" || !UUID_RE.test(sub)) return REFUSED.subject;
  if (!finite(exp) || !finite(iat)) return REFUSED.times;
  if (exp - iat > settings.jwtMaxTtlSeconds) return REFUSED.lifetime;
  if (exp <= nowSeconds - CLOCK_SKEW_SECONDS) return REFUSED.expired;
  if (iat > nowSeconds + CLOCK_SKEW_SECONDS) return REFUSED.early;
  if (nbf !== undefined && (!finite(nbf) || nbf > nowSeconds + CLOCK_SKEW_SECONDS)) return REFUSED.early;
  if (jti !== undefined && (typeof jti !== "string" || !UUID_RE.test(jti))) return REFUSED.session;
  // a portal token without its session could not be revoked
  if (portal && jti === undefined) return REFUSED.portalSession;
  return { companyId: sub.toLowerCase(), iat, exp, sessionId: jti?.toLowerCase() ?? null, portal };
}

/** `checkBearer`'s verdict without the reason: the token's company, session and lifetime, or null. */
export async function verifyBearer(
  settings: TokenSettings,
  header: string | undefined,
  nowSeconds = Date.now() / 1000,
): Promise<Verified | null> {
  const checked = await checkBearer(settings, header, nowSeconds);
  return isRefusal(checked) ? null : checked;
}

export const isRefusal = (checked: Verified | TokenRefusal): checked is TokenRefusal => "reason" in checked;

const finite = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n);

const encoder = new TextEncoder();

/**
 * Whether `header` is `Bearer <expected>` (the scheme in any case, as for a JWT), compared in constant time. Both
 * sides are hashed first, so neither the length nor the first differing byte of the secret shows in the time taken.
 */
export async function bearerMatches(header: string | undefined, expected: string): Promise<boolean> {
  const given = header && /^bearer /i.test(header) ? header.slice("Bearer ".length) : "";
  const [a, b] = await Promise.all(
    [given, expected].map((s) => crypto.subtle.digest("SHA-256", encoder.encode(s))),
  );
  return timingSafeEqual(new Uint8Array(a), new Uint8Array(b));
}
