/**
 * The worker task that decides a company's delivery records whose filter its filter time deferred (docs/webhooks.md,
 * "What a company's filters may spend"): one run, then another when the company's filter time comes back.
 */

import type { Task } from "graphile-worker";
import type { Deps } from "../domain/infra/deps.ts";
import { decideDeferred } from "../domain/webhooks/engine/deferred_filters.ts";
import { askDecision } from "../domain/webhooks/outbox/filter_deferrals.ts";

type Payload = { company_id: string };

/**
 * Decides what the company's filter time allows now; when records remain, asks for the next run at the moment its
 * time comes back (a job of its own queue: one run per company at a time, whichever instance takes it).
 */
export function decideFiltersTask({ sql }: Deps): Task {
  return async (payload) => {
    const { company_id: companyId } = payload as Payload;
    const { againInMs } = await decideDeferred(sql, companyId);
    if (againInMs !== null) await askDecision(sql, companyId, Math.min(againInMs, 60_000));
  };
}
