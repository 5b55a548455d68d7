/**
 * Portal links (docs/webhooks.md, "Portal links"): a platform asks for one with its API token and hands it to its own
 * customer; the console page exchanges the link's single-use code for a session of the company whose token opens the
 * webhook routes only (routes/policy/portal_scope.ts). Created, shown, revoked, exchanged and pruned here; which
 * origins may frame the page is portal_origins.ts's.
 *
 * ```ts
 * const { link, code } = await createPortalLink(sql, companyId, { allowedOrigins, expiresIn: 600, sessionSeconds: 3600 });
 * const session = await exchangePortalCode(sql, config, code); // once: null the second time
 * ```
 */
import type { Sql } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import { ApiError, notFound, unprocessable } from "../basics/errors.ts";
import { signToken, type TokenSettings } from "./tokens.ts";
import type { Branding, Logo, LogoType } from "./portal_branding.ts";

/** How long a code may wait to be exchanged: short, as the page opens it at once (seconds). */
export const LINK_TTL = { default: 600, min: 30, max: 3600 } as const;
/** How long the session a code opens lasts (seconds); never longer than JWT_MAX_TTL_SECONDS either. */
export const SESSION_TTL = { default: 3600, min: 300, max: 86_400 } as const;

/**
 * How many links of one company are kept at once: a link's row stays until a day after its session (or its unused
 * code) ended, so this bounds what a company's token can make the service remember to the links of about two days.
 */
export const MAX_KEPT_LINKS = 10_000;

/** Codes start with this, so one pasted into a log or a ticket is recognised for what it is. */
export const CODE_PREFIX = "plc_";
/** 32 random bytes in base64url after the prefix. */
const CODE_RE = /^plc_[A-Za-z0-9_-]{43}$/;

export type PortalLink = {
  id: string;
  companyId: string;
  allowedOrigins: string[];
  expiresAt: Date;
  sessionSeconds: number;
  usedAt: Date | null;
  sessionExpiresAt: Date | null;
  revokedAt: Date | null;
  insertedAt: Date;
  /** What the link's page wears instead of the service's own words (portal_branding.ts); null fields: the default. */
  branding: Branding;
};

type BrandRow = {
  brand_name: string | null;
  brand_accent_color: string | null;
  brand_support_url: string | null;
  brand_logo_type: LogoType | null;
};

const toBranding = (r: BrandRow): Branding => ({
  name: r.brand_name,
  accentColor: r.brand_accent_color,
  supportUrl: r.brand_support_url,
  logoType: r.brand_logo_type,
});

type LinkRow = BrandRow & {
  id: string;
  company_id: string;
  allowed_origins: string[];
  expires_at: Date;
  /** bigint: postgres.js reads it as a string */
  session_seconds: string;
  used_at: Date | null;
  session_expires_at: Date | null;
  revoked_at: Date | null;
  inserted_at: Date;
};

const toLink = (r: LinkRow): PortalLink => ({
  id: r.id,
  companyId: r.company_id,
  allowedOrigins: r.allowed_origins,
  expiresAt: r.expires_at,
  sessionSeconds: Number(r.session_seconds),
  usedAt: r.used_at,
  sessionExpiresAt: r.session_expires_at,
  revokedAt: r.revoked_at,
  insertedAt: r.inserted_at,
  branding: toBranding(r),
});

/** The branding's columns, never the logo's bytes: those are read only to serve them (`portalLogo`). */
const BRAND_COLUMNS = "brand_name, brand_accent_color, brand_support_url, brand_logo_type";
const COLUMNS = "id, company_id, allowed_origins, expires_at, session_seconds, used_at, session_expires_at, " +
  `revoked_at, inserted_at, ${BRAND_COLUMNS}`;

/** A link's branding as the body gives it, the logo checked already (`checkLogo`). */
export type BrandingInput = {
  name?: string;
  accentColor?: string;
  supportUrl?: string;
  logo?: Logo;
};

/** Where a link stands: `revoked` before `used` before `expired`, each final; `active` while its code opens. */
export function portalLinkStatus(link: PortalLink, now = new Date()): "active" | "used" | "expired" | "revoked" {
  if (link.revokedAt) return "revoked";
  if (link.usedAt) return "used";
  return link.expiresAt <= now ? "expired" : "active";
}

function newCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return CODE_PREFIX + btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The code as stored: its SHA-256. 256 random bits need no slow hash; the table alone opens nothing. */
async function hashCode(code: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(code)));
}

/** Why production makes no link without the service's public address (docs/errors.md, "Status codes"). */
export const PUBLIC_BASE_URL_MISSING = "Portal links are unavailable: this service's operator has not set " +
  "PUBLIC_BASE_URL, the address links point at";

/**
 * Where a link's url starts: the service's public address, `PUBLIC_BASE_URL` (`publicBaseUrl` of infra/config.ts),
 * never the address a request names: its Host is the caller's to write, and a link would carry its code to whatever
 * host that said. Without it, production refuses (503, naming the setting: the operator's to fix, and not kept by an
 * Idempotency-Key, so the same request succeeds once it is set); development and test take `requestOrigin`, the
 * address a laptop was reached at. Asked before the link is made, so a refusal leaves none behind.
 */
export function portalLinkBase(
  settings: { publicBaseUrl: string | null; appEnv: string },
  requestOrigin: () => string,
): string {
  if (settings.publicBaseUrl !== null) return settings.publicBaseUrl;
  if (settings.appEnv === "production") throw new ApiError(503, { detail: PUBLIC_BASE_URL_MISSING });
  return requestOrigin();
}

/** A link's url: its console page under `base`, the code after `#`, which a browser sends to no server or log. */
export function portalLinkUrl(base: string, linkId: string, code: string): string {
  return `${base}/console/portal/${linkId}#code=${code}`;
}

/** Where a link's logo is served: under its page, on this service's origin, which the page's `img-src 'self'` allows. */
export function portalLogoPath(linkId: string): string {
  return `/console/portal/${linkId}/logo`;
}

/**
 * Makes a link of `companyId` whose code opens until `expiresIn` seconds from now, once, a session of
 * `sessionSeconds`; `allowedOrigins` are already parsed (portal_origins.ts). The code is returned this once: only its
 * hash is kept.
 */
export async function createPortalLink(
  sql: Sql,
  companyId: string,
  input: { allowedOrigins: string[]; expiresIn: number; sessionSeconds: number; branding?: BrandingInput },
): Promise<{ link: PortalLink; code: string }> {
  const brand = input.branding ?? {};
  const [{ kept }] = await sql<{ kept: number }[]>`
    select count(*)::int as kept from (
      select 1 from portal_links where company_id = ${companyId} limit ${MAX_KEPT_LINKS}
    ) as links`;
  if (kept >= MAX_KEPT_LINKS) {
    throw unprocessable(
      `quota exceeded: at most ${MAX_KEPT_LINKS} portal links per company are kept, each until a day after its ` +
        "session or its unused code ended",
    );
  }
  const code = newCode();
  const [row] = await sql<LinkRow[]>`
    insert into portal_links (id, company_id, code_hash, allowed_origins, expires_at, session_seconds,
                              brand_name, brand_accent_color, brand_support_url, brand_logo, brand_logo_type)
    values (${newId()}, ${companyId}, ${await hashCode(code)}, ${input.allowedOrigins}::text[],
            now() + make_interval(secs => ${input.expiresIn}), ${input.sessionSeconds},
            ${brand.name ?? null}, ${brand.accentColor?.toLowerCase() ?? null}, ${brand.supportUrl ?? null},
            ${brand.logo?.bytes ?? null}, ${brand.logo?.type ?? null})
    returning ${sql.unsafe(COLUMNS)}`;
  return { link: toLink(row), code };
}

/** The link `id` of the company; another company's, or none, is a 404. */
export async function getPortalLink(sql: Sql, companyId: string, id: string): Promise<PortalLink> {
  const [row] = await sql<LinkRow[]>`
    select ${sql.unsafe(COLUMNS)} from portal_links where id = ${id} and company_id = ${companyId}`;
  if (!row) throw notFound();
  return toLink(row);
}

/**
 * Revokes the link `id` of the company: its code opens nothing any more and the session it opened, if any, ends on
 * every instance (the sessions_revoked trigger, sql/0021). Revoking twice answers the link as it is. In one statement,
 * so a code exchanged at the same moment is either refused or its session ended.
 */
export async function revokePortalLink(sql: Sql, companyId: string, id: string): Promise<PortalLink> {
  const [row] = await sql<LinkRow[]>`
    with revoked as (
      update portal_links set revoked_at = coalesce(revoked_at, now())
      where id = ${id} and company_id = ${companyId}
      returning ${sql.unsafe(COLUMNS)}, session_id
    ), ended as (
      update sessions set revoked_at = now()
      where id = (select session_id from revoked) and company_id = ${companyId} and revoked_at is null
    )
    select ${sql.unsafe(COLUMNS)} from revoked`;
  if (!row) throw notFound();
  return toLink(row);
}

export type PortalSession = { jwt: string; companyId: string; linkId: string; expiresAt: Date };

/**
 * Exchanges a code for a portal session: once, before the link expires, unless it was revoked; null otherwise,
 * whichever it was. The code is looked up by its SHA-256, so the time taken tells nothing of how close a guess came;
 * marking the link used and opening its session is one statement, so of two exchanges at once only one gets a session.
 * The session lasts the link's `session_seconds`, at most `jwtMaxTtlSeconds`.
 */
export async function exchangePortalCode(
  sql: Sql,
  settings: TokenSettings,
  code: string,
): Promise<PortalSession | null> {
  // a code of another form is hashed all the same: it costs what a wrong one costs
  const hash = await hashCode(code);
  if (!CODE_RE.test(code)) return null;
  const sessionId = newId();
  const [row] = await sql<{ id: string; company_id: string; session_expires_at: Date; seconds: string }[]>`
    with used as (
      update portal_links set used_at = now(), session_id = ${sessionId},
        session_expires_at = now() + make_interval(secs => least(session_seconds, ${settings.jwtMaxTtlSeconds}))
      where code_hash = ${hash} and used_at is null and revoked_at is null and expires_at > now()
      returning id, company_id, session_expires_at, least(session_seconds, ${settings.jwtMaxTtlSeconds}) as seconds
    ), opened as (
      insert into sessions (id, company_id, expires_at)
      select ${sessionId}, company_id, session_expires_at from used
    )
    select * from used`;
  if (!row) return null;
  const jwt = await signToken(settings, row.company_id, Number(row.seconds), sessionId, { portal: true });
  return { jwt, companyId: row.company_id, linkId: row.id, expiresAt: row.session_expires_at };
}

/** A link whose page still opens: not revoked, and its code not expired unused nor its session over. */
const PAGE_OPENS = "revoked_at is null and ((used_at is null and expires_at > now()) or session_expires_at > now())";

/**
 * What the console page of link `id` needs before anyone signs in: the origins that may frame it and the branding it
 * wears; null when the link is unknown, revoked, or over (its code expired unused, or its session past its end). The
 * page is anonymous: the link's id is all it has, and what it learns is what the link's own page shows anyway.
 */
export async function portalPage(
  sql: Sql,
  id: string,
): Promise<{ allowedOrigins: string[]; branding: Branding } | null> {
  const [row] = await sql<(BrandRow & { allowed_origins: string[] })[]>`
    select allowed_origins, ${sql.unsafe(BRAND_COLUMNS)} from portal_links where id = ${id} and ${
    sql.unsafe(PAGE_OPENS)
  }`;
  return row ? { allowedOrigins: row.allowed_origins, branding: toBranding(row) } : null;
}

/** The logo of link `id`, served while its page opens; null without one, or once the link is over. */
export async function portalLogo(sql: Sql, id: string): Promise<Logo | null> {
  const [row] = await sql<{ brand_logo: Uint8Array | null; brand_logo_type: LogoType | null }[]>`
    select brand_logo, brand_logo_type from portal_links where id = ${id} and ${sql.unsafe(PAGE_OPENS)}`;
  if (!row?.brand_logo || !row.brand_logo_type) return null;
  return { type: row.brand_logo_type, bytes: row.brand_logo };
}

/**
 * Deletes links whose session, or whose code when it was never used, ended more than a day ago, in one bounded batch;
 * returns how many. A session ends after its code expired (a code opens only before), so the index on `expires_at`
 * narrows the scan to links at least that old.
 */
export async function prunePortalLinks(sql: Sql, batchSize = 1000): Promise<number> {
  const { count } = await sql`
    delete from portal_links where id in (
      select id from portal_links
      where expires_at < now() - interval '1 day' and coalesce(session_expires_at, expires_at) < now() - interval '1 day'
      limit ${batchSize}
    )`;
  return count;
}
