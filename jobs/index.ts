/**
 * What the worker runs: every graphile-worker task by name, the webhook drainers beside it, and the upkeep of its
 * sweeps, handed to `startWorker` (domain/infra/worker.ts), which runs them without importing any.
 */

import type { TaskList } from "graphile-worker";
import type { Deps } from "../domain/infra/deps.ts";
import { pruneIdempotencyKeys } from "../domain/requests/idempotency.ts";
import { pruneRateBuckets } from "../domain/requests/rate_limits.ts";
import { pruneSessions } from "../domain/integrators/sessions.ts";
import { prunePortalLinks } from "../domain/integrators/portal_links.ts";
import { pruneSignInFailures } from "../domain/integrators/sign_in_throttle.ts";
import { identifyRegisteredPayers } from "../domain/rails/bank_transactions.ts";
import { releaseDeadLeases, wakeStalledEndpoints } from "../domain/webhooks/engine/recovery.ts";
import { TASKS } from "../domain/infra/tasks.ts";
import { pruneHistory } from "../domain/webhooks/endpoints/retention.ts";
import { keepStreams, retireStreamLog } from "../domain/webhooks/streams/streams.ts";
import { log } from "../domain/basics/log.ts";
import { webhookDrainers } from "./drain_webhooks.ts";
import { retryWireTask } from "./retry_wire.ts";
import { decideFiltersTask } from "./decide_filters.ts";
import { companiesWithStaleDeferrals } from "../domain/webhooks/engine/deferred_filters.ts";
import { askDecision } from "../domain/webhooks/outbox/filter_deferrals.ts";

/** Every graphile-worker task of the service, by task name. */
export function taskList(deps: Deps): TaskList {
  return {
    [TASKS.noop]: async () => {},
    // A drain job an earlier version queued: its records are claimed by the drainers (sql/0023).
    [TASKS.deliverWebhook]: async () => {},
    [TASKS.retryWire]: retryWireTask(deps),
    [TASKS.decideFilters]: decideFiltersTask(deps),
  };
}

/** What runs beside graphile-worker in a worker process: the webhook drainers (domain/webhooks/engine/engine.ts). */
export function companions(deps: Deps) {
  return [webhookDrainers(deps)];
}

const HOUR_MS = 3_600_000;

/**
 * Deferred filter verdicts nobody has taken up for a while (a job lost, or failed on a previous release's worker,
 * which knows no such task): asked for again (docs/webhooks.md, "What a company's filters may spend").
 */
async function askStaleDecisions(sql: Deps["sql"]) {
  for (const companyId of await companiesWithStaleDeferrals(sql)) await askDecision(sql, companyId);
}

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
 * The worker's upkeep and companions, for `startWorker`: the webhook drainers; free the leases of processes found
 * dead, and on every sweep wake stalled endpoints, identify money waiting for payers registered meanwhile and prune
 * expired idempotency keys; once an hour, the webhook history past its retention (docs/webhooks.md, "Retention"), and
 * every minute the sessions, portal links, sign-in failures and rate buckets nobody needs any more.
 */
export function upkeep(deps: Deps) {
  const { sql, processId, config } = deps;
  const pruneOld = atMostEvery(
    HOUR_MS,
    "webhook history prune",
    async () => {
      await pruneHistory(sql, { retentionDays: config.eventRetentionDays });
      // the pull streams' log goes with the events it orders (docs/webhooks.md, "Pull streams")
      await retireStreamLog(sql, new Date(Date.now() - config.eventRetentionDays * 86_400_000));
    },
  );
  // a stream's backlog cap, and `listen` streams nobody reads (docs/webhooks.md, "Pull streams")
  const keepPullStreams = atMostEvery(60_000, "pull streams upkeep", () => keepStreams(sql));
  const pruneAuth = atMostEvery(
    60_000,
    "sessions and limits prune",
    () =>
      Promise.all([
        pruneSessions(sql),
        prunePortalLinks(sql),
        pruneSignInFailures(sql, config.limits.signInWindowSeconds),
        pruneRateBuckets(sql),
      ]),
  );
  return {
    processId,
    companions: companions(deps),
    onDeadProcesses: (ids: string[]) => releaseDeadLeases(sql, ids),
    onSweep: () => {
      pruneOld();
      pruneAuth();
      keepPullStreams();
      return Promise.all([
        wakeStalledEndpoints(sql),
        identifyRegisteredPayers(sql),
        pruneIdempotencyKeys(sql),
        askStaleDecisions(sql),
      ]);
    },
  };
}
