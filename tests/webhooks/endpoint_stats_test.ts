/**
 * Endpoint health (docs/webhooks.md, "Endpoint health"): the pure tallies of attempt_stats.ts, then GET .../stats as
 * an integrator reads it, its rollup into hours, retention and the cap on concurrent reads.
 */
import assert from "node:assert/strict";
import {
  bucketRange,
  DURATION_BUCKETS,
  DURATION_COLUMNS,
  durationBucket,
  durationQuantile,
  outcomeOf,
  tallyAttempts,
} from "../../domain/webhooks/endpoints/attempt_stats.ts";
import { pruneHistory } from "../../domain/webhooks/endpoints/retention.ts";
import { rollUpStats } from "../../domain/webhooks/endpoints/stats.ts";
import { STATS_SHARDS } from "../../domain/webhooks/engine/statements/record.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { recordedAgain } from "../support/recorded_again.ts";
import { createEndpoint, emit, ENDPOINTS, EVENTS, recordsOf } from "../support/endpoints.ts";
import { seqId, seqOf, sleep, startReceiver } from "../support/webhook_receiver.ts";

const failed = (httpStatus: number, responseBody = "") => ({ ok: false, httpStatus, responseBody, durationMs: 5 });

/** The exact `q`-quantile of `values`: the one of rank ceil(q × n), as the histogram's estimate places it. */
function exactQuantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
}

/** An estimate from the histogram lies in the bucket of the exact value: off by under the bucket's 26%. */
function assertNear(estimate: number | null, exact: number, what: string) {
  const { from, to } = bucketRange(durationBucket(exact));
  assert.ok(
    estimate !== null && estimate >= Math.floor(from) && estimate <= Math.ceil(to),
    `${what}: ${estimate} for an exact ${exact} (its bucket is ${from.toFixed(2)}-${to.toFixed(2)} ms)`,
  );
}

Deno.test("an attempt's outcome class: status classes, and why no answer came", () => {
  assert.equal(outcomeOf({ ok: true, httpStatus: 204, responseBody: "" }), "succeeded");
  assert.equal(outcomeOf(failed(302)), "http_3xx");
  assert.equal(outcomeOf(failed(410)), "http_4xx");
  assert.equal(outcomeOf(failed(429)), "http_4xx");
  assert.equal(outcomeOf(failed(503)), "http_5xx");
  assert.equal(outcomeOf(failed(0, "timeout after 2000 ms")), "timeout");
  assert.equal(outcomeOf(failed(0, "connection refused (ECONNREFUSED)")), "network");
  assert.equal(outcomeOf(failed(0, "TLS: invalid peer certificate")), "network");
  assert.equal(outcomeOf(failed(0, "refused: private address")), "refused");
});

Deno.test("duration buckets cover every duration once, each 2^(1/3) wider than the one before", () => {
  assert.equal(durationBucket(0), 0);
  assert.equal(durationBucket(0.99), 0);
  assert.equal(durationBucket(1), 1);
  assert.equal(durationBucket(2), 4);
  assert.equal(durationBucket(65_536), DURATION_BUCKETS - 1);
  assert.equal(durationBucket(10 ** 9), DURATION_BUCKETS - 1);
  for (let k = 0; k < DURATION_BUCKETS; k++) {
    const { from, to } = bucketRange(k);
    assert.equal(durationBucket(from), k, `bucket ${k} starts at ${from}`);
    if (to !== Infinity) assert.equal(durationBucket(to), k + 1, `bucket ${k} ends at ${to}`);
    if (k > 1 && to !== Infinity) assert.ok(Math.abs(to / from - 2 ** (1 / 3)) < 1e-9);
  }
});

Deno.test("p50 and p95 from the histogram stay within a bucket of the exact values", () => {
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const shapes: [string, () => number][] = [
    ["uniform 0-100 ms", () => Math.round(random() * 100)],
    ["a long tail", () => Math.round(5 + 10 ** (random() * 4))],
    ["two modes", () => random() < 0.9 ? 3 + Math.round(random() * 2) : 800 + Math.round(random() * 400)],
    ["all the same", () => 42],
  ];
  for (const [name, draw] of shapes) {
    for (const n of [1, 2, 19, 20, 1000]) {
      const values = Array.from({ length: n }, draw);
      const histogram = new Array(DURATION_BUCKETS).fill(0);
      for (const v of values) histogram[durationBucket(v)]++;
      for (const q of [0.5, 0.95]) {
        assertNear(durationQuantile(histogram, q), exactQuantile(values, q), `${name} n=${n} q=${q}`);
      }
    }
  }
  assert.equal(durationQuantile(new Array(DURATION_BUCKETS).fill(0), 0.5), null, "no attempts, no percentile");
});

Deno.test("a batch is tallied once per endpoint, in endpoint order, with its last failure's reason", () => {
  const attempt = (endpointId: string, httpStatus: number, durationMs: number, responseBody = "") => ({
    endpointId,
    result: { ok: httpStatus >= 200 && httpStatus < 300, httpStatus, responseBody, durationMs },
  });
  const tallies = tallyAttempts([
    attempt("b", 200, 3.4),
    attempt("a", 503, 12),
    attempt("b", 0, 2000, "timeout after 2000 ms"),
    attempt("a", 200, 0.2),
    attempt("b", 404, 3),
  ]);
  assert.deepEqual(tallies.map((t) => t.endpointId), ["a", "b"]);
  const [a, b] = tallies;
  assert.deepEqual([a.counts.succeeded, a.counts.http_5xx, a.anySucceeded, a.lastFailure], [1, 1, true, "HTTP 503"]);
  assert.deepEqual(
    [b.counts.succeeded, b.counts.timeout, b.counts.http_4xx, b.lastFailure],
    [1, 1, 1, "HTTP 404"],
    "the batch's last failure gives the reason",
  );
  assert.equal(b.durations.reduce((x, y) => x + y), 3);
  assert.equal(b.durations[durationBucket(3)], 2, "3.4 ms is counted as the log stores it, 3 ms");
  assert.equal(a.durations[0], 1, "under 1 ms");
});

Deno.test("an integrator reads an endpoint's health from GET .../stats", async (t) => {
  const ctx = await setup("endpoint_stats", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  // odd events fail their first attempt with 503, then succeed; every answer comes after 0-60 ms
  const rx = startReceiver(async (arrival) => {
    const n = seqOf(arrival.body?.data?.transaction_id);
    await sleep((n * 7) % 61);
    const first = rx.at(arrival.path).filter((a) => a.body?.data?.transaction_id === arrival.body.data.transaction_id)
      .length === 1;
    return n % 2 === 1 && first ? new Response("busy", { status: 503 }) : new Response("ok");
  });
  const company = await newCompany(ctx);
  const stats = (id: string, query = "") => company.get(`${ENDPOINTS}/${id}/stats${query}`);
  const EVENTS_SENT = 30;
  try {
    const before = new Date();
    const endpoint = await createEndpoint(company, `${rx.url}/mixed`, {
      enabled_events: ["identified"],
      max_concurrency: 8,
    });

    await t.step("an endpoint without attempts has zeros and nulls", async () => {
      const res = await stats(endpoint.id);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const s = res.body.data;
      assert.equal(s.endpoint_id, endpoint.id);
      assert.deepEqual(s.attempts, {
        total: 0,
        succeeded: 0,
        failed: 0,
        http_3xx: 0,
        http_4xx: 0,
        http_5xx: 0,
        timeout: 0,
        network: 0,
        refused: 0,
      });
      assert.deepEqual([s.success_rate, s.duration_ms, s.last_success_at, s.last_failure], [
        null,
        { p50: null, p95: null },
        null,
        null,
      ]);
      const defaultSince = Date.parse(s.since);
      const dayAgo = before.getTime() - 24 * 3_600_000;
      assert.ok(defaultSince <= dayAgo && defaultSince > dayAgo - 61_000, `24 h ago by default: ${s.since}`);
    });

    await t.step("attempts by outcome, success rate, p50/p95 and the last failure's reason", async () => {
      for (let i = 1; i <= EVENTS_SENT; i++) await emit(ctx, company, "identified", { transaction_id: seqId(i) });
      await eventually(
        "every record succeeded",
        async () => {
          const records = await recordsOf(company, endpoint.id);
          return records.length === EVENTS_SENT && records.every((r) => r.status === "succeeded");
        },
        20_000,
      );
      const res = await stats(endpoint.id);
      assert.equal(res.status, 200);
      const s = res.body.data;
      const odd = EVENTS_SENT / 2;
      assert.deepEqual(s.attempts, {
        total: EVENTS_SENT + odd,
        succeeded: EVENTS_SENT,
        failed: odd,
        http_3xx: 0,
        http_4xx: 0,
        http_5xx: odd,
        timeout: 0,
        network: 0,
        refused: 0,
      });
      assert.equal(s.success_rate, Math.round((EVENTS_SENT / (EVENTS_SENT + odd)) * 10_000) / 10_000);
      assert.equal(s.last_failure.reason, "HTTP 503");
      assert.ok(Date.parse(s.last_success_at) >= before.getTime(), s.last_success_at);
      assert.ok(Date.parse(s.last_failure.at) >= before.getTime(), s.last_failure.at);

      // the exact percentiles of the durations the attempt log holds, against the aggregate's estimates
      const durations: number[] = [];
      for (const record of await recordsOf(company, endpoint.id)) {
        const detail = await company.get(`${EVENTS}/${record.id}`);
        for (const a of detail.body.data.attempts) durations.push(a.duration_ms);
      }
      assert.equal(durations.length, EVENTS_SENT + odd);
      assertNear(s.duration_ms.p50, exactQuantile(durations, 0.5), "p50");
      assertNear(s.duration_ms.p95, exactQuantile(durations, 0.95), "p95");
    });

    await t.step("the aggregate holds a few rows per minute, however many attempts", async () => {
      const [{ rows }] = await ctx.sql<{ rows: number }[]>`
        select count(*)::int as rows from webhook_endpoint_stats where endpoint_id = ${endpoint.id}`;
      const minutes = Math.floor(Date.now() / 60_000) - Math.floor(before.getTime() / 60_000) + 1;
      assert.ok(rows >= 1 && rows <= minutes * STATS_SHARDS, `${rows} rows over ${minutes} minute(s)`);
      const columns = await ctx.sql<{ name: string }[]>`
        select column_name as name from information_schema.columns
        where table_name = 'webhook_endpoint_stats' and column_name ~ '^d[0-9]+$' order by ordinal_position`;
      assert.deepEqual(columns.map((c) => c.name), DURATION_COLUMNS, "a column per duration bucket (sql/0027)");
    });

    await t.step("since: later attempts only; the last success and failure stay whenever they were", async () => {
      const future = new Date(Date.now() + 120_000).toISOString();
      const res = await stats(endpoint.id, `?since=${encodeURIComponent(future)}`);
      assert.equal(res.status, 200);
      const s = res.body.data;
      assert.equal(s.since, `${future.slice(0, 16)}:00.000Z`, "counted from the start of since's minute");
      assert.equal(s.attempts.total, 0);
      assert.equal(s.success_rate, null);
      assert.equal(s.last_failure.reason, "HTTP 503");
      assert.notEqual(s.last_success_at, null);
      const withOffset = await stats(endpoint.id, `?since=${encodeURIComponent("2026-01-01T00:00:00-03:00")}`);
      assert.equal(withOffset.body.data.since, "2026-01-01T03:00:00.000Z");
    });

    await t.step("a since that is not a date answers 422 naming it", async () => {
      for (const bad of ["yesterday", "2026-13-01", ""]) {
        const res = await stats(endpoint.id, `?since=${bad}`);
        assert.equal(res.status, 422, bad);
        assert.deepEqual(Object.keys(res.body.errors), ["since"], JSON.stringify(res.body));
      }
    });

    await t.step("another company's endpoint, or none, is not found", async () => {
      const other = await newCompany(ctx);
      assert.equal((await other.get(`${ENDPOINTS}/${endpoint.id}/stats`)).status, 404);
      assert.equal((await stats(crypto.randomUUID())).status, 404);
    });

    await t.step("a network failure is counted as such and becomes the last failure", async () => {
      const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = (closed.addr as Deno.NetAddr).port;
      closed.close(); // nothing listens there now
      const down = await createEndpoint(company, `http://127.0.0.1:${port}/down`, { enabled_events: ["wire_created"] });
      await emit(ctx, company, "wire_created", { wire_id: seqId(1) });
      const s = await eventually("a network failure counted", async () => {
        const data = (await stats(down.id)).body.data;
        return data.attempts.network > 0 && data;
      });
      assert.equal(s.attempts.succeeded, 0);
      assert.equal(s.attempts.failed, s.attempts.network);
      assert.match(s.last_failure.reason, /ECONNREFUSED|refused/i);
      assert.equal(s.last_success_at, null);
      assert.equal((await company.delete(`${ENDPOINTS}/${down.id}`)).status, 200); // stop its retries
    });

    await t.step("minutes past the history's retention are pruned with it", async () => {
      const pruned = await pruneHistory(ctx.sql, { retentionDays: 1, now: new Date(Date.now() + 2 * 86_400_000) });
      assert.ok(pruned.stats_rows >= 2, `pruned ${pruned.stats_rows}`);
      const s = (await stats(endpoint.id, "?since=2026-01-01")).body.data;
      assert.equal(s.attempts.total, 0);
      assert.equal(s.last_failure.reason, "HTTP 503", "the last success and failure are the endpoint's, kept");
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});

Deno.test("a batch recorded again after a lost connection is counted once", async () => {
  const seen = await recordedAgain(
    "endpoint_stats_again",
    { httpStatus: 503, responseBody: "busy", durationMs: 12 },
    (_ctx, company, endpointId) => company.get(`${ENDPOINTS}/${endpointId}/stats`).then((r) => r.body.data.attempts),
  );
  assert.deepEqual([seen.recorded.total, seen.recorded.http_5xx], [1, 1]);
  assert.deepEqual([seen.madeAgain.total, seen.madeAgain.http_5xx], [1, 1], "the committed batch counts once");
  assert.equal(seen.firstTryLost.total, 2, "a batch whose first try never reached the database counts when made again");
});

/**
 * Stats bounded (issue 32, finding 7): past a day the minutes are rolled into hours, and a month's read sums hours
 * with the same totals; a company's reads at once are capped, another company's are not held up by them.
 */
Deno.test("a month's stats are summed from hours past a day, with the same totals as the minutes", async () => {
  const ctx = await setup("endpoint_stats_hours");
  try {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, "http://127.0.0.1:9/unused");
    // a minute row every 37 minutes over 30 days, on shards in turn, with counts and durations that vary
    await ctx.sql`
      insert into webhook_endpoint_stats (endpoint_id, bucket, shard, company_id, succeeded, http_5xx, timeout, d3, d17)
      select ${endpoint.id}, date_trunc('minute', now()) - n * interval '37 minutes', n % 4, ${company.id},
        n % 7 + 1, n % 3, n % 2, n % 5, n % 7 + 1 + n % 3 + n % 2 - n % 5
      from generate_series(0, 1165) n`;
    const minute = 60_000;
    const sinces = [
      new Date(Date.now() - 30 * 86_400_000 + 7 * minute), // not on an hour
      new Date(Date.now() - 25 * 3_600_000 - 13 * minute),
      new Date(Date.now() - 2 * 3_600_000),
    ];
    const read = async (since: Date) => {
      const res = await company.get(`${ENDPOINTS}/${endpoint.id}/stats?since=${since.toISOString()}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const { attempts, success_rate, duration_ms, since: from } = res.body.data;
      return { attempts, success_rate, duration_ms, from };
    };
    // one after another: a company's reads at once are capped (the next test)
    const readAll = async () => {
      const all = [];
      for (const since of sinces) all.push(await read(since));
      return all;
    };
    const fromMinutes = await readAll();
    assert.ok(fromMinutes[0].attempts.total > 5_000, JSON.stringify(fromMinutes[0]));

    const hours = await rollUpStats(ctx.sql);
    assert.ok(hours >= 600 && hours <= 29 * 24, `${hours} hours rolled`);
    assert.equal(await rollUpStats(ctx.sql), 0, "nothing twice");
    const [{ until, rows }] = await ctx.sql<{ until: Date; rows: number }[]>`
      select rolled_until as until, (select count(*)::int from webhook_endpoint_stats_hourly) as rows
      from webhook_endpoint_stats_rollup`;
    assert.ok(until.getTime() <= Date.now() - 24 * 3_600_000 && until.getTime() % 3_600_000 === 0, String(until));
    assert.equal(rows, hours, "one row per endpoint and hour with minutes");
    assert.deepEqual(await readAll(), fromMinutes);

    // the month is read from the hours: without the rolled minutes after since's first hour, the same totals
    // (the release before this one still reads those minutes: the service never deletes them before the retention)
    const firstHour = new Date(Math.ceil(sinces[0].getTime() / 3_600_000) * 3_600_000);
    await ctx.sql`delete from webhook_endpoint_stats
      where endpoint_id = ${endpoint.id} and bucket >= ${firstHour} and bucket < ${until}`;
    assert.deepEqual(await read(sinces[0]), fromMinutes[0]);
  } finally {
    await ctx.close();
  }
});

Deno.test("stats reads: a company's reads at once are capped, another company's go through", async () => {
  const ctx = await setup("endpoint_stats_cap", {
    env: { WEBHOOK_STATS_READS_PER_COMPANY: "1", WEBHOOK_STATS_READS_PER_INSTANCE: "2" },
  });
  try {
    const [a, b, c] = [await newCompany(ctx), await newCompany(ctx), await newCompany(ctx)];
    const [ea, eb, ec] = await Promise.all([a, b, c].map((co) => createEndpoint(co, "http://127.0.0.1:9/unused")));
    const { promise: held, resolve: hold } = Promise.withResolvers<void>();
    const { promise: done, resolve: release } = Promise.withResolvers<void>();
    // every stats read waits while this holds the rollup's row exclusively: reads stay in flight as long as wanted
    const holding = ctx.sql.begin(async (tx) => {
      await tx`lock table webhook_endpoint_stats_rollup in access exclusive mode`;
      hold();
      await done;
    });
    await held;
    const waiting = async (n: number) => {
      await eventually(`${n} reads waiting`, async () => {
        const [{ count }] = await ctx.sql<{ count: number }[]>`
          select count(*)::int as count from pg_locks where relation = 'webhook_endpoint_stats_rollup'::regclass
            and not granted`;
        return count === n;
      }, 5_000);
    };
    try {
      const first = a.get(`${ENDPOINTS}/${ea.id}/stats`);
      await waiting(1);
      const second = await a.get(`${ENDPOINTS}/${ea.id}/stats`);
      assert.deepEqual([second.status, second.headers.get("retry-after")], [429, "1"], JSON.stringify(second.body));
      const other = b.get(`${ENDPOINTS}/${eb.id}/stats`); // not refused: it waits like A's first
      await waiting(2);
      const third = await c.get(`${ENDPOINTS}/${ec.id}/stats`);
      assert.deepEqual([third.status, third.headers.get("retry-after")], [503, "1"], "the instance's share is full");
      release();
      await holding;
      assert.deepEqual([(await first).status, (await other).status], [200, 200]);
      assert.equal((await a.get(`${ENDPOINTS}/${ea.id}/stats`)).status, 200, "the share is given back");
    } finally {
      release();
      await holding;
    }
  } finally {
    await ctx.close();
  }
});
