/**
 * Payload filters as an integrator uses them: a CEL expression on the endpoint, refused with the position of its
 * fault, shown on the endpoint, and deciding at fan-out which events get a delivery record (docs/webhooks.md,
 * Filters).
 */
import assert from "node:assert/strict";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { bankTransactionData } from "../support/rails.ts";

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
