/**
 * The JSON body one endpoint receives for one delivery record, by its body settings (docs/webhooks.md, "Bodies"). Pure,
 * and apart from sender.ts, so the shapes are tested without a receiver.
 */

import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import { payloadVersionOf, toVersion } from "../outbox/payload_versions.ts";

/**
 * The endpoint's settings, its signing secret in plain text (openSecrets) for inject_secret_in_body, and the payload
 * version it is pinned to (absent or null: the first).
 */
type BodySettings =
  & Pick<EndpointRow, "event_payload_type" | "wrap_in_notification" | "inject_secret_in_body" | "event_mapping">
  & { secret: string; payload_version?: string | null };

/**
 * The JSON body one endpoint receives for one delivery record (docs/webhooks.md, Bodies):
 * - snapshot (default): `{id, type, data}`, `id` being the delivery record id;
 * - thin: `{id, type}`;
 * - wrap_in_notification: `{notification: {type, ...data}}` (thin: `{notification: {id, type}}`), the format of
 *   the earlier webhook generation, for receivers that still read it;
 * - inject_secret_in_body adds `secret`, inside `notification` when wrapped;
 * - event_mapping renames the outbound `type` only (the record keeps the real type);
 * - payload_version shapes the snapshot body (payload_versions.ts): built in the latest shape, with the instant the
 *   event happened (`occurredAt`), and stepped down to the endpoint's version. Thin and wrapped bodies are the shapes
 *   original interface fixes (docs/webhooks.md, "Bodies"), in every version.
 */
export function renderBody(
  endpoint: BodySettings,
  delivery: { id: string; type: string; data: Record<string, unknown>; occurredAt?: Date | null },
): string {
  const type = endpoint.event_mapping?.[delivery.type] ?? delivery.type;
  const thin = endpoint.event_payload_type === "thin";
  const secret = endpoint.inject_secret_in_body ? { secret: endpoint.secret } : {};
  if (endpoint.wrap_in_notification) {
    const fields = thin ? { id: delivery.id } : withoutKeys(delivery.data, ["type", "secret"]);
    return JSON.stringify({ notification: { type, ...fields, ...secret } });
  }
  if (thin) return JSON.stringify({ id: delivery.id, type, ...secret });
  // the event's instant comes with every claimed delivery (claim_data.ts); a body rendered by hand may lack it. Kept a
  // Date until the body is in its version: its text costs about 1.5 µs, which a version without `timestamp` (every
  // endpoint that never chose one) does not pay (BENCH_ONLY=payload_versions)
  const timestamp = delivery.occurredAt ? { timestamp: delivery.occurredAt } : {};
  const body = toVersion(
    { id: delivery.id, type, ...timestamp, data: delivery.data, ...secret },
    payloadVersionOf(endpoint.payload_version),
  );
  if (body.timestamp instanceof Date) body.timestamp = body.timestamp.toISOString();
  return JSON.stringify(body);
}

/** Event data never overrides the envelope's own keys. */
function withoutKeys(data: Record<string, unknown>, keys: string[]) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) if (!keys.includes(k)) out[k] = v;
  return out;
}
