/**
 * Status-aware retries: Retry-After parsed and capped, a 410 disabling at once, 429 and 503 postponing the next
 * attempt, and a success restarting the failing clock.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { retryAfterSeconds } from "../../domain/webhooks/engine/sender.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, EVENTS, recordsOf } from "../support/endpoints.ts";
import { seqId, startReceiver } from "../support/webhook_receiver.ts";

Deno.test("Retry-After values: seconds or an HTTP date, capped at a day", () => {
  const now = Date.parse("2026-11-23T12:00:00Z");
  assert.equal(retryAfterSeconds("120", now), 120);
  assert.equal(retryAfterSeconds("Mon, 23 Nov 2026 12:00:30 GMT", now), 30);
  assert.equal(retryAfterSeconds("Mon, 23 Nov 2026 11:00:00 GMT", now), 0);
  assert.equal(retryAfterSeconds("999999", now), 86_400);
  for (const bad of [null, "", "soon", "-5", "1.5", "Someday, 5"]) {
    assert.equal(retryAfterSeconds(bad, now), null, String(bad));
  }
});

Deno.test("status-aware retries and auto-disable, seen by an integrator", async (t) => {
  const ctx = await setup("status_retries", {
    worker: true,
    env: { WEBHOOK_RETRY_SCHEDULE: "0.2", WEBHOOK_DISABLE_AFTER_SECONDS: "1" },
  });
  const answers = new Map<string, (n: number) => Response>();
  const rx = startReceiver((a, n) => answers.get(a.path)?.(n) ?? new Response("ok"));
  const endpoint = async (
    company: Company,
    path: string,
    answer: (n: number) => Response,
    settings: Record<string, unknown> = {},
  ) => {
    answers.set(path, answer);
    return await createEndpoint(company, `${rx.url}${path}`, settings) as {
      id: string;
      disabled_reason: string | null;
      disabled_at: string | null;
    };
  };
  const emit = (company: Company, n: number) =>
    ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: seqId(n) }));
  const shown = async (company: Company, id: string) => (await company.get(`${ENDPOINTS}/${id}`)).body.data;

  try {
    await t.step("an active endpoint has no disabled_reason; DELETE disables it as manual", async () => {
      const company = await newCompany(ctx);
      const ep = await endpoint(company, "/manual", () => new Response("ok"));
      assert.deepEqual([ep.disabled_reason, ep.disabled_at], [null, null]);
      assert.equal((await company.delete(`${ENDPOINTS}/${ep.id}`)).status, 200);
      const after = await shown(company, ep.id);
      assert.deepEqual([after.status, after.disabled_reason], ["disabled", "manual"]);
      assert.ok(Math.abs(Date.parse(after.disabled_at) - Date.now()) < 60_000);
    });

    await t.step("410 Gone disables the endpoint at once and fails what was pending", async () => {
      const company = await newCompany(ctx);
      // sequential: one request at a time, so no other one is already in flight when the 410 comes
      const ep = await endpoint(company, "/gone", () => new Response("gone", { status: 410 }), {
        delivery_mode: "sequential",
      });
      await ctx.sql.begin(async (tx) => {
        for (let i = 0; i < 3; i++) await emitEvent(tx, company.id, "identified", { transaction_id: seqId(i) });
      });
      const after = await eventually("disabled", async () => {
        const e = await shown(company, ep.id);
        return e.status === "disabled" && e;
      });
      assert.equal(after.disabled_reason, "gone");
      await eventually(
        "every record failed",
        async () => (await recordsOf(company, ep.id)).every((r) => r.status === "failed"),
      );
      assert.equal(rx.at("/gone").length, 1, "nothing is sent after the 410");
      await emit(company, 99);
      assert.equal((await recordsOf(company, ep.id)).length, 3, "later events create no records for it");
    });

    await t.step("429 with Retry-After in seconds postpones the next attempt beyond the schedule", async () => {
      const company = await newCompany(ctx);
      await endpoint(
        company,
        "/busy",
        (n) =>
          n === 1 ? new Response("slow down", { status: 429, headers: { "retry-after": "2" } }) : new Response("ok"),
      );
      await emit(company, 1);
      await eventually("second attempt", () => rx.at("/busy").length >= 2, 10_000);
      const [first, second] = rx.at("/busy");
      assert.ok(second.receivedAt - first.receivedAt >= 2_000, `${second.receivedAt - first.receivedAt} ms`);
    });

    await t.step(
      "attempts show duration_ms and a few response headers, never cookies; a refusal says why",
      async () => {
        const company = await newCompany(ctx);
        const ep = await endpoint(company, "/headers", () =>
          new Response("ok", {
            headers: { "x-request-id": "req-7", "set-cookie": "session=secret", "content-type": "text/plain" },
          }));
        await emit(company, 1);
        const [record] = await eventually("delivered", async () => {
          const all = await recordsOf(company, ep.id);
          return all[0]?.status === "succeeded" && all;
        }) as unknown as { id: string }[];
        const [attempt] = (await company.get(`${EVENTS}/${record.id}`)).body.data.attempts;
        assert.equal(typeof attempt.duration_ms, "number");
        assert.equal(attempt.response_headers["x-request-id"], "req-7");
        assert.equal(attempt.response_headers["content-type"], "text/plain");
        assert.equal(JSON.stringify(attempt.response_headers).includes("secret"), false);

        // a port nothing listens on
        const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
        const port = (closed.addr as Deno.NetAddr).port;
        closed.close();
        const res = await company.post(ENDPOINTS, { url: `http://127.0.0.1:${port}/nobody` });
        await emit(company, 2);
        const failed = await eventually("an attempt", async () => {
          const [r] = await recordsOf(company, res.body.data.id);
          const d = r && (await company.get(`${EVENTS}/${(r as unknown as { id: string }).id}`)).body.data;
          return d?.attempts.length > 0 && d.attempts[0];
        });
        assert.deepEqual([failed.http_status, failed.response_body], [0, "connection refused (ECONNREFUSED)"]);
        assert.deepEqual(failed.response_headers, {});
      },
    );

    await t.step("503 with Retry-After as an HTTP date postpones it to that time", async () => {
      const company = await newCompany(ctx);
      await endpoint(
        company,
        "/maintenance",
        (n) =>
          n === 1
            ? new Response("down", {
              status: 503,
              headers: { "retry-after": new Date(Date.now() + 2_500).toUTCString() },
            })
            : new Response("ok"),
      );
      await emit(company, 1);
      await eventually("second attempt", () => rx.at("/maintenance").length >= 2, 10_000);
      const [first, second] = rx.at("/maintenance");
      assert.ok(second.receivedAt - first.receivedAt >= 1_000, `${second.receivedAt - first.receivedAt} ms`);
    });

    await t.step(
      "nothing but failures for WEBHOOK_DISABLE_AFTER_SECONDS disables the endpoint as failing",
      async () => {
        const company = await newCompany(ctx);
        const ep = await endpoint(company, "/down", () => new Response("broken", { status: 500 }));
        await emit(company, 1);
        const after = await eventually("disabled", async () => {
          const e = await shown(company, ep.id);
          return e.status === "disabled" && e;
        }, 10_000);
        assert.equal(after.disabled_reason, "failing");
        const arrivals = rx.at("/down");
        assert.ok(arrivals.at(-1)!.receivedAt - arrivals[0].receivedAt >= 1_000);
        assert.ok(arrivals.length < 10, "disabled before the record ran out of attempts");
        await eventually("record failed", async () => (await recordsOf(company, ep.id))[0].status === "failed");
      },
    );

    await t.step("a success in between restarts the clock: the endpoint stays active", async () => {
      const company = await newCompany(ctx);
      // attempts 1-3 fail, 4 succeeds; the next record's attempts 5-8 fail, 9 succeeds: over 1 s of failures
      // in all, never 1 s without a success
      const ep = await endpoint(
        company,
        "/flaky",
        (n) => n === 4 || n >= 9 ? new Response("ok") : new Response("no", { status: 500 }),
      );
      await emit(company, 1);
      await eventually("first record delivered", () => rx.at("/flaky").length >= 4);
      await emit(company, 2);
      await eventually(
        "second record delivered",
        async () => (await recordsOf(company, ep.id)).every((r) => r.status === "succeeded"),
        10_000,
      );
      const arrivals = rx.at("/flaky");
      assert.ok(arrivals.at(-1)!.receivedAt - arrivals[0].receivedAt > 1_000, "the failures spanned over 1 s");
      assert.equal((await shown(company, ep.id)).status, "active");
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
