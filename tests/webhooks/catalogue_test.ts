/**
 * The event catalogue: one JSON Schema per type, served and documented, and met by every body the sandbox and the test
 * event send.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { EVENT_TYPES, isOperational, OPERATIONAL_EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import { registerBrlAccount, registerPerson, UNKNOWN_MXN_PAYER_TRANSFER } from "../support/rails.ts";
import { randomCpf } from "../support/check_digits.ts";

type EventType = { type: string; description: string; schema: Record<string, unknown> };

/** A validator per type, built from the schemas the API serves, as an integrator's receiver would. */
function validators(types: EventType[]) {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  return new Map(types.map((t) => [t.type, ajv.compile(t.schema)]));
}

Deno.test("event catalogue: one JSON Schema per type, served, documented, and met by every body sent", async (t) => {
  const ctx = await setup("webhook_catalogue", { worker: true });
  const rx = startReceiver();
  try {
    const company = await newCompany(ctx);
    const res = await company.get("/api/v2/notifications/event_types");
    assert.equal(res.status, 200);
    const types: EventType[] = res.body.data;
    const validate = validators(types);

    await t.step("every event type is listed once, described, with a schema a strict validator compiles", () => {
      assert.deepEqual(types.map((e) => e.type), [...EVENT_TYPES]);
      for (const e of types) {
        assert.ok(e.description.length > 10, e.type);
        assert.deepEqual(e.schema.required, ["id", "type", "data"]);
      }
    });

    await t.step("a body with a missing, extra or mistyped data key is refused by the schema", () => {
      const check = validate.get("subject_reproved")!;
      const id = crypto.randomUUID();
      const subject_id = crypto.randomUUID();
      assert.ok(check({ id, type: "subject_reproved", data: { subject_id, items: ["x"] } }));
      assert.ok(!check({ id, type: "subject_reproved", data: { subject_id } }), "items missing");
      assert.ok(!check({ id, type: "subject_reproved", data: { subject_id, items: [], extra: 1 } }), "extra key");
      assert.ok(!check({ id, type: "identified", data: { subject_id, items: [] } }), "another type");
      assert.ok(!validate.get("identified")!({ id, type: "identified", data: { transaction_id: 7 } }), "mistyped");
    });

    await t.step(
      "the OpenAPI document's webhooks carry the same schema per type, and their examples pass",
      async () => {
        const doc = await (await ctx.app.request("/openapi.json")).json();
        assert.deepEqual(Object.keys(doc.webhooks), [...EVENT_TYPES]);
        for (const e of types) {
          const body = doc.webhooks[e.type].post.requestBody.content["application/json"];
          assert.deepEqual(body.schema, e.schema, e.type);
          assert.ok(validate.get(e.type)!(body.example), `${e.type}: ${JSON.stringify(validate.get(e.type)!.errors)}`);
        }
      },
    );

    await t.step("every type produced through the sandbox arrives with a body its schema accepts", async () => {
      const endpoint = (await company.post("/api/v2/notifications/endpoints", { url: `${rx.url}/all` })).body.data;
      const post = async (path: string, body?: unknown) => {
        const r = await company.post(path, body);
        assert.equal(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
        return r.body.data;
      };
      const person = await registerPerson(company);
      const account = await registerBrlAccount(company, person.id);
      const payin = { subject_id: person.id, value: "100.00" };
      await post("/api/sandbox/payins", { ...payin, currency: "BRL" });
      await post("/api/sandbox/payins", { ...payin, currency: "MXN", exchange: true });
      const payout = { subject_id: person.id, bank_account_id: account.id, value: "10.00", currency: "BRL" };
      await post("/api/sandbox/payouts", payout);
      await post("/api/sandbox/payouts", { ...payout, fail_with: "AC03" });
      for (const outcome of ["approved", "failed"]) {
        await post("/api/sandbox/card_payments", { ...payin, currency: "BRL", outcome });
      }
      const refusing = await post("/api/sandbox/pix_charges", { ...payin, refuse_third_party: true });
      await post(`/api/sandbox/pix_charges/${refusing.id}/pay`, { payer_document_number: randomCpf() });
      const expiring = await post("/api/sandbox/pix_charges", payin);
      await post(`/api/sandbox/pix_charges/${expiring.id}/expire`);
      await post("/api/sandbox/bank_transactions", UNKNOWN_MXN_PAYER_TRANSFER);
      await post("/api/sandbox/bank_transactions", {
        value: "10.00",
        currency: "BRL",
        payer: { document_number: randomCpf(), document_type: "cpf", name: "Outro Pagador" },
      });
      await post(`/api/sandbox/subjects/${person.id}/reprove`, { items: ["proof_of_address_rejected"], reason: "x" });
      await post(`/api/sandbox/subjects/${person.id}/reprove`, { items: ["old_tax_declaration"] });
      await post(`/api/sandbox/subjects/${person.id}/request_documents`, { required_documents: ["proof_of_address"] });
      await post(`/api/sandbox/subjects/${person.id}/approve`);
      const sub = await post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 1 });
      await post(`/api/sandbox/subscriptions/${sub.id}/pay_invoice`);
      const other = await post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 3 });
      await post(`/api/sandbox/subscriptions/${other.id}/cancel`, { by_payer: true, reason: "no longer" });

      const [{ count }] = await ctx.sql<{ count: number }[]>`
        select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpoint.id}`;
      await eventually("every record arrives", () => rx.at("/all").length >= count, 20_000);
      const arrived = new Set<string>();
      for (const a of rx.at("/all")) {
        const type: string = a.body.type;
        const check = validate.get(type);
        assert.ok(check, `unknown type ${type}`);
        assert.ok(check(a.body), `${a.raw}\n${JSON.stringify(check.errors)}`);
        arrived.add(type);
      }
      // the operational types are about webhooks, not the sandbox: tests/webhooks/operational_events_test.ts
      const produced = EVENT_TYPES.filter((type) => !isOperational(type));
      assert.deepEqual(produced.filter((type) => !arrived.has(type)), [], "every type arrived");
    });

    await t.step("a test event of each type arrives with a body its schema accepts", async () => {
      // `*` takes in every type but the operational ones, which are named
      const endpoint = (await company.post("/api/v2/notifications/endpoints", {
        url: `${rx.url}/tests`,
        enabled_events: ["*", ...OPERATIONAL_EVENT_TYPES],
      })).body.data;
      for (const type of EVENT_TYPES) {
        const sent = await company.post(`/api/v2/notifications/endpoints/${endpoint.id}/test`, { type });
        assert.equal(sent.status, 202, JSON.stringify(sent.body));
      }
      await eventually("every test event arrives", () => rx.at("/tests").length === EVENT_TYPES.length);
      for (const a of rx.at("/tests")) assert.ok(validate.get(a.body.type)!(a.body), a.raw);
      assert.deepEqual(new Set(rx.at("/tests").map((a) => a.body.type)), new Set(EVENT_TYPES));
    });
  } finally {
    await rx.close();
    await ctx.close();
  }
});
