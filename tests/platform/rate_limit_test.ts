import assert from "node:assert/strict";
import { loadConfig } from "../../domain/platform/config.ts";
import { TEST_JWT_SECRET } from "../helpers.ts";
import { FailureCounter, RateLimiter, SignInThrottle } from "../../domain/platform/rate_limit.ts";

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

Deno.test("a token bucket per key", async (t) => {
  await t.step("a burst goes through, then one request per 1/rate seconds", () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ perSecond: 2, burst: 3, now: clock.now });
    assert.deepEqual([1, 2, 3].map(() => limiter.take("a")), [0, 0, 0]);
    assert.equal(limiter.take("a"), 1, "wait a second (half a second, rounded up)");
    clock.advance(499);
    assert.equal(limiter.take("a"), 1);
    clock.advance(1);
    assert.equal(limiter.take("a"), 0, "one token after half a second");
    assert.equal(limiter.take("a"), 1);
  });

  await t.step("a refused request takes nothing, so waiting as told is enough", () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ perSecond: 0.25, burst: 1, now: clock.now });
    assert.equal(limiter.take("a"), 0);
    for (let i = 0; i < 5; i++) assert.equal(limiter.take("a"), 4);
    clock.advance(4000);
    assert.equal(limiter.take("a"), 0);
  });

  await t.step("keys do not share a bucket", () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ perSecond: 1, burst: 1, now: clock.now });
    assert.equal(limiter.take("a"), 0);
    assert.equal(limiter.take("a"), 1);
    assert.equal(limiter.take("b"), 0);
  });

  await t.step("a rate of 0 is no limit", () => {
    const limiter = new RateLimiter({ perSecond: 0, burst: 1 });
    for (let i = 0; i < 1000; i++) assert.equal(limiter.take("a"), 0);
  });

  await t.step("a flood of new keys keeps memory bounded and the busiest keys limited", () => {
    const clock = manualClock();
    const limiter = new RateLimiter({ perSecond: 1, burst: 1, maxKeys: 100, now: clock.now });
    limiter.take("busy");
    for (let i = 0; i < 10_000; i++) {
      limiter.take(`key-${i}`);
      // the busy key keeps being used, so it stays among the recent ones
      if (i % 50 === 0) assert.equal(limiter.take("busy"), 1);
    }
    assert.ok(limiter.size <= 100, `${limiter.size} keys kept`);
  });
});

Deno.test("failures counted in a sliding window", async (t) => {
  await t.step("the key waits once it failed max times, until the oldest failure leaves the window", () => {
    const clock = manualClock();
    const failures = new FailureCounter({ maxFailures: 3, windowSeconds: 60, now: clock.now });
    for (let i = 0; i < 3; i++) {
      assert.equal(failures.retryAfter("k"), 0);
      failures.fail("k");
      clock.advance(10_000);
    }
    // failures at 0 s, 10 s and 20 s; now 30 s: free again at 60 s
    assert.equal(failures.retryAfter("k"), 30);
    clock.advance(29_000);
    assert.equal(failures.retryAfter("k"), 1);
    clock.advance(1_000);
    assert.equal(failures.retryAfter("k"), 0);
    failures.fail("k");
    // failures at 10 s, 20 s and 60 s: free again at 70 s
    assert.equal(failures.retryAfter("k"), 10);
  });

  await t.step("clearing a key forgets its failures", () => {
    const failures = new FailureCounter({ maxFailures: 1, windowSeconds: 60 });
    failures.fail("k");
    assert.ok(failures.retryAfter("k") > 0);
    failures.clear("k");
    assert.equal(failures.retryAfter("k"), 0);
  });
});

Deno.test("failed sign-ins throttled per username and per client address", async (t) => {
  const options = { perUsername: 10, perAddress: 25, windowSeconds: 900 };

  await t.step("ten wrong passwords for one username: the eleventh try waits for the window", () => {
    const clock = manualClock();
    const throttle = new SignInThrottle({ ...options, now: clock.now });
    for (let i = 0; i < 10; i++) {
      const attempt = { username: "ana", address: `10.0.0.${i}` }; // from ten places: the address does not matter
      assert.equal(throttle.retryAfter(attempt), 0, `try ${i + 1}`);
      throttle.recordFailure(attempt);
      clock.advance(1000);
    }
    assert.equal(throttle.retryAfter({ username: "ana", address: "192.0.2.1" }), 890);
    assert.equal(throttle.retryAfter({ username: " ANA ", address: "192.0.2.1" }), 890, "case and spaces ignored");
    assert.equal(throttle.retryAfter({ username: "bruno", address: "192.0.2.1" }), 0, "other users unaffected");
    clock.advance(890_000);
    assert.equal(throttle.retryAfter({ username: "ana", address: "192.0.2.1" }), 0);
  });

  await t.step("one address trying many usernames waits once it failed perAddress times", () => {
    const clock = manualClock();
    const throttle = new SignInThrottle({ ...options, now: clock.now });
    for (let i = 0; i < 25; i++) throttle.recordFailure({ username: `user${i}`, address: "198.51.100.7" });
    assert.equal(throttle.retryAfter({ username: "someone-new", address: "198.51.100.7" }), 900);
    assert.equal(throttle.retryAfter({ username: "someone-new", address: "198.51.100.8" }), 0);
  });

  await t.step("a correct password clears the username's failures but not the address's", () => {
    const clock = manualClock();
    const throttle = new SignInThrottle({ ...options, perAddress: 12, now: clock.now });
    const attacker = "203.0.113.5";
    for (let i = 0; i < 9; i++) throttle.recordFailure({ username: "victim", address: attacker });
    throttle.recordSuccess({ username: "victim", address: "203.0.113.99" });
    assert.equal(throttle.retryAfter({ username: "victim", address: "203.0.113.99" }), 0);
    for (let i = 0; i < 3; i++) throttle.recordFailure({ username: "other", address: attacker });
    // the attacker's own account signing in does not reset the guesses made from its address
    throttle.recordSuccess({ username: "attackers-own", address: attacker });
    assert.equal(throttle.retryAfter({ username: "attackers-own", address: attacker }), 900);
  });
});

Deno.test("limits default to the documented values and are read from the environment", () => {
  assert.deepEqual(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }).limits, {
    requestsPerSecond: 100,
    requestBurst: 200,
    sandboxPerSecond: 10,
    sandboxBurst: 20,
    endpointsPerCompany: 50,
    concurrencyPerCompany: 500,
    signInFailuresPerUsername: 10,
    signInFailuresPerAddress: 100,
    signInWindowSeconds: 900,
  });
  const set =
    loadConfig({ JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_SECOND: "0.5", WEBHOOK_ENDPOINTS_PER_COMPANY: "3" })
      .limits;
  assert.equal(set.requestsPerSecond, 0.5);
  assert.equal(set.endpointsPerCompany, 3);
  assert.throws(
    () => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_CONCURRENCY_PER_COMPANY: "0" }),
    /WEBHOOK_CONCURRENCY_PER_COMPANY/,
  );
  assert.throws(
    () => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_SECOND: "-1" }),
    /RATE_LIMIT_PER_SECOND/,
  );
});
