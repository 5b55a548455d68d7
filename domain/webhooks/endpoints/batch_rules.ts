/**
 * The rules of an endpoint's `batch` setting (docs/webhooks.md, "Batches"): its bounds, and the settings it cannot go
 * with, checked on the values the endpoint will have after a create or an update. A file of its own, as the throttle's
 * rules are (throttle.ts), so the route's schema and the endpoint operations share the bounds.
 */

import type { ErrorBag } from "../../basics/errors.ts";
import type { BatchSetting } from "./endpoint_row.ts";

export const MIN_BATCH_EVENTS = 2;
export const MAX_BATCH_EVENTS = 100;
export const MAX_BATCH_WAIT_MS = 10_000;

/** What a batch cannot go with, as the endpoint will be after the request. */
export type BatchCompanions = {
  transport: string;
  wrap_in_notification: boolean;
  inject_secret_in_body: boolean;
  rate_limit: number | null;
};

/**
 * Adds to `errors`, under `batch`, what refuses it: bounds (the schema checks them too), a broker url (a message and
 * its routing key name one event type), `wrap_in_notification` or `inject_secret_in_body` (the Facilitapay parser
 * those serve reads one notification per request), and `rate_limit` (it counts requests of one event).
 */
export function checkBatch(errors: ErrorBag, batch: BatchSetting | null | undefined, companions: BatchCompanions) {
  if (!batch) return;
  const { max_events, max_wait_ms } = batch;
  if (!Number.isInteger(max_events) || max_events < MIN_BATCH_EVENTS || max_events > MAX_BATCH_EVENTS) {
    errors.add("batch", `max_events must be an integer from ${MIN_BATCH_EVENTS} to ${MAX_BATCH_EVENTS}`);
  }
  if (!Number.isInteger(max_wait_ms) || max_wait_ms < 0 || max_wait_ms > MAX_BATCH_WAIT_MS) {
    errors.add("batch", `max_wait_ms must be an integer from 0 to ${MAX_BATCH_WAIT_MS}`);
  }
  if (companions.transport !== "http") {
    errors.add("batch", "is only for an https url: a broker message carries one event, named by its routing key");
  }
  if (companions.wrap_in_notification) {
    errors.add("batch", "cannot go with wrap_in_notification: that format is read one notification per request");
  }
  if (companions.inject_secret_in_body) {
    errors.add("batch", "cannot go with inject_secret_in_body: that format is read one notification per request");
  }
  if (companions.rate_limit != null) {
    errors.add("batch", "cannot go with rate_limit, which counts requests of one event each");
  }
}

/** The setting as stored: only its two keys. */
export function storedBatch(batch: BatchSetting | null | undefined): BatchSetting | null {
  return batch ? { max_events: batch.max_events, max_wait_ms: batch.max_wait_ms } : null;
}
