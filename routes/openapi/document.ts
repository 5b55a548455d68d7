/**
 * The prose of the OpenAPI document: what a reader of `/docs` or a client generator needs before the first call
 * and cannot learn from one operation (how to get a token, how webhooks are signed). Details live in docs/api.md and
 * docs/webhooks.md; this says enough to start.
 */
export const API_DESCRIPTION = `Register customers and their bank accounts, move money, and receive signed webhooks.

## Authentication

Every \`/api\` call but sign-in carries \`Authorization: Bearer <token>\`: an HS256 JWT whose \`sub\` is your company
id. A user of your company (the operator creates it with \`deno task user:create\`) gets one valid 24 hours from
\`POST /api/v1/sign_in\` with its username and password, and ends it with \`POST /api/v1/sign_out\`. On a development
machine \`deno task token\` prints one for the development company, the same company on every call
(\`deno task token --new\` for a company of its own, \`deno task token <company_id>\` for a given one). In \`/docs\`,
press **Authorize** and paste the token.

Every answer carries \`x-request-id\`: the one you sent (1 to 128 of \`A-Za-z0-9._:-\`) or a fresh UUID; quote it
when you report a problem. Errors always have the shape \`{"errors": {...}}\`.

## Webhooks and their signature

Endpoints (\`/api/v2/notifications/endpoints\`) receive a \`POST\` of a JSON event for every change they subscribe to,
signed with the endpoint's secret (64 hex characters, in the endpoint's \`secret\`):

    service-signature: t=<unix seconds>,v1=<hex>
    service-signature: t=<unix seconds>,v1=<hex>,v0=<hex>     (24 hours after rotate_secret)

- \`v1\` is HMAC-SHA256 of the text \`<t>.<raw body>\` keyed with **the secret as text** (its 64 characters as UTF-8),
  in lowercase hex; \`v0\` the same with the previous secret while it still signs.
- To verify: take the raw body before any JSON parsing, compute the HMAC with each secret you accept, compare with
  \`v1\` and \`v0\` in constant time, and refuse a \`t\` more than 5 minutes from your clock.
- Every delivery also carries the [Standard Webhooks](https://www.standardwebhooks.com) headers \`webhook-id\`,
  \`webhook-timestamp\` and \`webhook-signature\` (\`v1,<base64 HMAC of "<id>.<timestamp>.<raw body>">\`, one per
  secret still signing), so any Standard Webhooks library verifies it, with the secret in its "raw" format.
- Answer 2xx within the timeout to acknowledge; anything else is retried. Delivery records and their attempts are
  under \`/api/v2/notifications/events\`.
- A body's \`id\` and its \`webhook-id\` header are its delivery record's id, not the event's:
  \`GET /api/v2/notifications/events/{id}\` answers the record, whose \`event_id\` names the event
  (\`?event_id=\` lists its records at every endpoint; docs/webhooks.md, "Which id is which").

The retry schedule, ordering, and a receiver in TypeScript are in docs/webhooks.md of the repository.`;

/** The tags of the document, in the order `/docs` shows them. */
export const TAGS = [
  { name: "Authentication", description: "Sign in with a username and password for a 24-hour bearer token" },
  { name: "People", description: "Customers (subjects) of your company: registration, update, status" },
  { name: "Company customers", description: "Customers that are companies: CNPJ, RFC, NIT, RUT or another tax id" },
  { name: "Documents", description: "Documents that clear a customer for higher amounts" },
  { name: "Bank accounts", description: "Customer accounts (BRL, MXN, COP) and your company's (USD, EUR)" },
  { name: "Transactions", description: "Money a customer moved, and the totals of the year" },
  { name: "Wires", description: "Outgoing transfers; correcting the account of one the bank refused" },
  { name: "Webhook endpoints", description: "Where events are delivered, how, and with which secret" },
  {
    name: "Pull streams",
    description:
      "Events read with a cursor instead of pushed to a URL: long polling, Server-Sent Events, acknowledgements",
  },
  { name: "Webhook events", description: "Delivery records: list, inspect, acknowledge, retry" },
  { name: "Portal links", description: "A short-lived link to the console for your customer's own webhook endpoints" },
  {
    name: "Sandbox",
    description: "Play the payment rails and the back office (served only with SANDBOX on); the events are real",
  },
  { name: "Operations", description: "Liveness, readiness and metrics; no company token" },
];
