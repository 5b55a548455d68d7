/** Webhook endpoints and their delivery records, as an integrator registers and lists them; events as the rails emit them. */
import assert from "node:assert/strict";
import { emitEvent, type EventType } from "../../domain/webhooks/outbox/events.ts";
import type { Company, Reply, TestContext } from "./helpers.ts";
import type { httpCompany } from "./service_process.ts";

export const ENDPOINTS = "/api/v2/notifications/endpoints";
export const EVENTS = "/api/v2/notifications/events";

/** A delivery record as the events listing shows it. */
export type DeliveryRecord = {
  id: string;
  event_id: string;
  endpoint_id: string;
  type: string;
  status: string;
  attempts_count: number;
  next_attempt_at: string | null;
  last_error: string | null;
  // deno-lint-ignore no-explicit-any
  payload: Record<string, any>;
  event_created_at: string;
  inserted_at: string;
};

/** Registers an endpoint at `url` (201, or the assertion names the body) and answers it as the API did. */
export async function createEndpoint(company: Company, url: string, settings: Record<string, unknown> = {}) {
  const res = await company.post(ENDPOINTS, { url, ...settings });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** The same at a running service (`base`), for an integrator calling it over HTTP. */
export async function createEndpointAt(
  company: Awaited<ReturnType<typeof httpCompany>>,
  base: string,
  url: string,
  settings: Record<string, unknown> = {},
) {
  const res = await company.call(base, "POST", ENDPOINTS, { url, ...settings });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** The listing of one endpoint's delivery records, oldest first, up to 100: the reply, unchecked. */
export function listRecords(company: Company, endpointId: string): Promise<Reply> {
  return company.get(`${EVENTS}?endpoint_id=${endpointId}&order_by=asc&per_page=100`);
}

/** One endpoint's delivery records, oldest first, up to 100 (the listing's status is not checked). */
export async function recordsOf(company: Company, endpointId: string): Promise<DeliveryRecord[]> {
  return (await listRecords(company, endpointId)).body.data;
}

/** An event for `company`, emitted in a transaction of its own as the rails emit them. */
export function emit(ctx: TestContext, company: Company, type: EventType, data: Record<string, unknown>) {
  return ctx.sql.begin((tx) => emitEvent(tx, company.id, type, data));
}
