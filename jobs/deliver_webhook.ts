import type { Task } from "graphile-worker";
import type { Deps } from "../domain/platform/deps.ts";
import { UUID_RE } from "../domain/platform/ids.ts";
import { claimNext, leaseMsFor, recordAndClaimNext, releaseClaim } from "../domain/webhooks/dispatch.ts";
import { drainEndpoint, RUN_BUDGET } from "../domain/webhooks/drain.ts";
import { failPendingDeliveries } from "../domain/webhooks/endpoints.ts";
import { TASKS, wakeEndpoints } from "../domain/webhooks/queue.ts";
import { sendDelivery } from "../domain/webhooks/sender.ts";
import { secretBoxFor } from "../domain/platform/secret_box.ts";

/** The drain job: runs the drain loop for one endpoint with the steps made of Postgres and the HTTP sender. */
export function deliverWebhookTask({ sql, config, processId }: Deps): Task {
  const lease = { leaseMs: leaseMsFor(config.webhookTimeoutMs), owner: processId };
  const recording = {
    ...lease,
    retrySchedule: config.retrySchedule,
    disableAfterSeconds: config.webhookDisableAfterSeconds,
  };
  const sending = { timeoutMs: config.webhookTimeoutMs, allowPrivateUrls: config.allowPrivateUrls };
  return async (payload, helpers) => {
    const endpointId = (payload as { endpoint_id?: unknown } | null)?.endpoint_id;
    if (typeof endpointId !== "string" || !UUID_RE.test(endpointId)) {
      helpers.logger.error(`${TASKS.deliverWebhook}: bad payload`, { payload });
      return;
    }
    await drainEndpoint({
      claim: () => claimNext(sql, endpointId, lease),
      send: async (endpoint, delivery, signal) =>
        sendDelivery(await secretBoxFor(config), endpoint, delivery, { ...sending, signal }),
      recordAndClaimNext: (delivery, result) => recordAndClaimNext(sql, endpointId, delivery, result, recording),
      release: (delivery) => releaseClaim(sql, endpointId, delivery),
      wake: (slot) => wakeEndpoints(sql, [endpointId], slot),
      failPending: (endpoint) => failPendingDeliveries(sql, endpoint.company_id, [endpoint.id]),
    }, { budget: RUN_BUDGET, now: () => performance.now(), signal: helpers.abortSignal });
  };
}
