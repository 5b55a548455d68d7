/**
 * A batch's body (docs/webhooks.md, "Batches"): the JSON array of the bodies its records would be sent one by one,
 * and the size bound that stops a batch growing. Pure, apart from the sender and the claim, so the shape and the bound
 * are tested without a receiver.
 */

import type { EndpointRow } from "../endpoints/endpoint_row.ts";
import { renderBody } from "./body.ts";
import type { BatchedRecord } from "./statements/claim_data.ts";

/** A batch's array is at most this many bytes: a batch stops growing before it would pass it. */
export const MAX_BATCH_BYTES = 1024 * 1024;

/**
 * The bodies of a batch's records, as each would be sent alone (renderBody: the endpoint's payload type, version and
 * event mapping). A batched endpoint injects no secret in its bodies (the rules refuse it: batch_rules.ts).
 */
export function batchBodies(endpoint: EndpointRow, records: BatchedRecord[]): string[] {
  return records.map((r) => renderBody({ ...endpoint, secret: "" }, r));
}

/** How many of `bodies`, from the first, fit one array of at most `MAX_BATCH_BYTES` (at least one: a body alone goes). */
export function fittingCount(bodies: string[], maxBytes = MAX_BATCH_BYTES): number {
  const encoder = new TextEncoder();
  let bytes = 1; // "["
  for (let i = 0; i < bodies.length; i++) {
    // the body and the "," or "]" after it
    bytes += encoder.encode(bodies[i]).length + 1;
    if (bytes > maxBytes) return Math.max(1, i);
  }
  return bodies.length;
}

/** The request body of a batch: its records' bodies in one JSON array, in the batch's (event) order. */
export function batchBody(bodies: string[]): string {
  return `[${bodies.join(",")}]`;
}
