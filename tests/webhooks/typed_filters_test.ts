/**
 * Typed filters as an integrator meets them (docs/webhooks.md, "Filters", "Checked against the event types"): the
 * issue's `data.bank_transaction.value > 1000`, once saved with 201 and then silently delivering nothing, is a 422
 * naming line and column; the fixed filter delivers the BRL 5,000 event to a real receiver; a change of types that
 * breaks the filter is refused; a filter stored before the check keeps working as it did, its errors in the stats.
 */
import assert from "node:assert/strict";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { bankTransactionData } from "../support/rails.ts";

const BANK = ["non_identified_bank_transaction"];
const ISSUE_FILTER = "data.bank_transaction.value > 1000";
const FIXED = "double(data.bank_transaction.value) > 1000.0";

Deno.test("typed filters: refused where they cannot work, delivering once fixed", async (t) => {
  const ctx = await setup("webhook_typed_filters", { worker: true });
  const rx = startReceiver();
  try {
    await t.step("the issue's filter is a 422 on filter with line, column and how to write it", async () => {
      const company = await newCompany(ctx);
      const res = await company.post(ENDPOINTS, { url: `${rx.url}/big`, enabled_events: BANK, filter: ISSUE_FILTER });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body.errors), ["filter"]);
      assert.match(
        res.body.errors.filter[0],
        /^line 1, column 1: no such overload: string > int \(amounts and other numbers written as text compare/,
      );
      assert.match(res.body.errors.filter[0], /double\(data\.bank_transaction\.value\) > 1000\.0/);
      // a field no subscribed type has, on the second line
      const typo = await company.post(ENDPOINTS, {
        url: `${rx.url}/typo`,
        enabled_events: BANK,
        filter: 'double(data.bank_transaction.value) > 1000.0 &&\n  data.bank_transaction.curency == "BRL"',
      });
      assert.deepEqual(typo.body, {
        errors: {
          filter: [
            "line 2, column 25: no event type the endpoint subscribes to (non_identified_bank_transaction) has the " +
            "field curency there",
          ],
        },
      });
      assert.equal((await company.get(ENDPOINTS)).body.data.length, 0, "nothing was created");
    });

    await t.step("the fixed filter delivers the BRL 5,000 event to the receiver, and not the small one", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/fixed`, { enabled_events: BANK, filter: FIXED });
      assert.equal(endpoint.filter, FIXED);
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("500.00", "BRL"));
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("5000.00", "BRL"));
      const [got] = await eventually("the BRL 5,000 event arrives", () => rx.at("/fixed").length && rx.at("/fixed"));
      assert.equal(got.body.data.bank_transaction.value, "5000.00");
      assert.equal(rx.at("/fixed").length, 1);
      const stats = (await company.get(`${ENDPOINTS}/${endpoint.id}/stats`)).body.data;
      assert.deepEqual(stats.filter_errors, {
        total: 0,
        last: null,
        deferred: 0,
        refused_after_deferral: 0,
        deferred_waiting: 0,
      });
    });

    await t.step("changing the types so that the filter no longer type-checks is a 422; the filter stays", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/moved`, { enabled_events: BANK, filter: FIXED });
      const res = await company.put(`${ENDPOINTS}/${endpoint.id}`, { enabled_events: ["identified"] });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        errors: {
          filter: [
            'with enabled_events ["identified"], the endpoint\'s filter no longer type-checks: line 1, column 13: no ' +
            "event type the endpoint subscribes to (identified) has the field bank_transaction there",
          ],
        },
      });
      const shown = (await company.get(`${ENDPOINTS}/${endpoint.id}`)).body.data;
      assert.deepEqual([shown.enabled_events, shown.filter], [BANK, FIXED], "left as it was");
      // with a filter for the new types in the same request, or adding a type, it is accepted
      const both = await company.put(`${ENDPOINTS}/${endpoint.id}`, {
        enabled_events: ["identified"],
        filter: 'data.transaction_id.startsWith("0")',
      });
      assert.equal(both.status, 200, JSON.stringify(both.body));
      const added = await company.put(`${ENDPOINTS}/${endpoint.id}`, { enabled_events: ["identified", ...BANK] });
      assert.equal(added.status, 200, JSON.stringify(added.body));
      // a filter changed alone is checked against the stored types
      const wrong = await company.put(`${ENDPOINTS}/${endpoint.id}`, { filter: ISSUE_FILTER });
      assert.match(wrong.body.errors.filter[0], /^line 1, column 1: no such overload: string > int/);
    });

    await t.step("a filter stored before the check keeps working as it did, its errors in the stats", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/legacy`, { enabled_events: BANK });
      // what an endpoint saved by the previous release holds: written past the API's checks
      await ctx.sql`update webhook_endpoints set filter = ${ISSUE_FILTER} where id = ${endpoint.id}`;
      // updates that do not change the filter are not refused for it, a change of types included
      for (
        const body of [
          { delivery_mode: "sequential" },
          { filter: ISSUE_FILTER },
          { enabled_events: ["identified", ...BANK] },
        ]
      ) {
        const res = await company.put(`${ENDPOINTS}/${endpoint.id}`, body);
        assert.equal(res.status, 200, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.data.filter, ISSUE_FILTER);
      }
      // evaluated as before: the comparison errs, the event is not delivered, and the endpoint's stats say why
      await emit(ctx, company, "non_identified_bank_transaction", bankTransactionData("5000.00", "BRL"));
      assert.equal((await recordsOf(company, endpoint.id)).length, 0);
      const errors = (await company.get(`${ENDPOINTS}/${endpoint.id}/stats`)).body.data.filter_errors;
      assert.equal(errors.total, 1);
      assert.match(errors.last.message, /^line 1, column 1: no such overload: dyn<string> > int/);
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
