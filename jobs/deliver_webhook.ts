import type { Task } from "graphile-worker";
import { renderBody } from "../domain/webhooks/body.ts";
import { wakeEndpoints } from "../domain/webhooks/deliveries.ts";
import { type ClaimedDelivery, claimNext, recordAndClaimNext, releaseClaim } from "../domain/webhooks/dispatch.ts";
import { type EndpointRow, failPendingDeliveries, openSecrets } from "../domain/webhooks/endpoints.ts";
import type { Config } from "../domain/platform/config.ts";
import type { Deps } from "../domain/platform/deps.ts";
import { UUID_RE } from "../domain/platform/ids.ts";
import { log } from "../domain/platform/log.ts";
import { secretBoxFor } from "../domain/platform/secret_box.ts";
import { metrics } from "../domain/platform/metrics.ts";
import { signPayload } from "../domain/webhooks/signature.ts";
import { sendWebhook } from "../domain/webhooks/sender.ts";

/**
 * A job hands its worker back after this long or this many deliveries, leaving a job to carry on: one busy endpoint
 * does not hold a worker for ever, and a graceful shutdown waits for at most one attempt.
 */
const RUN_BUDGET_MS = 2_000;
const RUN_BUDGET_DELIVERIES = 200;
/** Slack beyond the request timeout before a lease (slot and record) counts as abandoned by a crashed worker. */
const LEASE_SLACK_MS = 30_000;

/** The `deliver_webhook` task: drains one endpoint (see domain/webhook_dispatch.ts for the protocol). */
export function deliverWebhookTask(deps: Deps): Task {
  return async (payload, helpers) => {
    const endpointId = (payload as { endpoint_id?: unknown } | null)?.endpoint_id;
    if (typeof endpointId !== "string" || !UUID_RE.test(endpointId)) {
      helpers.logger.error("deliver_webhook: bad payload", { payload });
      return;
    }
    await drainEndpoint(deps, endpointId, helpers.abortSignal);
  };
}

/** Delivers what is due for one endpoint until nothing is, every slot is busy, or the run budget is spent. */
export async function drainEndpoint(
  { sql, config, processId }: Pick<Deps, "sql" | "config" | "processId">,
  endpointId: string,
  signal?: AbortSignal,
) {
  const started = performance.now();
  const lease = { leaseMs: config.webhookTimeoutMs + LEASE_SLACK_MS, owner: processId };
  let claim = await claimNext(sql, endpointId, lease);
  for (let delivered = 0; claim; delivered++) {
    const { endpoint, delivery } = claim;
    if (endpoint.status !== "active") {
      await failPendingDeliveries(sql, endpoint.company_id, [endpoint.id]);
      return;
    }
    if (!delivery) return;
    if (delivered >= RUN_BUDGET_DELIVERIES || performance.now() - started > RUN_BUDGET_MS || signal?.aborted) {
      // Hand over to a fresh job rather than hold this worker.
      await releaseClaim(sql, endpointId, delivery);
      await wakeEndpoints(sql, [endpointId]);
      return;
    }
    const outcome = await attempt(config, endpoint, delivery, signal);
    const recorded = await recordAndClaimNext(sql, endpointId, delivery, outcome, {
      ...lease,
      retrySchedule: config.retrySchedule,
    });
    observeAttempt(delivery.id, outcome.durationMs, recorded.status);
    log.debug("webhook attempt", {
      endpoint_id: endpointId,
      delivery_id: delivery.id,
      http_status: outcome.httpStatus,
      duration_ms: Math.round(outcome.durationMs),
      status: recorded.status,
    });
    // The slot was freed when nothing more was due then: claim once more, after that release (domain/webhook_dispatch.ts).
    claim = recorded.next?.delivery ? recorded.next : await claimNext(sql, endpointId, lease);
  }
}

/** Delivery record ids are UUIDv7, made when the event was emitted: their first 48 bits are that instant in ms. */
const emittedAt = (uuidV7: string) => parseInt(uuidV7.slice(0, 8) + uuidV7.slice(9, 13), 16);

function observeAttempt(deliveryId: string, durationMs: number, status: string | null) {
  const outcome = status === "succeeded" ? "succeeded" : status === "failed" ? "failed" : "failed_attempt";
  metrics.deliveries.inc({ outcome });
  metrics.deliveryDuration.observe({}, durationMs / 1000);
  if (outcome === "succeeded") metrics.deliveryLatency.observe({}, (Date.now() - emittedAt(deliveryId)) / 1000);
}

/** Renders, signs and POSTs one delivery. */
async function attempt(config: Config, endpoint: EndpointRow, delivery: ClaimedDelivery, signal?: AbortSignal) {
  const { secret, previous } = await openSecrets(await secretBoxFor(config), endpoint);
  const body = renderBody({ ...endpoint, secret }, delivery);
  const signature = await signPayload(body, secret, { previousSecrets: previous.map((p) => p.secret) });
  return await sendWebhook(endpoint.url, body, { "service-signature": signature }, {
    timeoutMs: config.webhookTimeoutMs,
    allowPrivateUrls: config.allowPrivateUrls,
    signal,
  });
}
