import type { TaskList } from "graphile-worker";
import type { Deps } from "../domain/platform/deps.ts";
import { pruneIdempotencyKeys } from "../domain/platform/idempotency.ts";
import { identifyRegisteredPayers } from "../domain/rails/bank_transactions.ts";
import { releaseDeadLeases, wakeStalledEndpoints } from "../domain/webhooks/recovery.ts";
import { TASKS } from "../domain/webhooks/queue.ts";
import { deliverWebhookTask } from "./deliver_webhook.ts";
import { retryWireTask } from "./retry_wire.ts";

/** Every background task of the service, by graphile-worker task name. */
export function taskList(deps: Deps): TaskList {
  return {
    [TASKS.noop]: async () => {},
    [TASKS.deliverWebhook]: deliverWebhookTask(deps),
    [TASKS.retryWire]: retryWireTask(deps),
  };
}

/**
 * The worker's upkeep, for `startWorker`: free the leases of processes found dead, and on every sweep wake stalled
 * endpoints, identify money waiting for payers registered meanwhile and prune expired idempotency keys.
 */
export function upkeep({ sql, processId }: Pick<Deps, "sql" | "processId">) {
  return {
    processId,
    onDeadProcesses: (ids: string[]) => releaseDeadLeases(sql, ids),
    onSweep: () => Promise.all([wakeStalledEndpoints(sql), identifyRegisteredPayers(sql), pruneIdempotencyKeys(sql)]),
  };
}
