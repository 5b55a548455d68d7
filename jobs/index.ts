import type { TaskList } from "graphile-worker";
import type { Deps } from "../domain/infra/deps.ts";
import { pruneIdempotencyKeys } from "../routes/policy/idempotency_store.ts";
import { pruneRateBuckets } from "../routes/policy/rate_limit_buckets.ts";
import { pruneSessions } from "../domain/integrators/sessions.ts";
import { pruneSignInFailures } from "../domain/integrators/sign_in_throttle.ts";
import { identifyRegisteredPayers } from "../domain/rails/bank_transactions.ts";
import { releaseDeadLeases, wakeStalledEndpoints } from "../domain/webhooks/recovery.ts";
import { TASKS } from "../domain/webhooks/queue.ts";
import { pruneHistory } from "../domain/webhooks/retention.ts";
import { log } from "../domain/basics/log.ts";
import { deliverWebhookTask } from "./drain_webhooks.ts";
import { retryWireTask } from "./retry_wire.ts";

/** Every background task of the service, by graphile-worker task name. */
export function taskList(deps: Deps): TaskList {
  return {
    [TASKS.noop]: async () => {},
    [TASKS.deliverWebhook]: deliverWebhookTask(deps),
    [TASKS.retryWire]: retryWireTask(deps),
  };
}

const HOUR_MS = 3_600_000;

/**
 * `work` started at most once per `everyMs`, never twice at once, in the background: the sweep that calls it does not
 * wait for a long prune. The first call starts it.
 */
export function atMostEvery(everyMs: number, name: string, work: () => Promise<unknown>) {
  let last = -Infinity;
  let running = false;
  return () => {
    if (running || performance.now() - last < everyMs) return;
    running = true;
    last = performance.now();
    work().catch((err) => log.error(`${name} failed`, { error: err instanceof Error ? err.message : String(err) }))
      .finally(() => running = false);
  };
}

/**
 * The worker's upkeep, for `startWorker`: free the leases of processes found dead, and on every sweep wake stalled
 * endpoints, identify money waiting for payers registered meanwhile and prune expired idempotency keys; once an hour,
 * the webhook history past its retention (docs/webhooks.md, "Retention"), and every minute the sessions, sign-in
 * failures and rate buckets nobody needs any more.
 */
export function upkeep({ sql, processId, config }: Pick<Deps, "sql" | "processId" | "config">) {
  const pruneOld = atMostEvery(
    HOUR_MS,
    "webhook history prune",
    () => pruneHistory(sql, { retentionDays: config.eventRetentionDays }),
  );
  const pruneAuth = atMostEvery(
    60_000,
    "sessions and limits prune",
    () =>
      Promise.all([
        pruneSessions(sql),
        pruneSignInFailures(sql, config.limits.signInWindowSeconds),
        pruneRateBuckets(sql),
      ]),
  );
  return {
    processId,
    onDeadProcesses: (ids: string[]) => releaseDeadLeases(sql, ids),
    onSweep: () => {
      pruneOld();
      pruneAuth();
      return Promise.all([wakeStalledEndpoints(sql), identifyRegisteredPayers(sql), pruneIdempotencyKeys(sql)]);
    },
  };
}
