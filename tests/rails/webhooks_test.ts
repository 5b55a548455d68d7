/**
 * A receiver gets the sandbox's events as the integrator's endpoint would: signed, each one a delivery record the
 * integrator can look up.
 */
import assert from "node:assert/strict";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { assertCreated, keys, registerBrlAccount, registerPerson } from "../support/rails.ts";
import { randomCpf } from "../support/check_digits.ts";
import { startReceiver } from "../support/webhook_receiver.ts";

/**
 * What the sandbox is for: an integrator points a real receiver at the service and watches signed events arrive
 * for the money it moves, without real money. Here the wire correction path and a late-registered payer.
 */
Deno.test("a receiver gets the sandbox's events, signed, as the integrator's endpoint would", async (t) => {
  const ctx = await setup("rails_webhooks", { worker: true });
  const receiver = startReceiver();
  const company = await newCompany(ctx);
  try {
    const endpoint = assertCreated(
      await company.post("/api/v2/notifications/endpoints", { url: `${receiver.url}/rails` }),
    );
    const secret = endpoint.secret as string;
    const person = await registerPerson(company);
    const account = await registerBrlAccount(company, person.id);
    const arrived = (type: string, match: (data: Record<string, unknown>) => boolean = () => true) =>
      eventually(
        `${type} at the receiver`,
        () => receiver.at("/rails").find((a) => a.body?.type === type && match(a.body.data)),
      );

    await t.step("a payout the bank refuses arrives as identified, then wire_waiting_correction", async () => {
      const tx = assertCreated(
        await company.post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "42.00",
          currency: "BRL",
          fail_with: "CH11",
        }),
      );
      const identified = await arrived("identified", (d) => d.transaction_id === tx.id);
      assert.deepEqual(keys(identified.body), ["data", "id", "type"]);
      assert.equal(await verifySignature(identified.raw, identified.signature, secret), true);

      const waiting = await arrived("wire_waiting_correction");
      assert.equal(await verifySignature(waiting.raw, waiting.signature, secret), true);
      assert.deepEqual(waiting.body.data, {
        error_code: "CH11",
        error_description: "Creditor identifier incorrect",
        bank_account_owner_id: person.id,
        bank_account_id: account.id,
        transaction_ids: [tx.id],
        wire_id: tx.wire_id,
      });

      const res = await company.put(`/api/v1/wires/${tx.wire_id}/update_bank_account`, {
        bank_account: { owner_document_number: randomCpf(), owner_document_type: "cpf" },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, "waiting_confirmation");

      const created = await arrived("wire_created", (d) => d.wire_id === tx.wire_id);
      assert.equal(await verifySignature(created.raw, created.signature, secret), true);
      assert.deepEqual(created.body.data, { wire_id: tx.wire_id, transaction_ids: [tx.id] });
    });

    await t.step("a late-registered payer: non_identified_bank_transaction, then identified", async () => {
      const cpf = randomCpf();
      const bt = assertCreated(
        await company.post("/api/sandbox/bank_transactions", {
          value: "77.70",
          currency: "BRL",
          payer: { document_number: cpf, document_type: "cpf", name: "Paula Pagante" },
        }),
      );
      const held = await arrived(
        "non_identified_bank_transaction",
        (d) => (d.bank_transaction as { id: string }).id === bt.id,
      );
      assert.equal(await verifySignature(held.raw, held.signature, secret), true);
      assert.equal(held.body.data.bank_transaction.value, "77.70");

      const payer = await registerPerson(company, { document_number: cpf });
      const [tx] = (await company.get(`/api/v1/subject/${payer.id}/transactions`)).body.data;
      const identified = await arrived("identified", (d) => d.transaction_id === tx.id);
      assert.equal(await verifySignature(identified.raw, identified.signature, secret), true);
    });

    await t.step("each arrival is a delivery record the integrator can look up", async () => {
      const arrival = receiver.at("/rails").find((a) => a.body?.type === "wire_waiting_correction")!;
      const record = await eventually("the delivery record succeeded", async () => {
        const res = await company.get(`/api/v2/notifications/events/${arrival.body.id}`);
        return res.status === 200 && res.body.data.status === "succeeded" ? res.body.data : null;
      });
      assert.equal(record.type, "wire_waiting_correction");
      assert.deepEqual(record.payload, arrival.body.data);
    });
  } finally {
    await ctx.close();
    await receiver.close();
  }
});
