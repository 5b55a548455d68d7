/**
 * What an attempt's answer decides (domain/webhooks/endpoints/decisions.ts), without Postgres: the next attempt's
 * time, giving up after the tenth attempt of a schedule, Retry-After, a 410 and the failing clock of an endpoint.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../domain/infra/config.ts";
import {
  disablesAtOnce,
  endpointHealth,
  failureReason,
  honoursRetryAfter,
  MAX_ATTEMPTS,
  retryDelaySeconds,
  retryPlan,
} from "../../domain/webhooks/endpoints/decisions.ts";

/** The default WEBHOOK_RETRY_SCHEDULE, as configuration expands it. */
const schedule = loadConfig({ JWT_SECRET: "decisions-test-secret-0123456789abcdef" }).retrySchedule;
const DAY_MS = 86_400_000;

Deno.test("decisions of an attempt's answer", async (t) => {
  await t.step("the schedule: 5 s, 5 min, 30 min ... 24 h after the first to the ninth failed attempt", () => {
    assert.equal(retryDelaySeconds(schedule, 0), 5);
    assert.equal(retryDelaySeconds(schedule, 1), 300);
    assert.equal(retryDelaySeconds(schedule, 2), 1_800);
    assert.equal(retryDelaySeconds(schedule, MAX_ATTEMPTS - 2), 86_400);
  });

  await t.step("the tenth failed attempt of a schedule is the last: the record fails for good", () => {
    assert.equal(MAX_ATTEMPTS, 10);
    assert.equal(retryDelaySeconds(schedule, MAX_ATTEMPTS - 1), null);
    assert.equal(retryDelaySeconds(schedule, MAX_ATTEMPTS + 3), null);
  });

  await t.step("a short schedule repeats its last delay", () => {
    assert.equal(retryDelaySeconds([60], 0), 60);
    assert.equal(retryDelaySeconds([60], 7), 60);
    assert.equal(retryDelaySeconds([], 0), null);
  });

  await t.step("Retry-After postpones past the schedule's delay, never brings it forward", () => {
    assert.equal(retryDelaySeconds(schedule, 0, 120), 120);
    assert.equal(retryDelaySeconds(schedule, 1, 120), 300);
    assert.equal(retryDelaySeconds(schedule, 0, null), 5);
    assert.equal(retryDelaySeconds(schedule, MAX_ATTEMPTS - 1, 120), null, "and never adds an attempt");
  });

  await t.step("only 429 and 503 are asked to wait; 410 disables at once", () => {
    assert.deepEqual([200, 410, 429, 500, 503].map(honoursRetryAfter), [false, false, true, false, true]);
    assert.deepEqual([200, 404, 410, 500].map((s) => disablesAtOnce(s)), [false, false, true, false]);
    // a broker's permanent refusal (no such exchange, access refused) ends the endpoint as a 410 does
    assert.deepEqual([disablesAtOnce(0, true), disablesAtOnce(0, false)], [true, false]);
  });

  await t.step("the plan holds the delay for every position of the schedule, nine retries in all", () => {
    const plan = retryPlan(schedule, 600);
    assert.equal(plan.length, MAX_ATTEMPTS - 1);
    assert.deepEqual(plan.slice(0, 3), [600, 600, 1_800]);
    assert.deepEqual(retryPlan(schedule), schedule.slice(0, MAX_ATTEMPTS - 1));
  });

  const opts = { nowMs: Date.parse("2026-11-25T12:00:00Z"), disableAfterSeconds: 5 * 86_400 };
  const active = (failingSince: Date | null) => ({ status: "active" as const, failingSince });
  const ago = (ms: number) => new Date(opts.nowMs - ms);

  await t.step("a 410 disables the endpoint as gone, whatever else happened", () => {
    assert.deepEqual(endpointHealth(active(null), { anyOk: true, gone: true }, opts), {
      disable: "gone",
      failing: "keep",
    });
  });

  await t.step("the failing clock starts at the first failure, stops at a success, is written only on change", () => {
    const failed = { anyOk: false, gone: false };
    const succeeded = { anyOk: true, gone: false };
    assert.deepEqual(endpointHealth(active(null), failed, opts), { disable: null, failing: "start" });
    assert.deepEqual(endpointHealth(active(ago(60_000)), failed, opts), { disable: null, failing: "keep" });
    assert.deepEqual(endpointHealth(active(ago(60_000)), succeeded, opts), { disable: null, failing: "clear" });
    assert.deepEqual(endpointHealth(active(null), succeeded, opts), { disable: null, failing: "keep" });
  });

  await t.step(
    "a failure once every attempt has failed for WEBHOOK_DISABLE_AFTER_SECONDS disables it as failing",
    () => {
      const failed = { anyOk: false, gone: false };
      assert.equal(endpointHealth(active(ago(5 * DAY_MS - 1)), failed, opts).disable, null);
      assert.equal(endpointHealth(active(ago(5 * DAY_MS)), failed, opts).disable, "failing");
      assert.equal(endpointHealth(active(ago(5 * DAY_MS)), { anyOk: true, gone: false }, opts).disable, null);
    },
  );

  await t.step("a disabled endpoint is left as it is", () => {
    const seen = { status: "disabled" as const, failingSince: ago(10 * DAY_MS) };
    assert.deepEqual(endpointHealth(seen, { anyOk: false, gone: true }, opts), { disable: null, failing: "keep" });
  });
});

Deno.test("a record's last error: the status, or why no answer came; none after a success", () => {
  assert.equal(failureReason({ ok: false, httpStatus: 503, responseBody: "busy" }), "HTTP 503");
  assert.equal(failureReason({ ok: false, httpStatus: 302, responseBody: "" }), "HTTP 302");
  assert.equal(
    failureReason({ ok: false, httpStatus: 0, responseBody: "timeout after 10000 ms" }),
    "timeout after 10000 ms",
  );
  assert.equal(failureReason({ ok: true, httpStatus: 200, responseBody: "ok" }), null);
});
