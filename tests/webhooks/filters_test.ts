/**
 * Payload filters as an integrator uses them: a CEL expression on the endpoint, refused with the position of its
 * fault, shown on the endpoint, and deciding at fan-out which events get a delivery record (docs/webhooks.md,
 * Filters).
 */
import assert from "node:assert/strict";
import { type Company, eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { bankTransactionData, registerPerson } from "../support/rails.ts";
import { BIND_CHAIN, BIND_OUT_OF_MEMORY, HOSTILE_FILTERS, MAP_CHAIN } from "../support/hostile_filters.ts";

const BIG_BRL = 'data.bank_transaction.currency == "BRL" && double(data.bank_transaction.value) > 1000.0';

Deno.test("payload filters: refused with a position, shown on the endpoint, applied once per event", async (t) => {
  const ctx = await setup("webhook_filters", { worker: true });
  const rx = startReceiver();
  try {
    await t.step("a filter that does not parse, type-check or give a bool is refused, naming where", async () => {
      const company = await newCompany(ctx);
      const refused = async (filter: unknown) => {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/refused`, filter });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        return res.body.errors.filter;
      };
      assert.deepEqual(await refused('data.currency == "BRL" &&'), ["line 1, column 26: Unexpected token: EOF"]);
      assert.deepEqual(await refused('event_type == "identified"\n  && amount > 1'), [
        "line 2, column 6: Unknown variable: amount",
      ]);
      assert.deepEqual(await refused("size(data)"), ["line 1, column 1: must give a bool (true delivers), not int"]);
      const [regex] = await refused('data.bank_transaction.subject.name.matches("^(a+)+$")');
      assert.match(regex, /^line 1, column 1: matches\(\) is not allowed in a filter/);
      assert.deepEqual(await refused("  "), ["must not be blank (null removes the filter)"]);
      assert.deepEqual(await refused(`true || ${"true || ".repeat(150)}true`), [
        "is too long (maximum is 1000 characters)",
      ]);
      // the URL's rule and the filter's answer together, in one 422
      const both = await company.post(ENDPOINTS, { url: "ftp://example.com", filter: "data.x ==" });
      assert.deepEqual(Object.keys(both.body.errors).sort(), ["filter", "url"]);
      assert.equal((await company.get(ENDPOINTS)).body.data.length, 0, "nothing was created");
    });

    await t.step("only the events the filter passes get a record; an error means no delivery", async () => {
      const company = await newCompany(ctx);
      const big = await createEndpoint(company, `${rx.url}/big`, { filter: BIG_BRL });
      assert.equal(big.filter, BIG_BRL);
      const all = await createEndpoint(company, `${rx.url}/all`);
      assert.equal(all.filter, null);

      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("1500.00", "BRL"));
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("1000.00", "BRL"));
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("5000.00", "MXN"));
      // no bank_transaction key: the filter errors, and the event is not delivered to that endpoint
      await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });

      // the fan-out decided in the emitting transaction: the records are there (or not) at once
      const kept = await recordsOf(company, big.id);
      assert.deepEqual(kept.map((r) => [r.type, r.payload.bank_transaction.value]), [
        ["non_identified_bank_transaction", "1500.00"],
      ]);
      assert.equal((await recordsOf(company, all.id)).length, 4);
      await eventually("the unfiltered endpoint gets all four", () => rx.at("/all").length === 4);
      const [only] = await eventually("the filtered one gets its event", () => rx.at("/big").length && rx.at("/big"));
      assert.deepEqual(only.body, { id: kept[0].id, type: "non_identified_bank_transaction", data: kept[0].payload });
      assert.equal(rx.at("/big").length, 1);
    });

    await t.step("event_type and data together; the data as stored, whatever the body format", async () => {
      const company = await newCompany(ctx);
      const thin = await createEndpoint(company, `${rx.url}/thin`, {
        event_payload_type: "thin",
        event_mapping: { subject_approved: "approved" },
        // the catalogue's type, not the renamed one; the data though the body will not carry it
        filter: 'event_type == "subject_approved" && data.subject_id.startsWith("0")',
      });
      await emit(ctx, company, "subject_approved", { subject_id: "0193" });
      await emit(ctx, company, "subject_approved", { subject_id: "9999" });
      await emit(ctx, company, "subject_reproved", { subject_id: "0193" });
      const records = await recordsOf(company, thin.id);
      assert.deepEqual(records.map((r) => [r.type, r.payload.subject_id]), [["subject_approved", "0193"]]);
      const [got] = await eventually("it arrives", () => rx.at("/thin").length && rx.at("/thin"));
      assert.deepEqual(got.body, { id: records[0].id, type: "approved" });
    });

    await t.step("update sets, keeps, or clears (null) the filter; show and list present it", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/changing`, { filter: BIG_BRL });
      const mxn = 'data.bank_transaction.currency == "MXN"';
      const set = await company.put(`${ENDPOINTS}/${endpoint.id}`, { filter: mxn });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual([set.status, set.body.data.filter], [200, mxn]);
      const kept = await company.put(`${ENDPOINTS}/${endpoint.id}`, { delivery_mode: "sequential" });
      assert.deepEqual([kept.body.data.filter, kept.body.data.delivery_mode], [mxn, "sequential"]);
      assert.equal((await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data.filter, mxn);
      assert.deepEqual((await company.get(ENDPOINTS)).body.data.map((e: { filter: string }) => e.filter), [mxn]);
      const wrong = await company.put(`${ENDPOINTS}/${endpoint.id}`, { filter: "data.bank_transaction.currency ==" });
      assert.deepEqual(wrong.body, { errors: { filter: ["line 1, column 34: Unexpected token: EOF"] } });
      assert.equal((await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data.filter, mxn, "left as it was");

      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("9.00", "MXN"));
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("9.00", "BRL"));
      assert.equal((await recordsOf(company, endpoint.id)).length, 1);

      const cleared = await company.put(`${ENDPOINTS}/${endpoint.id}`, { filter: null });
      assert.deepEqual([cleared.status, cleared.body.data.filter], [200, null]);
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("9.00", "BRL"));
      assert.equal((await recordsOf(company, endpoint.id)).length, 2, "no filter: every enabled event again");
    });

    await t.step("a test event ignores the filter: it was asked for by name", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/tested`, { filter: "false" });
      await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
      assert.equal((await recordsOf(company, endpoint.id)).length, 0, "the filter holds for real events");
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, { type: "identified" });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      await eventually("the test event arrives", () => rx.at("/tested").length === 1);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});

Deno.test("a hostile filter is refused when saved, and one stored before the rule harms no one", async (t) => {
  const ctx = await setup("webhook_filter_budget", {
    worker: true,
    env: { WEBHOOK_RETRY_SCHEDULE: "0.05", WEBHOOK_FAILING_AFTER_ATTEMPTS: "1" },
  });
  const rx = startReceiver((a) => a.path === "/down" ? new Response("broken", { status: 500 }) : new Response("ok"));
  const stats = async (company: Company, id: string) =>
    (await company.get(`${ENDPOINTS}/${id}/stats`)).body.data.filter_errors;
  // what a filter stored before the budget looks like: written past the checks the API makes
  const storeFilter = (id: string, filter: string) =>
    ctx.sql`update webhook_endpoints set filter = ${filter} where id = ${id}`;
  try {
    await t.step("each hostile filter is a 422 naming filter, where, and the bound it passes", async () => {
      const company = await newCompany(ctx);
      for (const [name, filter] of Object.entries(HOSTILE_FILTERS)) {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/hostile`, filter });
        assert.equal(res.status, 422, name);
        assert.deepEqual(Object.keys(res.body.errors), ["filter"], name);
        assert.match(res.body.errors.filter[0], /^line 1, column \d+: .*(KiB|pairs|steps|MiB)/, name);
      }
      assert.equal((await company.get(ENDPOINTS)).body.data.length, 0);
    });

    await t.step("a pay-in meets stored hostile filters: it answers at once, others are not slowed", async () => {
      const attacker = await newCompany(ctx);
      const victim = await newCompany(ctx);
      const plain = await createEndpoint(attacker, `${rx.url}/plain`, { enabled_events: ["*"] });
      const hostile = [];
      for (const [i, filter] of [BIND_CHAIN, BIND_OUT_OF_MEMORY, MAP_CHAIN].entries()) {
        const e = await createEndpoint(attacker, `${rx.url}/hostile/${i}`, { enabled_events: ["*"] });
        await storeFilter(e.id, filter);
        hostile.push(e);
      }
      await createEndpoint(victim, `${rx.url}/victim`, { enabled_events: ["*"] });
      const person = await registerPerson(attacker);
      const timed = async <T>(f: () => Promise<T>) => {
        const start = performance.now();
        const value = await f();
        return { value, ms: performance.now() - start };
      };
      // the victim's read runs beside the attacker's pay-in, on the same process
      const [payin, read] = await Promise.all([
        timed(() => attacker.post("/api/sandbox/payins", { subject_id: person.id, value: "10.00", currency: "BRL" })),
        timed(() => victim.get(ENDPOINTS)),
      ]);
      assert.equal(payin.value.status, 201, JSON.stringify(payin.value.body));
      // milliseconds here; before the budget, seconds (or a process out of memory)
      assert.ok(payin.ms < 2_000, `the pay-in took ${payin.ms} ms`);
      assert.ok(read.ms < 1_000, `the victim's read took ${read.ms} ms`);
      assert.equal(read.value.status, 200);

      // the event went to the endpoint without a filter, to none of the hostile ones
      assert.equal((await recordsOf(attacker, plain.id)).length, 1);
      for (const e of hostile) {
        assert.equal((await recordsOf(attacker, e.id)).length, 0);
        const errors = await stats(attacker, e.id);
        assert.equal(errors.total, 1);
        assert.match(errors.last.message, /^not evaluated: line 1, column \d+: .*64 KiB a filter may build$/);
        assert.ok(Date.parse(errors.last.at) > Date.now() - 60_000);
      }
      assert.deepEqual(await stats(attacker, plain.id), {
        total: 0,
        last: null,
        deferred: 0,
        refused_after_deferral: 0,
        deferred_waiting: 0,
      });
    });

    await t.step("operational events go through the same budget: endpoint.failing to a hostile filter", async () => {
      const company = await newCompany(ctx);
      const ops = await createEndpoint(company, `${rx.url}/ops`, { enabled_events: ["endpoint.failing"] });
      await storeFilter(ops.id, BIND_OUT_OF_MEMORY);
      const down = await createEndpoint(company, `${rx.url}/down`, { enabled_events: ["identified"] });
      await emit(ctx, company, "identified", { transaction_id: crypto.randomUUID() });
      // the failing attempt is recorded, the operational event emitted in the recorder's transaction, its filter
      // stopped: the process goes on delivering
      const errors = await eventually("the ops endpoint's filter error", async () => {
        const e = await stats(company, ops.id);
        return e.total > 0 && e;
      });
      assert.match(errors.last.message, /^not evaluated: line 1, column 137: /);
      await eventually("the failing endpoint's attempts go on", async () => {
        const [d] = await recordsOf(company, down.id);
        return d && d.attempts_count >= 2;
      });
      assert.equal(rx.at("/ops").length, 0);
      const [event] = await ctx
        .sql`select 1 from events where company_id = ${company.id} and type = 'endpoint.failing'`;
      assert.ok(event, "endpoint.failing was emitted");
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
