/**
 * The request a delivery's attempts send, as the delivery detail shows it (docs/webhooks.md, "What was sent"): the body
 * and headers are not stored, so they are rendered again here, from the event and the endpoint as they are now, with
 * every secret masked. Its own file: it reads what the sender (sender.ts) sends, and only the detail needs it.
 */

import type { SqlOrTransaction } from "../../infra/db.ts";
import type { SecretBox } from "../../infra/secret_box.ts";
import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import { presentCustomHeaders } from "../endpoints/custom_headers.ts";
import { renderBody } from "./body.ts";
import { USER_AGENT } from "./sender.ts";

/** What stands in the body for the endpoint's signing secret (inject_secret_in_body). */
export const MASKED_SECRET = "[signing secret]";
/** What stands for the values made at each attempt: its signatures and their timestamp. */
export const MADE_PER_ATTEMPT = "[made at each attempt]";

/** The body and headers an attempt of this record sends, masked: the injected secret, secret headers, bearer token. */
export async function sentRequest(
  sql: SqlOrTransaction,
  box: SecretBox,
  companyId: string,
  delivery: {
    id: string;
    type: string;
    endpoint_id: string;
    payload: Record<string, unknown>;
    inserted_at: Date;
    /** The batch that carries it (docs/webhooks.md, "Batches"): its requests' `webhook-id`. */
    batch_id?: string | null;
  },
): Promise<{ body: string; headers: Record<string, string> } | undefined> {
  const [endpoint] = await sql<EndpointRow[]>`
    select * from webhook_endpoints where company_id = ${companyId} and id = ${delivery.endpoint_id}`;
  // an endpoint removed with its company's data leaves nothing to render the request from
  if (!endpoint) return undefined;
  // the record is written with its event's instant, which the body's `timestamp` is (claim_data.ts)
  const body = renderBody({ ...endpoint, secret: MASKED_SECRET }, {
    id: delivery.id,
    type: delivery.type,
    data: delivery.payload,
    occurredAt: delivery.inserted_at,
  });
  // secret values as the endpoint object shows them (maskSecret)
  const custom = await presentCustomHeaders(box, endpoint);
  const hmac = endpoint.sealed_secret !== null;
  return {
    body,
    headers: {
      // the endpoint's own headers first, as the sender puts them: none of their names is one of ours
      ...custom.headers,
      ...custom.secret_headers,
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      ...(hmac ? { "service-signature": MADE_PER_ATTEMPT } : {}),
      // a batch's request is signed under the batch's id; the record's body is its element of the array
      "webhook-id": delivery.batch_id ?? delivery.id,
      "webhook-timestamp": MADE_PER_ATTEMPT,
      "webhook-signature": MADE_PER_ATTEMPT,
      ...(endpoint.oauth2 ? { authorization: "Bearer [token]" } : {}),
    },
  };
}
