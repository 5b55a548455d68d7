/**
 * What a portal session's token may call (docs/webhooks.md, "Portal links"): what the owner of an endpoint does, one
 * endpoint at a time, and sign-out (the portal's Close). A file of its own because it is the one list that bounds what
 * a platform's customer can do with the company; `requireCompany` (auth.ts) holds every portal token to it before
 * anything else of the request runs.
 */

/** Said to a portal token outside its routes: 403, since the token is valid. */
export const PORTAL_FORBIDDEN = "A portal session may only manage the company's webhook endpoints and their deliveries";

const ID = "[^/]+";
const N = "/api/v2/notifications";

/**
 * Each method and path a portal session may call, by name, so that a route added later is the operator's until it is
 * listed here. Not listed, for the platform alone: portal links and their exchange (a link made from a portal would
 * outlive the portal), and disabling every endpoint of the company at once (`DELETE .../endpoints`), which reaches
 * endpoints the customer never set up.
 */
const PORTAL_ROUTES: [method: string, path: RegExp][] = [
  ["GET", new RegExp(`^${N}/endpoints$`)], // list
  ["POST", new RegExp(`^${N}/endpoints$`)], // create
  ["GET", new RegExp(`^${N}/endpoints/${ID}$`)],
  ["PUT", new RegExp(`^${N}/endpoints/${ID}$`)], // edit
  ["DELETE", new RegExp(`^${N}/endpoints/${ID}$`)], // disable one
  ["POST", new RegExp(`^${N}/endpoints/${ID}/(rotate_secret|enable|recover|test)$`)],
  ["GET", new RegExp(`^${N}/endpoints/${ID}/stats$`)],
  ["GET", new RegExp(`^${N}/events$`)], // deliveries
  ["GET", new RegExp(`^${N}/events/${ID}$`)],
  ["PUT", new RegExp(`^${N}/events/${ID}/acknowledge$`)],
  ["POST", new RegExp(`^${N}/events/${ID}/retry$`)],
  ["GET", new RegExp(`^${N}/event_types$`)], // the catalogue, which the event types are chosen from
  ["POST", /^\/api\/v1\/sign_out$/], // Close
];

/** Whether a portal session's token may call `method` `path` (HEAD as GET). */
export function portalMayCall(method: string, path: string): boolean {
  const m = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  return PORTAL_ROUTES.some(([allowed, pattern]) => allowed === m && pattern.test(path));
}
