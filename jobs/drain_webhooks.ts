import type { Task } from "graphile-worker";
import type { Deps } from "../domain/infra/deps.ts";
import { UUID_RE } from "../domain/basics/ids.ts";
import { whileUnreachable } from "../domain/infra/db.ts";
import { claimNext } from "../domain/webhooks/delivery/claim.ts";
import { leaseMsFor } from "../domain/webhooks/delivery/lease.ts";
import { attemptRecorder } from "../domain/webhooks/delivery/recorder.ts";
import { releaseClaim } from "../domain/webhooks/delivery/release.ts";
import { drainEndpoint, RUN_BUDGET } from "../domain/webhooks/drain.ts";
import { failPendingDeliveries } from "../domain/webhooks/endpoints.ts";
import { TASKS, wakeEndpoints } from "../domain/webhooks/queue.ts";
import { sendDelivery } from "../domain/webhooks/sender.ts";
import { secretBoxFor } from "../domain/infra/secret_box.ts";

/** How long a drain job waits for an unreachable database before it fails. */
const OUTAGE_PATIENCE_MS = 60_000;

/** The drain job: runs the drain loop for one endpoint with the steps made of Postgres and the HTTP sender. */
export function deliverWebhookTask({ sql, config, processId }: Deps): Task {
  const lease = { leaseMs: leaseMsFor(config.webhookTimeoutMs), owner: processId };
  // One recorder per process: attempts finishing together are written in one statement.
  const recorder = attemptRecorder(sql, {
    ...lease,
    retrySchedule: config.retrySchedule,
    disableAfterSeconds: config.webhookDisableAfterSeconds,
  });
  const sending = { timeoutMs: config.webhookTimeoutMs, allowPrivateUrls: config.allowPrivateUrls };
  return async (payload, helpers) => {
    const endpointId = (payload as { endpoint_id?: unknown } | null)?.endpoint_id;
    if (typeof endpointId !== "string" || !UUID_RE.test(endpointId)) {
      helpers.logger.error(`${TASKS.deliverWebhook}: bad payload`, { payload });
      return;
    }
    // While the database is away (a restart, a failover) each step waits for it rather than failing the job, whose
    // failure graphile-worker could not record either (README, Operations, When the database goes away).
    const patiently = <T>(step: () => Promise<T>) => whileUnreachable(step, Date.now() + OUTAGE_PATIENCE_MS);
    await drainEndpoint({
      claim: () => patiently(() => claimNext(sql, endpointId, lease)),
      send: async (endpoint, delivery, signal) =>
        sendDelivery(await secretBoxFor(config), endpoint, delivery, { ...sending, signal }),
      recordAndClaimNext: (delivery, result, endpoint) => recorder.record(endpoint, delivery, result),
      release: (delivery) => patiently(() => releaseClaim(sql, endpointId, delivery)),
      wake: (slot) => patiently(() => wakeEndpoints(sql, [endpointId], slot)),
      failPending: (endpoint) => patiently(() => failPendingDeliveries(sql, endpoint.company_id, [endpoint.id])),
    }, { budget: RUN_BUDGET, now: () => performance.now(), signal: helpers.abortSignal });
  };
}
