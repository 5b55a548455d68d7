/**
 * The webhook drainers made real: the drain steps built from Postgres statements, the sender and the clock. Apart
 * from domain/webhooks/engine/engine.ts, which takes its steps as given (`DrainSteps`): here they are built from `Deps`.
 */

import type { Deps } from "../domain/infra/deps.ts";
import type { Companion } from "../domain/infra/worker.ts";
import { whileUnreachable } from "../domain/infra/db.ts";
import { secretBoxFor } from "../domain/infra/secret_box.ts";
import { claimNext } from "../domain/webhooks/engine/statements/claim.ts";
import { leaseMsFor } from "../domain/webhooks/engine/statements/lease.ts";
import { attemptRecorder } from "../domain/webhooks/engine/recorder.ts";
import { releaseBatchClaim, releaseClaim, releaseUnheldLeases } from "../domain/webhooks/engine/statements/release.ts";
import { claimBatch, shortenBatch } from "../domain/webhooks/engine/statements/claim_batch.ts";
import { batchBodies, batchBody, fittingCount } from "../domain/webhooks/engine/batches.ts";
import type { Claim, ClaimedDelivery } from "../domain/webhooks/engine/statements/claim_data.ts";
import type { EndpointRow } from "../domain/webhooks/endpoints/endpoint_row.ts";
import { newId } from "../domain/basics/ids.ts";
import { wakeEndpoints } from "../domain/webhooks/outbox/wake.ts";
import { RUN_BUDGET } from "../domain/webhooks/engine/engine.ts";
import { Drainers } from "../domain/webhooks/engine/engine.ts";
import { ConnectionPool } from "../domain/webhooks/engine/connections.ts";
import { TokenCache } from "../domain/webhooks/engine/oauth2_tokens.ts";
import { failPendingDeliveries } from "../domain/webhooks/endpoints/endpoints.ts";
import { sendBatch, sendDelivery } from "../domain/webhooks/engine/sender.ts";
import { publishDelivery } from "../domain/webhooks/engine/publisher.ts";
import { BrokerConnections } from "../domain/webhooks/engine/broker_connections.ts";

/** How long a drain step waits for an unreachable database before the run fails. */
const OUTAGE_PATIENCE_MS = 60_000;

/**
 * The webhook drainers of this process, with the steps made of Postgres statements and the HTTP sender: started and
 * stopped with the worker (domain/infra/worker.ts), WORKER_CONCURRENCY runs at once. Their attempts share the
 * process's keep-alive connections to receivers (docs/webhooks.md, "Connections"), closed when the drainers stop.
 */
export function webhookDrainers({ sql, config, processId }: Deps): Companion {
  const lease = { leaseMs: leaseMsFor(config.webhookTimeoutMs), owner: processId };
  // One recorder per process: attempts finishing together are written in one statement.
  const recorder = attemptRecorder(sql, {
    ...lease,
    retrySchedule: config.retrySchedule,
    disableAfterSeconds: config.webhookDisableAfterSeconds,
    failingAfterAttempts: config.webhookFailingAfterAttempts,
    failingAfterSeconds: config.webhookFailingAfterSeconds,
  });
  const connections = new ConnectionPool();
  // OAuth2 bearer tokens, kept by this process until shortly before they expire (docs/webhooks.md)
  const tokens = new TokenCache();
  // the broker connections of this process, kept per company and broker (docs/webhooks.md, "Destinations")
  const brokers = new BrokerConnections({
    allowPrivateUrls: config.allowPrivateUrls,
    connectTimeoutMs: config.webhookTimeoutMs,
    processId,
  });
  const sending = {
    timeoutMs: config.webhookTimeoutMs,
    allowPrivateUrls: config.allowPrivateUrls,
    connections,
    tokens,
  };
  // While the database is away (a restart, a failover) each step waits for it rather than failing the run
  // (docs/operations.md, "When the database goes away").
  const waitingOutOutages = <T>(step: () => Promise<T>) => whileUnreachable(step, Date.now() + OUTAGE_PATIENCE_MS);
  const drainers: Drainers = new Drainers(sql, {
    concurrency: config.workerConcurrency,
    budget: RUN_BUDGET,
    steps: (endpointId, abort) => {
      // A batched endpoint's claims are its own (claim_batch.ts); the branch is taken on the endpoint's row, so an
      // endpoint without `batch` claims as before. The first claim of a run learns which the endpoint is: claimNext
      // finds no slot of a batched endpoint (its slots are numbered from 2,000,000, sql/0049).
      let batched = false;
      const claimBatched = async (): Promise<Claim | null> => {
        const claim = await waitingOutOutages(() => claimBatch(sql, endpointId, { ...lease, batchId: newId() }));
        batched = Boolean(claim?.endpoint.batch);
        // `batch` removed since the run began: the endpoint's slots are claimNext's again
        if (claim && !batched && claim.endpoint.status === "active") {
          return await waitingOutOutages(() => claimNext(sql, endpointId, lease));
        }
        const delivery = claim?.delivery;
        if (!claim || !delivery?.batch) return claim;
        // a new batch stops growing before its array would pass the size bound (batches.ts); a batch due again
        // keeps what it carried at its first attempt
        const bodies = batchBodies(claim.endpoint, delivery.batch.records);
        const fits = delivery.batch.fresh && delivery.batch.records.length > 1 ? fittingCount(bodies) : bodies.length;
        if (fits < bodies.length) {
          await waitingOutOutages(() => shortenBatch(sql, delivery, fits));
          delivery.batch.records = delivery.batch.records.slice(0, fits);
        }
        return claim;
      };
      return {
        claim: async () => {
          if (batched) return await claimBatched();
          const claim = await waitingOutOutages(() => claimNext(sql, endpointId, lease));
          return claim?.endpoint.batch && !claim.delivery && claim.endpoint.status === "active"
            ? await claimBatched()
            : claim;
        },
        send: async (endpoint, delivery) => {
          if (delivery.batch) {
            const bodies = batchBodies(endpoint, delivery.batch.records);
            return sendBatch(await secretBoxFor(config), endpoint, {
              id: delivery.batch.id,
              body: batchBody(bodies),
              size: bodies.length,
              first: delivery,
            }, { ...sending, signal: abort });
          }
          return await sendOne(endpoint, delivery);
        },
        recordAndClaimNext: async (delivery, result, endpoint) => {
          const recorded = await recorder.record(endpoint, delivery, result);
          drainers.dueAt(recorded.nextAttemptAt);
          return recorded;
        },
        release: (delivery) =>
          waitingOutOutages(() =>
            delivery.batch ? releaseBatchClaim(sql, endpointId, delivery) : releaseClaim(sql, endpointId, delivery)
          ),
        wake: () => waitingOutOutages(() => wakeEndpoints(sql, [endpointId])),
        failPending: (endpoint) =>
          waitingOutOutages(() => failPendingDeliveries(sql, endpoint.company_id, [endpoint.id])),
      };
      // an https endpoint gets a POST, a broker endpoint a message (its transport, sql/0047)
      async function sendOne(endpoint: EndpointRow, delivery: ClaimedDelivery) {
        return endpoint.transport && endpoint.transport !== "http"
          ? publishDelivery(await secretBoxFor(config), endpoint, delivery, {
            timeoutMs: config.webhookTimeoutMs,
            brokers,
            signal: abort,
          })
          : sendDelivery(await secretBoxFor(config), endpoint, delivery, { ...sending, signal: abort });
      }
    },
    releaseUnheld: (holding) => waitingOutOutages(() => releaseUnheldLeases(sql, { ...lease, holding })),
  });
  return {
    start: (worker) => drainers.start(worker),
    sessionReopened: () => drainers.sessionReopened(),
    stop: async () => {
      await drainers.stop();
      connections.close();
      await brokers.close();
    },
  };
}
