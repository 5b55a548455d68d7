/**
 * The token bucket of domain/requests/rate_limits.ts: the rules of `RateLimiter` over a fake store (bursts, batches of
 * tokens, bounded memory), then the shared bucket in Postgres (`take_rate_tokens`) it is built for.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../domain/infra/config.ts";
import { bucketsIn, RateLimiter, type TakeTokens } from "../../domain/requests/rate_limits.ts";
import { setup, TEST_JWT_SECRET } from "../support/helpers.ts";

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** The shared bucket as Postgres keeps it, in memory on the same clock, counting the trips made to it. */
function fakeBuckets(clock: { now: () => number }, perSecond: number, burst: number) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  let trips = 0;
  const take: TakeTokens = (key, want) => {
    trips++;
    const now = clock.now();
    const b = buckets.get(key) ?? { tokens: burst, at: now };
    const available = Math.min(burst, b.tokens + (now - b.at) / 1000 * perSecond);
    const granted = Math.min(want, Math.floor(available));
    buckets.set(key, { tokens: available - granted, at: now });
    return Promise.resolve({
      granted,
      waitMs: granted > 0 ? 0 : Math.max(1, Math.ceil((1 - available) / perSecond * 1000)),
    });
  };
  return { take, trips: () => trips };
}

function limiterOn(clock: ReturnType<typeof manualClock>, perSecond: number, burst: number, leaseMs = 1000) {
  const store = fakeBuckets(clock, perSecond, burst);
  return { store, limiter: new RateLimiter({ perSecond, burst, take: store.take, leaseMs, now: clock.now }) };
}

const takeMany = (limiter: RateLimiter, key: string, n: number) =>
  Promise.all(Array.from({ length: n }, () => limiter.take(key)));

Deno.test("a token bucket per key, shared through a store", async (t) => {
  await t.step("a burst goes through, then one request per 1/rate seconds", async () => {
    const clock = manualClock();
    const { limiter } = limiterOn(clock, 2, 3);
    assert.deepEqual(await takeMany(limiter, "a", 3), [0, 0, 0]);
    assert.equal(await limiter.take("a"), 1, "wait a second (half a second, rounded up)");
    clock.advance(499);
    assert.equal(await limiter.take("a"), 1);
    clock.advance(1);
    assert.equal(await limiter.take("a"), 0, "one token after half a second");
    assert.equal(await limiter.take("a"), 1);
  });

  await t.step("a refused request takes nothing, so waiting as told is enough", async () => {
    const clock = manualClock();
    const { limiter } = limiterOn(clock, 0.25, 1);
    assert.equal(await limiter.take("a"), 0);
    for (let i = 0; i < 5; i++) assert.equal(await limiter.take("a"), 4);
    clock.advance(4000);
    assert.equal(await limiter.take("a"), 0);
  });

  await t.step("while the bucket is known empty, refusals cost no trip to the store", async () => {
    const clock = manualClock();
    const { limiter, store } = limiterOn(clock, 1, 1);
    assert.equal(await limiter.take("a"), 0);
    const before = store.trips();
    assert.equal(await limiter.take("a"), 1);
    for (let i = 0; i < 100; i++) assert.equal(await limiter.take("a"), 1);
    assert.equal(store.trips() - before, 1, "one trip learnt the wait; the next 100 answered from memory");
  });

  await t.step("tokens come in batches of a fiftieth of the burst: most requests make no trip", async () => {
    const clock = manualClock();
    const { limiter, store } = limiterOn(clock, 1000, 1000);
    assert.equal(limiter.batch, 20);
    for (let i = 0; i < 200; i++) assert.equal(await limiter.take("a"), 0);
    assert.equal(store.trips(), 10);
  });

  await t.step("requests arriving together share one trip", async () => {
    const clock = manualClock();
    const { limiter, store } = limiterOn(clock, 1000, 1000);
    assert.deepEqual(await takeMany(limiter, "a", 20), Array(20).fill(0));
    assert.equal(store.trips(), 1);
  });

  await t.step("two instances on one store admit the burst between them, not twice", async () => {
    const clock = manualClock();
    const store = fakeBuckets(clock, 1, 200);
    const instances = [1, 2].map(() => new RateLimiter({ perSecond: 1, burst: 200, take: store.take, now: clock.now }));
    const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => instances[i % 2].take("a")));
    const admitted = answers.filter((w) => w === 0).length;
    // at most the burst; at least the burst less one unspent batch (4) per instance
    assert.ok(admitted <= 200 && admitted >= 192, `${admitted} admitted`);
  });

  await t.step("tokens held unspent expire with their lease: no saving up past the burst", async () => {
    const clock = manualClock();
    const { limiter } = limiterOn(clock, 1, 200, 1000);
    assert.equal(await limiter.take("a"), 0); // takes a batch of 4, spends 1
    clock.advance(1001);
    // the 3 left expired; the next request goes back to the store
    assert.equal(await limiter.take("a"), 0);
  });

  await t.step("keys do not share a bucket", async () => {
    const clock = manualClock();
    const { limiter } = limiterOn(clock, 1, 1);
    assert.equal(await limiter.take("a"), 0);
    assert.equal(await limiter.take("a"), 1);
    assert.equal(await limiter.take("b"), 0);
  });

  await t.step("a rate of 0 is no limit and never asks the store", async () => {
    const limiter = new RateLimiter({ perSecond: 0, burst: 1, take: () => Promise.reject(new Error("asked")) });
    for (let i = 0; i < 1000; i++) assert.equal(await limiter.take("a"), 0);
  });

  await t.step("a flood of new keys keeps memory bounded", async () => {
    const clock = manualClock();
    const store = fakeBuckets(clock, 1, 1);
    const limiter = new RateLimiter({ perSecond: 1, burst: 1, maxKeys: 100, take: store.take, now: clock.now });
    for (let i = 0; i < 10_000; i++) await limiter.take(`key-${i}`);
    assert.ok(limiter.size <= 100, `${limiter.size} keys kept`);
  });
});

Deno.test("the shared bucket in Postgres (take_rate_tokens)", async (t) => {
  const ctx = await setup("rate_buckets");
  try {
    await t.step("grants up to the burst, then tells how long until a token", async () => {
      const take = bucketsIn(ctx.sql, "api", { perSecond: 2, burst: 5 });
      assert.deepEqual(await take("k", 3), { granted: 3, waitMs: 0 });
      assert.deepEqual(await take("k", 3), { granted: 2, waitMs: 0 });
      const empty = await take("k", 3);
      assert.equal(empty.granted, 0);
      assert.ok(empty.waitMs > 0 && empty.waitMs <= 500, `wait ${empty.waitMs} ms`);
    });

    await t.step("200 concurrent takers never get more than the burst", async () => {
      const take = bucketsIn(ctx.sql, "api", { perSecond: 0.001, burst: 50 });
      const got = await Promise.all(Array.from({ length: 200 }, () => take("busy", 1)));
      assert.equal(got.reduce((n, g) => n + g.granted, 0), 50);
    });

    await t.step("scopes and keys are separate buckets", async () => {
      const api = bucketsIn(ctx.sql, "api", { perSecond: 0.001, burst: 1 });
      const sandbox = bucketsIn(ctx.sql, "sandbox", { perSecond: 0.001, burst: 1 });
      assert.equal((await api("x", 1)).granted, 1);
      assert.equal((await api("x", 1)).granted, 0);
      assert.equal((await sandbox("x", 1)).granted, 1);
      assert.equal((await api("y", 1)).granted, 1);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("limits default to the documented values and are read from the environment", () => {
  const limits = loadConfig({ JWT_SECRET: TEST_JWT_SECRET }).limits;
  const expected = {
    requestsPerSecond: 100,
    requestBurst: 200,
    sandboxPerSecond: 10,
    sandboxBurst: 20,
    endpointsPerCompany: 50,
    concurrencyPerCompany: 500,
    signInFailuresPerUsername: 10,
    signInFailuresPerAddress: 100,
    signInWindowSeconds: 900,
    signInHashConcurrency: 2,
    signInHashQueue: 16,
    signInHashPerAddress: 4,
  };
  assert.deepEqual(
    Object.fromEntries(Object.keys(expected).map((k) => [k, limits[k as keyof typeof limits]])),
    expected,
  );
  const set = loadConfig({
    JWT_SECRET: TEST_JWT_SECRET,
    RATE_LIMIT_PER_SECOND: "0.5",
    WEBHOOK_ENDPOINTS_PER_COMPANY: "3",
    SIGN_IN_FAILURES_PER_USERNAME: "4",
    SIGN_IN_FAILURES_PER_ADDRESS: "7",
  }).limits;
  assert.equal(set.requestsPerSecond, 0.5);
  assert.equal(set.endpointsPerCompany, 3);
  assert.equal(set.signInFailuresPerUsername, 4);
  assert.equal(set.signInFailuresPerAddress, 7);
  assert.throws(
    () => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_CONCURRENCY_PER_COMPANY: "0" }),
    /WEBHOOK_CONCURRENCY_PER_COMPANY/,
  );
  assert.throws(
    () => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_SECOND: "-1" }),
    /RATE_LIMIT_PER_SECOND/,
  );
});
