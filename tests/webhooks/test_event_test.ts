/**
 * The test event: the catalogue's example sent to one endpoint only, delivered with its body settings and listed like
 * any event.
 */
import assert from "node:assert/strict";
import { EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, ENDPOINTS, EVENTS } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";

Deno.test("test event: the catalogue's example, sent to one endpoint, delivered and listed like any event", async (t) => {
  const ctx = await setup("webhook_test_event", { worker: true });
  const rx = startReceiver();
  try {
    await t.step("the type asked for reaches that endpoint alone, signed, and is listed", async () => {
      const company = await newCompany(ctx);
      const target = await createEndpoint(company, `${rx.url}/target`);
      await createEndpoint(company, `${rx.url}/bystander`);
      const res = await company.post(`${ENDPOINTS}/${target.id}/test`, { type: "wire_created" });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      const record = res.body.data;
      assert.deepEqual([record.endpoint_id, record.type, record.status], [target.id, "wire_created", "pending"]);
      assert.deepEqual(Object.keys(record.payload).sort(), ["transaction_ids", "wire_id"]);

      const arrival = await eventually("the test event arrives", () => rx.at("/target")[0]);
      assert.deepEqual(arrival.body, { id: record.id, type: "wire_created", data: record.payload });
      assert.ok(await verifySignature(arrival.raw, arrival.signature, target.secret));
      await eventually(
        "succeeded",
        async () => (await company.get(`${EVENTS}/${record.id}`)).body.data.status === "succeeded",
      );
      const listed = (await company.get(`${EVENTS}?endpoint_id=${target.id}`)).body.data;
      assert.deepEqual(listed.map((r: { id: string }) => r.id), [record.id]);
      assert.equal(rx.at("/bystander").length, 0);
      assert.equal((await company.get(`${EVENTS}?type=wire_created`)).body.data.length, 1, "no record for the other");
    });

    await t.step("without a type: the first type the endpoint enables", async () => {
      const company = await newCompany(ctx);
      const all = await createEndpoint(company, `${rx.url}/all`);
      const some = await createEndpoint(company, `${rx.url}/some`, {
        enabled_events: ["subject_approved", "identified"],
      });
      const first = await company.post(`${ENDPOINTS}/${all.id}/test`);
      assert.deepEqual([first.status, first.body.data.type], [202, EVENT_TYPES[0]]);
      const second = await company.post(`${ENDPOINTS}/${some.id}/test`, {});
      assert.deepEqual([second.status, second.body.data.type], [202, "subject_approved"]);
      await eventually("both arrive", () => rx.at("/all").length === 1 && rx.at("/some").length === 1);
      assert.equal(rx.at("/some")[0].body.type, "subject_approved");
    });

    await t.step(
      "a type the endpoint does not enable, or an unknown one, is refused by field; another company gets 404",
      async () => {
        const company = await newCompany(ctx);
        const endpoint = await createEndpoint(company, `${rx.url}/refused`, { enabled_events: ["identified"] });
        const off = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, { type: "wire_created" });
        assert.deepEqual([off.status, off.body], [422, { errors: { type: ["is not enabled for this endpoint"] } }]);
        const unknown = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, { type: "nope" });
        assert.deepEqual([unknown.status, Object.keys(unknown.body.errors)], [422, ["type"]]);
        assert.equal((await company.get(`${EVENTS}?endpoint_id=${endpoint.id}`)).body.data.length, 0);
        const other = await newCompany(ctx);
        assert.equal((await other.post(`${ENDPOINTS}/${endpoint.id}/test`, {})).status, 404);
      },
    );

    await t.step("the endpoint's body settings apply to a test event as to any other", async () => {
      const company = await newCompany(ctx);
      const endpoint = await createEndpoint(company, `${rx.url}/renamed`, {
        event_mapping: { identified: "paid" },
        event_payload_type: "thin",
      });
      const res = await company.post(`${ENDPOINTS}/${endpoint.id}/test`, { type: "identified" });
      const arrival = await eventually("it arrives", () => rx.at("/renamed")[0]);
      assert.deepEqual(arrival.body, { id: res.body.data.id, type: "paid" });
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
