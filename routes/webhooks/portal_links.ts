/**
 * Portal links (docs/webhooks.md, "Portal links"): make one, show it, revoke it, with the company's API token; and the
 * exchange of a link's code for a portal session, the one route of the file without a bearer (app.ts lets it through,
 * as it does sign-in), which brings the sign-in throttle of failures with it.
 */

import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../domain/infra/deps.ts";
import { tooManyRequests, unauthorized } from "../../domain/basics/errors.ts";
import { isoUtc, isoUtcOrNull } from "../../domain/basics/time.ts";
import {
  createPortalLink,
  exchangePortalCode,
  getPortalLink,
  LINK_TTL,
  type PortalLink as Link,
  portalLinkBase,
  portalLinkStatus,
  portalLinkUrl,
  portalLogoPath,
  revokePortalLink,
  SESSION_TTL,
} from "../../domain/integrators/portal_links.ts";
import { parseAllowedOrigins } from "../../domain/integrators/portal_origins.ts";
import { checkLogo } from "../../domain/integrators/portal_branding.ts";
import { countSignInFailure, reserveSignIn, settleSignIn } from "../../domain/integrators/sign_in_throttle.ts";
import { clientAddress, type TrustedProxies } from "../policy/client_address.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import {
  bodyErrorResponses,
  errorResponses,
  IdParam,
  jsonBody,
  jsonResponse,
  publicBaseUrlResponse,
} from "../openapi/schemas.ts";
import {
  NewPortalLink,
  PORTAL_LINK_CREATE_EXAMPLE,
  PORTAL_SESSION_EXAMPLE,
  PortalLink,
  PortalLinkCreateBody,
  PortalSession,
  PortalSessionBody,
} from "./portal_link_schemas.ts";

export const PORTAL_LINKS_PATH = "/api/v2/notifications/portal_links";
/** The exchange: no bearer, since the code is the credential (app.ts names it beside sign-in). */
export const PORTAL_SESSIONS_PATH = "/api/v2/notifications/portal_sessions";

/**
 * The exchanges of one client address are counted as the sign-ins of this "username" are (domain/integrators/
 * sign_in_throttle.ts): a space makes it one no user can have, so the two never share a count, while a guessing
 * address's failures still add to its own and to the global ceiling.
 */
const THROTTLE_KEY = "portal link";

const tags = ["Portal links"];

const create = createRoute({
  operationId: "createPortalLink",
  method: "post",
  path: PORTAL_LINKS_PATH,
  tags,
  summary: "A short-lived, single-use link to the console for this company's webhook endpoints, for your customer",
  description: "The answer's `url` opens (or, from `allowed_origins`, frames) the console page, which exchanges the " +
    "code after `#` for a session that can manage the company's webhook endpoints and read their deliveries, and " +
    "nothing else. A portal session's token cannot make or revoke portal links (403).",
  request: { body: jsonBody(PortalLinkCreateBody, PORTAL_LINK_CREATE_EXAMPLE) },
  responses: {
    201: jsonResponse("Link made; its url and code are shown this once", z.object({ data: NewPortalLink })),
    ...bodyErrorResponses,
    ...publicBaseUrlResponse,
  },
});

const show = createRoute({
  operationId: "getPortalLink",
  method: "get",
  path: `${PORTAL_LINKS_PATH}/{id}`,
  tags,
  summary: "Show a portal link: whether its code was used, and until when its session lasts (never the code)",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The link", z.object({ data: PortalLink })), ...errorResponses },
});

const revoke = createRoute({
  operationId: "revokePortalLink",
  method: "delete",
  path: `${PORTAL_LINKS_PATH}/{id}`,
  tags,
  summary: "Revoke a portal link: its code opens nothing, and the session it opened ends at once",
  request: { params: IdParam },
  responses: { 200: jsonResponse("Link revoked", z.object({ data: PortalLink })), ...errorResponses },
});

const exchange = createRoute({
  operationId: "createPortalSession",
  method: "post",
  path: PORTAL_SESSIONS_PATH,
  tags,
  security: [], // the code is the credential
  summary: "Exchange a portal link's code for a portal session (what the console page does); once per code",
  description: "An unknown, used, expired or revoked code: 401, the same body whichever. Failures are counted per " +
    "client address as failed sign-ins are: past `SIGN_IN_FAILURES_PER_USERNAME` (10) within " +
    "`SIGN_IN_FAILURE_WINDOW_SECONDS`, 429 with `Retry-After`.",
  request: { body: jsonBody(PortalSessionBody, PORTAL_SESSION_EXAMPLE) },
  responses: {
    201: jsonResponse("Session opened", z.object({ data: PortalSession })),
    ...bodyErrorResponses,
    401: jsonResponse("No such code open", z.object({ errors: z.object({ detail: z.string() }) })),
  },
});

function presentLink(link: Link) {
  return {
    id: link.id,
    status: portalLinkStatus(link),
    allowed_origins: link.allowedOrigins,
    expires_at: isoUtc(link.expiresAt),
    session_expires_in: link.sessionSeconds,
    used_at: isoUtcOrNull(link.usedAt),
    session_expires_at: isoUtcOrNull(link.sessionExpiresAt),
    revoked_at: isoUtcOrNull(link.revokedAt),
    inserted_at: isoUtc(link.insertedAt),
    branding: {
      name: link.branding.name,
      accent_color: link.branding.accentColor,
      support_url: link.branding.supportUrl,
      logo_url: link.branding.logoType ? portalLogoPath(link.id) : null,
    },
  };
}

/**
 * The origin the caller reached this service at, for a link's url outside production when PUBLIC_BASE_URL is unset
 * (`portalLinkBase`): the request's own, with `https` when a trusted proxy says the client came over it (a proxy that
 * ends TLS forwards plain http).
 */
function requestOrigin(c: Context, trust: TrustedProxies): string {
  const url = new URL(c.req.url);
  const proto = c.req.header("x-forwarded-proto")?.split(",").at(-1)?.trim();
  if (trust.hops > 0 && proto === "https") url.protocol = "https:";
  return url.origin;
}

export function portalLinkRoutes(deps: Deps) {
  const { sql, config } = deps;
  const { limits } = config;
  const throttle = {
    perUsername: limits.signInFailuresPerUsername,
    perAddress: limits.signInFailuresPerAddress,
    global: limits.signInFailuresGlobal,
    windowSeconds: limits.signInWindowSeconds,
  };
  const origins = { allowLoopbackHttp: config.appEnv === "development" };
  return newRouter()
    .openapi(
      create,
      async (c) => {
        const body = c.req.valid("json");
        const base = portalLinkBase(config, () => requestOrigin(c, config.trustProxy));
        const brand = body.branding ?? {};
        const { link, code } = await createPortalLink(sql, c.get("companyId"), {
          allowedOrigins: parseAllowedOrigins(body.allowed_origins ?? [], origins),
          expiresIn: body.expires_in ?? LINK_TTL.default,
          sessionSeconds: body.session_expires_in ?? SESSION_TTL.default,
          branding: {
            name: brand.name,
            accentColor: brand.accent_color,
            supportUrl: brand.support_url,
            logo: brand.logo && await checkLogo(brand.logo),
          },
        });
        return c.json({ data: { ...presentLink(link), url: portalLinkUrl(base, link.id, code), code } }, 201);
      },
      alsoCheck(PortalLinkCreateBody, async (parts) => {
        parseAllowedOrigins(parts.allowed_origins ?? [], origins);
        if (parts.branding?.logo) await checkLogo(parts.branding.logo);
      }),
    )
    .openapi(show, async (c) => {
      const link = await getPortalLink(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentLink(link) }, 200);
    })
    .openapi(revoke, async (c) => {
      const link = await revokePortalLink(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentLink(link) }, 200);
    })
    .openapi(exchange, async (c) => {
      const { code } = c.req.valid("json");
      const attempt = { username: THROTTLE_KEY, address: clientAddress(c, config.trustProxy) };
      const held = await reserveSignIn(sql, throttle, attempt);
      if ("waitSeconds" in held) throw tooManyRequests(held.waitSeconds);
      const session = await exchangePortalCode(sql, config, code);
      if (!session) {
        await countSignInFailure(sql, throttle); // the reservation stays: a failure counted, and one of all
        throw unauthorized();
      }
      await settleSignIn(sql, attempt, held, "succeeded");
      return c.json({
        data: { jwt: session.jwt, expires_at: isoUtc(session.expiresAt), portal_link_id: session.linkId },
      }, 201);
    });
}
