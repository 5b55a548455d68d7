/**
 * The shapes of the portal link routes (docs/webhooks.md, "Portal links"): the body that makes a link, the link as
 * shown, and the code exchanged for a portal session. Apart from schemas.ts, whose shapes are the endpoints' and their
 * deliveries', because a portal link is the company's credential, not a webhook object.
 */

import { z } from "@hono/zod-openapi";
import { MAX_ALLOWED_ORIGINS } from "../../domain/integrators/portal_origins.ts";
import { LINK_TTL, SESSION_TTL } from "../../domain/integrators/portal_links.ts";
import {
  ACCENT_COLOR_RE,
  BRAND_NAME_MAX,
  LOGO_MAX_BYTES,
  LOGO_TYPES,
} from "../../domain/integrators/portal_branding.ts";

export const PortalBrandingBody = z.object({
  name: z.string().trim().min(1).max(BRAND_NAME_MAX).optional().openapi({
    description: `Your platform's name, at most ${BRAND_NAME_MAX} characters: the page's heading and title`,
    example: "Acme Pay",
  }),
  accent_color: z.string().regex(ACCENT_COLOR_RE, "must be a colour as #rrggbb").optional().openapi({
    description: "The colour of the page's mark and main buttons, `#rrggbb`; their text is black or white, " +
      "whichever reads better on it",
    example: "#0a7d4f",
  }),
  support_url: z.url({ protocol: /^https$/, error: "must be an https URL" }).max(2048).optional().openapi({
    description: "Where your customer asks for help: an https link in the page's top bar",
    example: "https://acme.example/support",
  }),
  logo: z.object({
    file_type: z.enum(LOGO_TYPES),
    file_data: z.string().min(1).openapi({
      description: `The image's bytes in base64, at most ${LOGO_MAX_BYTES} bytes (64 KiB) once decoded; a PNG or ` +
        "WebP by its bytes, as `file_type` says",
    }),
  }).optional().openapi({
    description: "Your logo, stored with the link and served from this service at `/console/portal/<id>/logo`, so " +
      "the page loads nothing from elsewhere",
  }),
}).openapi("PortalBranding");

export const PortalLinkCreateBody = z.object({
  allowed_origins: z.array(z.string().max(255)).max(MAX_ALLOWED_ORIGINS).optional().openapi({
    description: `The origins (scheme, host, port) that may frame the console page, at most ${MAX_ALLOWED_ORIGINS}: ` +
      "its `Content-Security-Policy` names exactly these in `frame-ancestors`. https only; http for a loopback host " +
      "in development. None (the default): the page cannot be framed, only opened",
    example: ["https://app.example.com"],
  }),
  expires_in: z.number().int().min(LINK_TTL.min).max(LINK_TTL.max).optional().openapi({
    description: `Seconds the code may wait to be exchanged, ${LINK_TTL.min} to ${LINK_TTL.max}; default ` +
      `${LINK_TTL.default}`,
    example: LINK_TTL.default,
  }),
  session_expires_in: z.number().int().min(SESSION_TTL.min).max(SESSION_TTL.max).optional().openapi({
    description: `Seconds the session the code opens lasts, ${SESSION_TTL.min} to ${SESSION_TTL.max} (and at most ` +
      `JWT_MAX_TTL_SECONDS); default ${SESSION_TTL.default}`,
    example: SESSION_TTL.default,
  }),
  branding: PortalBrandingBody.optional().openapi({
    description: "What the page wears instead of this service's name and colours; none: the service's own",
  }),
}).openapi("PortalLinkCreate");

export const PORTAL_LINK_CREATE_EXAMPLE: z.input<typeof PortalLinkCreateBody> = {
  allowed_origins: ["https://app.example.com"],
  expires_in: 600,
};

export const PortalLink = z.object({
  id: z.string().openapi({ format: "uuid" }),
  status: z.enum(["active", "used", "expired", "revoked"]).openapi({
    description: "`active` while the code opens; then `used`, `expired` or `revoked`, for good",
  }),
  allowed_origins: z.array(z.string()).openapi({ description: "As stored: lower-case host, no default port" }),
  expires_at: z.string().openapi({ format: "date-time", description: "Until when the code may be exchanged" }),
  session_expires_in: z.number().int(),
  used_at: z.string().nullable().openapi({ format: "date-time" }),
  session_expires_at: z.string().nullable().openapi({
    format: "date-time",
    description: "When the session the code opened ends; null until it is exchanged",
  }),
  revoked_at: z.string().nullable().openapi({ format: "date-time" }),
  inserted_at: z.string().openapi({ format: "date-time" }),
  branding: z.object({
    name: z.string().nullable(),
    accent_color: z.string().nullable(),
    support_url: z.string().nullable(),
    logo_url: z.string().nullable().openapi({
      description:
        "The path the stored logo is served at, on this service, while the link's page opens; null without one",
    }),
  }),
}).openapi("PortalLink");

export const NewPortalLink = PortalLink.extend({
  url: z.string().openapi({
    description: "The console page of this link with the code after `#`: hand it to your customer or frame it. " +
      "Under the service's PUBLIC_BASE_URL, never the Host the request named. Shown this once",
    example: "https://payments.example.com/console/portal/0190f0e2-7c3b-7d4e-9a51-2f1c3b5d7e90#code=plc_…",
  }),
  code: z.string().openapi({
    description: "The single-use code alone (`plc_` and 43 characters), for a page of your own that exchanges it at " +
      "`POST /api/v2/notifications/portal_sessions`. Shown this once: only its hash is kept",
  }),
}).openapi("NewPortalLink");

export const PortalSessionBody = z.object({
  code: z.string().min(1).max(100).openapi({ description: "The code after `#code=` of the link's url" }),
}).openapi("PortalSessionCreate");

export const PORTAL_SESSION_EXAMPLE: z.input<typeof PortalSessionBody> = {
  code: "plc_3q2-7wCz0Y5Jm9Xb1kLr8tVn4sD6fH0gA2eQ7uWpZcM",
};

export const PortalSession = z.object({
  jwt: z.string().openapi({
    description: "Bearer token of the portal session: the webhook routes of the company only, until `expires_at`",
  }),
  expires_at: z.string().openapi({ format: "date-time" }),
  portal_link_id: z.string().openapi({ format: "uuid" }),
}).openapi("PortalSession");
