/**
 * Webhook delivery end to end: the signed JSON body and its formats, enabled types, retries until success or failure,
 * manual retry, a disabled endpoint, and the outbox rolling back with its producer's transaction.
 */
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { parseSignatureHeader, verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, EVENTS, listRecords } from "../support/endpoints.ts";
import { type Arrival, hmac, type Receiver, sleep, startReceiver } from "../support/webhook_receiver.ts";

/** Per path: how many of the first requests fail (Infinity: all), and with which status. */
const failures = new Map<string, { count: number; status: number }>();

/** One endpoint's delivery records, the listing checked (200). */
async function recordsOf(company: Company, endpointId: string) {
  const res = await listRecords(company, endpointId);
  assert.equal(res.status, 200);
  return res.body.data;
}

async function detail(company: Company, id: string) {
  const res = await company.get(`${EVENTS}/${id}`);
  assert.equal(res.status, 200);
  return res.body.data;
}

/** Waits for exactly `count` arrivals at `path`. */
async function arrivals(rx: Receiver, path: string, count = 1): Promise<Arrival[]> {
  await eventually(`${count} arrival(s) at ${path}`, () => rx.at(path).length >= count);
  const got = rx.at(path);
  assert.equal(got.length, count, path);
  return got;
}

function untilStatus(company: Company, id: string, status: string) {
  return eventually(`record ${id} ${status}`, async () => {
    const d = await detail(company, id);
    return d.status === status && d;
  });
}

Deno.test("webhook delivery", async (t) => {
  const ctx = await setup("webhook_delivery", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.05" } });
  const rx = startReceiver((a: Arrival, n: number) => {
    const fail = failures.get(a.path);
    if (fail && n <= fail.count) return new Response(`failure ${n}`, { status: fail.status });
    return new Response(`ok ${n}`);
  });

  await t.step("a delivery arrives as JSON, signed with the endpoint secret", async () => {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${rx.url}/signed`);
    const transaction_id = crypto.randomUUID();
    const { id: eventId } = await emit(ctx, company, "identified", { transaction_id });
    const [arrival] = await arrivals(rx, "/signed");

    assert.equal(arrival.headers.get("content-type"), "application/json");
    assert.match(arrival.headers.get("user-agent") ?? "", /payments-api/);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, endpoint.secret), true);
    const parts = parseSignatureHeader(arrival.signature!)!;
    assert.equal(parts.v0, undefined);
    assert.equal(parts.v1, hmac(endpoint.secret, parts.t, arrival.raw));
    assert.ok(Math.abs(parts.t - Date.now() / 1000) < 60);

    const [record] = await recordsOf(company, endpoint.id);
    assert.deepEqual(arrival.body, { id: record.id, type: "identified", data: { transaction_id } });
    assert.equal(record.event_id, eventId);
    const done = await untilStatus(company, record.id, "succeeded");
    assert.equal(done.attempts.length, 1);
    assert.deepEqual(
      {
        n: done.attempts[0].attempt_number,
        status: done.attempts[0].http_status,
        body: done.attempts[0].response_body,
      },
      { n: 1, status: 200, body: "ok 1" },
    );
  });

  await t.step("after rotate_secret, v1 uses the new secret and v0 the previous one", async () => {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${rx.url}/rotated`);
    const rotated = (await company.post(`${ENDPOINTS}/${endpoint.id}/rotate_secret`)).body.data;
    await emit(ctx, company, "payment_approved", { transaction_id: crypto.randomUUID() });
    const [arrival] = await arrivals(rx, "/rotated");

    const parts = parseSignatureHeader(arrival.signature!)!;
    const sign = (secret: string) => hmac(secret, parts.t, arrival.raw);
    assert.equal(parts.v1, sign(rotated.secret));
    assert.equal(parts.v0, sign(endpoint.secret));
    assert.equal(await verifySignature(arrival.raw, arrival.signature, rotated.secret), true);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, endpoint.secret), true);
    assert.equal(await verifySignature(arrival.raw, arrival.signature, "0".repeat(64)), false);
  });

  await t.step("each body format, and their combinations, as documented", async () => {
    const company = await newCompany(ctx);
    const formats: Record<string, Record<string, unknown>> = {
      snapshot: {},
      thin: { event_payload_type: "thin" },
      wrapped: { wrap_in_notification: true },
      legacy: { wrap_in_notification: true, inject_secret_in_body: true },
      injected: { inject_secret_in_body: true },
      thin_wrapped: { event_payload_type: "thin", wrap_in_notification: true },
      thin_injected: { event_payload_type: "thin", inject_secret_in_body: true },
      mapped: { event_mapping: { document_required: "documents_needed" } },
      mapped_legacy: {
        wrap_in_notification: true,
        inject_secret_in_body: true,
        event_mapping: { document_required: "documents_needed" },
      },
    };
    const endpoints: Record<string, { id: string; secret: string }> = {};
    for (const [name, settings] of Object.entries(formats)) {
      endpoints[name] = await createEndpoint(company, `${rx.url}/format/${name}`, settings);
    }
    const data = { subject_id: crypto.randomUUID(), required_documents: ["proof_of_address"] };
    await emit(ctx, company, "document_required", data);
    const bodies: Record<string, unknown> = {};
    const ids: Record<string, string> = {};
    for (const name of Object.keys(formats)) {
      const [arrival] = await arrivals(rx, `/format/${name}`);
      assert.equal(await verifySignature(arrival.raw, arrival.signature, endpoints[name].secret), true, name);
      bodies[name] = arrival.body;
      ids[name] = (await recordsOf(company, endpoints[name].id))[0].id;
    }
    const secret = (name: string) => endpoints[name].secret;
    assert.deepEqual(bodies, {
      snapshot: { id: ids.snapshot, type: "document_required", data },
      thin: { id: ids.thin, type: "document_required" },
      wrapped: { notification: { type: "document_required", ...data } },
      legacy: { notification: { type: "document_required", ...data, secret: secret("legacy") } },
      injected: { id: ids.injected, type: "document_required", data, secret: secret("injected") },
      thin_wrapped: { notification: { type: "document_required", id: ids.thin_wrapped } },
      thin_injected: { id: ids.thin_injected, type: "document_required", secret: secret("thin_injected") },
      mapped: { id: ids.mapped, type: "documents_needed", data },
      mapped_legacy: { notification: { type: "documents_needed", ...data, secret: secret("mapped_legacy") } },
    });
    // The mapping renames the outbound type only: the record keeps the real one.
    assert.equal((await recordsOf(company, endpoints.mapped.id))[0].type, "document_required");
  });

  await t.step("only the enabled event types reach an endpoint", async () => {
    const company = await newCompany(ctx);
    const some = await createEndpoint(company, `${rx.url}/enabled/some`, {
      enabled_events: ["payment_approved", "payment_failed"],
    });
    const all = await createEndpoint(company, `${rx.url}/enabled/all`);
    await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
    await emit(ctx, company, "payment_approved", { transaction_id: crypto.randomUUID() });
    await emit(ctx, company, "subject_approved", { subject_id: crypto.randomUUID() });
    await eventually("all three at the catch-all", () => rx.at("/enabled/all").length === 3);
    await eventually("one at the filtered endpoint", () => rx.at("/enabled/some").length === 1);
    assert.deepEqual(rx.at("/enabled/some").map((a) => a.body.type), ["payment_approved"]);
    assert.deepEqual((await recordsOf(company, some.id)).map((r: { type: string }) => r.type), ["payment_approved"]);
    assert.equal((await recordsOf(company, all.id)).length, 3);
  });

  await t.step("three failures then a success: succeeded, with the 4 attempts listed", async () => {
    const company = await newCompany(ctx);
    failures.set("/flaky", { count: 3, status: 500 });
    const endpoint = await createEndpoint(company, `${rx.url}/flaky`);
    await emit(ctx, company, "wire_created", {
      wire_id: crypto.randomUUID(),
      transaction_ids: [crypto.randomUUID(), crypto.randomUUID()],
    });
    const [record] = await recordsOf(company, endpoint.id);
    const done = await untilStatus(company, record.id, "succeeded");
    assert.deepEqual(
      done.attempts.map((a: { attempt_number: number; http_status: number; response_body: string }) => [
        a.attempt_number,
        a.http_status,
        a.response_body,
      ]),
      [[1, 500, "failure 1"], [2, 500, "failure 2"], [3, 500, "failure 3"], [4, 200, "ok 4"]],
    );
    assert.equal(rx.at("/flaky").length, 4);
    // Every attempt carries the same body, so the receiver can de-duplicate by id.
    assert.equal(new Set(rx.at("/flaky").map((a) => a.raw)).size, 1);
    // the record says as much without opening it: four attempts, nothing more due, no error since the success
    const [listed] = await recordsOf(company, endpoint.id);
    assert.deepEqual([listed.attempts_count, listed.next_attempt_at, listed.last_error], [4, null, null]);
  });

  await t.step("a receiver that always fails: pending while attempts remain, failed after exactly 10", async () => {
    const company = await newCompany(ctx);
    failures.set("/dead", { count: Infinity, status: 503 });
    const endpoint = await createEndpoint(company, `${rx.url}/dead`);
    await emit(ctx, company, "payment_failed", { transaction_id: crypto.randomUUID() });
    const [record] = await recordsOf(company, endpoint.id);
    await eventually("a first failed attempt", () => rx.at("/dead").length >= 1);
    const midway = await detail(company, record.id);
    if (midway.attempts.length < 10) assert.equal(midway.status, "pending");
    await eventually("the record names its failure without being opened", async () => {
      const [listed] = await recordsOf(company, endpoint.id);
      return listed.attempts_count >= 1 && listed.last_error === "HTTP 503" &&
        (listed.status === "failed" || listed.next_attempt_at !== null);
    });
    const failed = await untilStatus(company, record.id, "failed");
    assert.equal(failed.attempts.length, 10);
    assert.deepEqual(failed.attempts.map((a: { attempt_number: number }) => a.attempt_number), [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9,
      10,
    ]);
    assert.ok(failed.attempts.every((a: { http_status: number }) => a.http_status === 503));
    assert.deepEqual([failed.attempts_count, failed.next_attempt_at, failed.last_error], [10, null, "HTTP 503"]);
    await sleep(300); // several retry periods: nothing more is attempted
    assert.equal(rx.at("/dead").length, 10);
  });

  await t.step("manual retry attempts again with a fresh schedule; a succeeded record cannot be retried", async () => {
    const company = await newCompany(ctx);
    failures.set("/revived", { count: Infinity, status: 500 });
    const endpoint = await createEndpoint(company, `${rx.url}/revived`);
    await emit(ctx, company, "payment_expired", { transaction_id: crypto.randomUUID() });
    const [record] = await recordsOf(company, endpoint.id);
    await untilStatus(company, record.id, "failed");

    // Still failing: a fresh schedule of 10 more attempts, then failed again.
    const again = await company.post(`${EVENTS}/${record.id}/retry`);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { message: "retry enqueued" });
    await eventually("ten more attempts", async () => (await detail(company, record.id)).attempts.length === 20);
    await untilStatus(company, record.id, "failed");

    // The receiver is fixed: one retry is enough.
    failures.delete("/revived");
    assert.equal((await company.post(`${EVENTS}/${record.id}/retry`)).status, 200);
    const done = await untilStatus(company, record.id, "succeeded");
    assert.equal(done.attempts.length, 21);
    assert.equal(done.attempts[20].http_status, 200);

    const refused = await company.post(`${EVENTS}/${record.id}/retry`);
    assert.equal(refused.status, 422);
    assert.deepEqual(refused.body, { errors: { detail: "event already succeeded" } });
  });

  await t.step("a disabled endpoint gets nothing more; what was pending is marked failed", async () => {
    const company = await newCompany(ctx);
    failures.set("/disabled", { count: Infinity, status: 500 });
    const endpoint = await createEndpoint(company, `${rx.url}/disabled`);
    await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
    const [record] = await recordsOf(company, endpoint.id);
    await eventually("a first attempt", () => rx.at("/disabled").length >= 1);
    assert.equal((await company.delete(`${ENDPOINTS}/${endpoint.id}`)).status, 200);
    const seen = rx.at("/disabled").length;
    const after = crypto.randomUUID();
    await emit(ctx, company, "identified", { transaction_id: after });
    await sleep(400);
    assert.ok(rx.at("/disabled").length <= seen + 1, "at most the attempt already in flight");
    assert.equal(rx.at("/disabled").filter((a) => a.body.data.transaction_id === after).length, 0);
    assert.equal((await detail(company, record.id)).status, "failed");
    assert.equal((await recordsOf(company, endpoint.id)).length, 1);
    const settled = rx.at("/disabled").length;
    await sleep(200);
    assert.equal(rx.at("/disabled").length, settled);
    const retry = await company.post(`/api/v2/notifications/events/${record.id}/retry`);
    assert.deepEqual([retry.status, retry.body], [422, { errors: { detail: "endpoint is disabled" } }]);
  });

  await t.step("a producer transaction that rolls back leaves no event, no record and no delivery", async () => {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${rx.url}/rollback`);
    const [rolledBack, committed] = [crypto.randomUUID(), crypto.randomUUID()];
    await assert.rejects(
      ctx.sql.begin(async (tx) => {
        await emitEvent(tx, company.id, "subject_approved", { subject_id: rolledBack });
        throw new Error("the state change failed");
      }),
      /state change failed/,
    );
    await emit(ctx, company, "subject_approved", { subject_id: committed });
    await eventually("the committed event", () => rx.at("/rollback").length === 1);
    await sleep(200);
    assert.deepEqual(rx.at("/rollback").map((a) => a.body.data.subject_id), [committed]);
    const records = await recordsOf(company, endpoint.id);
    assert.deepEqual(records.map((r: { payload: { subject_id: string } }) => r.payload.subject_id), [committed]);
    const [{ n }] = await ctx.sql`select count(*)::int as n from events where company_id = ${company.id}`;
    assert.equal(n, 1);
  });

  await t.step("emitEvent takes the producer's transaction: given the pool it does not compile", async () => {
    const company = await newCompany(ctx);
    const endpoint = await createEndpoint(company, `${rx.url}/autocommit`);
    // @ts-expect-error the pool is no transaction: the event would commit apart from the change that caused it
    const _fromPool: Parameters<typeof emitEvent>[0] = ctx.sql;
    const invoice = {
      id: crypto.randomUUID(),
      status: "paid",
      subject_id: crypto.randomUUID(),
      subscription_id: crypto.randomUUID(),
    };
    await ctx.sql.begin((tx) => emitEvent(tx, company.id, "invoice_paid", { invoice }));
    await eventually("delivery", () => rx.at("/autocommit").length === 1);
    assert.equal((await recordsOf(company, endpoint.id)).length, 1);
  });

  await rx.close();
  await ctx.close();
});
