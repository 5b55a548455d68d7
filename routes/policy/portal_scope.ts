/**
 * What a portal session's token may call (docs/webhooks.md, "Portal links"): the webhook routes the console uses, and
 * sign-out. A file of its own because it is the one list that bounds what a platform's customer can do with the
 * company; `requireCompany` (auth.ts) holds every portal token to it before anything else of the request runs.
 */

/** Said to a portal token outside its routes: 403, since the token is valid. */
export const PORTAL_FORBIDDEN = "A portal session may only manage the company's webhook endpoints and their deliveries";

const WEBHOOK_ROUTES = "/api/v2/notifications/";
/** Portal links are the platform's: a portal session neither makes another (which would never end) nor ends one. */
const NOT_FOR_PORTALS = ["/api/v2/notifications/portal_links", "/api/v2/notifications/portal_sessions"];
const SIGN_OUT = "/api/v1/sign_out";

/** Whether a portal session's token may call `path` (any method): the webhook routes but portal links, and sign-out. */
export function portalMayCall(path: string): boolean {
  if (path === SIGN_OUT) return true;
  if (!path.startsWith(WEBHOOK_ROUTES)) return false;
  return !NOT_FOR_PORTALS.some((p) => path === p || path.startsWith(`${p}/`));
}
