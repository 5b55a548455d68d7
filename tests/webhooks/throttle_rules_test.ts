/**
 * The throttle's pure rules (docs/webhooks.md, "Throttle"): rate_limit's bounds, which answers hold the whole
 * endpoint, and what the drain loop does with a claim its throttle held back (fake steps, no Postgres, no HTTP). The
 * story over HTTP is throttle_test.ts.
 */
import assert from "node:assert/strict";
import { ErrorBag } from "../../domain/basics/errors.ts";
import { checkRateLimit } from "../../domain/webhooks/endpoints/throttle.ts";
import { endpointHoldSeconds } from "../../domain/webhooks/endpoints/decisions.ts";
import { drainEndpoint, type DrainSteps, THROTTLE_NAP_MS } from "../../domain/webhooks/engine/engine.ts";
import type { Claim, ClaimedDelivery } from "../../domain/webhooks/engine/statements/claim_data.ts";
import type { EndpointRow } from "../../domain/webhooks/endpoints/endpoint_row.ts";

Deno.test("rate_limit: from 0.01 to 1000 deliveries per second, fractions allowed, null for none", () => {
  const refused = (rate: number | null | undefined) => {
    const errors = new ErrorBag();
    checkRateLimit(errors, rate);
    return !errors.empty;
  };
  for (const ok of [null, undefined, 0.01, 0.5, 5, 1000]) assert.equal(refused(ok), false, String(ok));
  for (const bad of [0, 0.001, -1, 1000.5, NaN, Infinity]) assert.equal(refused(bad), true, String(bad));
});

Deno.test("a 429 with Retry-After holds the whole endpoint; a 503 or a 429 without it does not", () => {
  assert.equal(endpointHoldSeconds({ httpStatus: 429, retryAfterSeconds: 2 }), 2);
  assert.equal(endpointHoldSeconds({ httpStatus: 429, retryAfterSeconds: null }), null);
  assert.equal(endpointHoldSeconds({ httpStatus: 429, retryAfterSeconds: 0 }), null);
  assert.equal(endpointHoldSeconds({ httpStatus: 503, retryAfterSeconds: 2 }), null);
  assert.equal(endpointHoldSeconds({ httpStatus: 200 }), null);
});

Deno.test("the drain loop waits for a turn close by, and leaves a later one to the timer", async () => {
  const endpoint = { id: "e", status: "active" } as EndpointRow;
  const delivery: ClaimedDelivery = { id: "d", type: "identified", data: {}, slot: 0, token: "t" };
  const claims: Claim[] = [
    { endpoint, delivery: null, throttleWaitMs: 30 },
    { endpoint, delivery },
    { endpoint, delivery: null, throttleWaitMs: THROTTLE_NAP_MS + 1_000 },
  ];
  const calls: string[] = [];
  const claimedAt: number[] = [];
  const steps: DrainSteps = {
    claim: () => {
      calls.push("claim");
      claimedAt.push(performance.now());
      return Promise.resolve(claims.shift() ?? null);
    },
    send: () => {
      calls.push("send");
      return Promise.resolve({ ok: true, httpStatus: 200, responseBody: "", durationMs: 1 });
    },
    recordAndClaimNext: () => {
      calls.push("record");
      return Promise.resolve({ status: "succeeded", next: null, nextAttemptAt: null, disabled: null, attempt: 1 });
    },
    release: () => Promise.resolve(void calls.push("release")),
    wake: () => Promise.resolve(void calls.push("wake")),
    failPending: () => Promise.resolve(),
  };
  const timer: number[] = [];
  const end = await drainEndpoint(steps, {
    budget: { ms: 60_000, deliveries: 200 },
    now: () => performance.now(),
    throttledFor: (ms) => timer.push(ms),
  });
  assert.equal(end, "idle");
  assert.deepEqual(calls, ["claim", "claim", "send", "record", "claim"]);
  assert.ok(claimedAt[1] - claimedAt[0] >= 25, `claimed again after ${claimedAt[1] - claimedAt[0]} ms`);
  assert.deepEqual(timer, [THROTTLE_NAP_MS + 1_000]);
});

Deno.test("a run stopping does not wait for its turn", async () => {
  const endpoint = { id: "e", status: "active" } as EndpointRow;
  const stop = new AbortController();
  stop.abort();
  let claimed = 0;
  const timer: number[] = [];
  const end = await drainEndpoint({
    claim: () => Promise.resolve(++claimed === 1 ? { endpoint, delivery: null, throttleWaitMs: 10 } : null),
  } as DrainSteps, {
    budget: { ms: 60_000, deliveries: 200 },
    now: () => performance.now(),
    signal: stop.signal,
    throttledFor: (ms) => timer.push(ms),
  });
  assert.deepEqual([end, claimed, timer], ["idle", 1, [10]]);
});
