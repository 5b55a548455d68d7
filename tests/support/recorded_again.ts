/**
 * The record statement made again after a lost connection (domain/webhooks/engine/statements/record.ts, `firstMayHaveCommitted`), as a story
 * the tests of what that statement keeps share: what it counts must count a batch once, whether or not the first try
 * committed.
 */
import assert from "node:assert/strict";
import { newId } from "../../domain/basics/ids.ts";
import { claimNext } from "../../domain/webhooks/engine/statements/claim.ts";
import { recordAttempts } from "../../domain/webhooks/engine/statements/record.ts";
import { type Company, newCompany, setup, type TestContext } from "./helpers.ts";
import { createEndpoint, emit } from "./endpoints.ts";
import { seqId } from "./webhook_receiver.ts";

/** What the receiver answered to each attempt of the story. */
export type FailedAnswer = { httpStatus: number; responseBody: string; durationMs: number };

/**
 * Two records of one endpoint leased (one slot each), then: the first batch recorded; the same batch made again, as
 * when the first try committed but its answer was lost; the second batch made only "again", as when its first try
 * never reached the database. `read` is asked after each step. On a database of its own (`name`), with no worker: the
 * test makes the drain's steps itself.
 */
export async function recordedAgain<T>(
  name: string,
  answer: FailedAnswer,
  read: (ctx: TestContext, company: Company, endpointId: string) => Promise<T>,
): Promise<{ recorded: T; madeAgain: T; firstTryLost: T }> {
  const ctx = await setup(name);
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, "http://127.0.0.1:9/unused", { max_concurrency: 2 });
    await emit(ctx, company, "identified", { transaction_id: seqId(1) });
    await emit(ctx, company, "identified", { transaction_id: seqId(2) });
    const lease = { leaseMs: 30_000, owner: crypto.randomUUID(), failingAfterAttempts: 100, failingAfterSeconds: 1e6 };
    const attemptOf = async () => {
      const claim = await claimNext(ctx.sql, endpoint.id, lease);
      assert.ok(claim?.delivery, "a record leased");
      const result = { ok: false, ...answer };
      return { endpointId: endpoint.id, delivery: claim.delivery, result, attemptId: newId(), plan: [60] };
    };
    const verdicts = [{
      endpointId: endpoint.id,
      health: { disable: null, failing: "keep" as const },
      seenFailingSince: null,
      failedAttempts: 1,
    }];
    // both records leased first: recording one hands its slot to the next record due
    const first = [await attemptOf()];
    const second = [await attemptOf()];
    await recordAttempts(ctx.sql, first, verdicts, lease);
    const recorded = await read(ctx, company, endpoint.id);
    await recordAttempts(ctx.sql, first, verdicts, lease, true);
    const madeAgain = await read(ctx, company, endpoint.id);
    await recordAttempts(ctx.sql, second, verdicts, lease, true);
    const firstTryLost = await read(ctx, company, endpoint.id);
    return { recorded, madeAgain, firstTryLost };
  } finally {
    await ctx.close();
  }
}
