/**
 * Each sandbox call emits the events the interface names, with exactly its data keys: pay-ins, exchanges, payouts and
 * wires, card payments, PIX charges, bank transactions and subscriptions.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import {
  assertCreated,
  eventsOf,
  keys,
  lastEventId,
  registerBrlAccount,
  registerPerson,
  typesSince,
  UNKNOWN_MXN_PAYER_TRANSFER,
} from "../support/rails.ts";
import { randomCpf } from "../support/check_digits.ts";

/**
 * Every event type (docs/sandbox.md), produced through the sandbox the way an integrator would exercise a
 * receiver: which call emits it, and exactly which keys its data carries.
 */
Deno.test("each sandbox call emits its events with exactly the interface's data keys", async (t) => {
  const ctx = await setup("rails_events");
  const company = await newCompany(ctx);
  const seen = new Set<string>();
  const only = async (since: string | null, type: string) => {
    const events = (await eventsOf(ctx, company, type)).filter((e) => since === null || e.id > since);
    assert.equal(events.length, 1, `one ${type} expected, got ${events.length}`);
    seen.add(type);
    return events[0].data;
  };

  try {
    const person = await registerPerson(company);
    const account = await registerBrlAccount(company, person.id);

    await t.step("payin: identified {transaction_id}", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post("/api/sandbox/payins", { subject_id: person.id, value: "100.00", currency: "BRL" }),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
      assert.deepEqual(await only(since, "identified"), { transaction_id: tx.id });
      assert.equal(tx.status, "identified");
      assert.equal(tx.cleared, true);
    });

    await t.step("payin with exchange: identified then exchange_created {exchange_id, transaction_ids}", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post("/api/sandbox/payins", {
          subject_id: person.id,
          value: "50.00",
          currency: "MXN",
          exchange: true,
        }),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "exchange_created"]);
      const data = await only(since, "exchange_created");
      assert.deepEqual(keys(data), ["exchange_id", "transaction_ids"]);
      assert.deepEqual(data.transaction_ids, [tx.id]);
      assert.equal(data.exchange_id, tx.exchange_id);
    });

    await t.step("a second payin of the subject joins the same open exchange", async () => {
      const first = (await eventsOf(ctx, company, "exchange_created")).at(-1)!.data;
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post("/api/sandbox/payins", {
          subject_id: person.id,
          value: "25.00",
          currency: "MXN",
          exchange: true,
        }),
      );
      const data = (await eventsOf(ctx, company, "exchange_created")).filter((e) => e.id > since!)[0].data;
      assert.equal(data.exchange_id, first.exchange_id);
      assert.deepEqual(data.transaction_ids, [...(first.transaction_ids as string[]), tx.id]);
    });

    await t.step("payout: identified then wire_created {wire_id, transaction_ids}", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "10.00",
          currency: "BRL",
        }),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "wire_created"]);
      const data = await only(since, "wire_created");
      assert.deepEqual(keys(data), ["transaction_ids", "wire_id"]);
      assert.deepEqual(data.transaction_ids, [tx.id]);
      assert.equal(data.wire_id, tx.wire_id);
      assert.equal(tx.status, "wired");
    });

    await t.step("payout with fail_with: wire_waiting_correction with its six keys", async () => {
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "10.00",
          currency: "BRL",
          fail_with: "AC03",
        }),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "wire_waiting_correction"]);
      const data = await only(since, "wire_waiting_correction");
      assert.deepEqual(keys(data), [
        "bank_account_id",
        "bank_account_owner_id",
        "error_code",
        "error_description",
        "transaction_ids",
        "wire_id",
      ]);
      assert.equal(data.error_code, "AC03");
      assert.equal(typeof data.error_description, "string");
      assert.equal(data.bank_account_id, account.id);
      assert.equal(data.bank_account_owner_id, person.id);
      assert.deepEqual(data.transaction_ids, [tx.id]);
      assert.equal(data.wire_id, tx.wire_id);
    });

    await t.step("card payments: payment_approved / payment_failed {transaction_id}", async () => {
      for (const [outcome, type] of [["approved", "payment_approved"], ["failed", "payment_failed"]]) {
        const since = await lastEventId(ctx, company);
        const tx = assertCreated(
          await company.post("/api/sandbox/card_payments", {
            subject_id: person.id,
            value: "30.00",
            currency: "BRL",
            outcome,
          }),
        );
        assert.deepEqual(await typesSince(ctx, company, since), [type]);
        assert.deepEqual(await only(since, type), { transaction_id: tx.id });
        assert.equal(tx.status, outcome);
      }
    });

    await t.step("PIX charge paid by the subject: identified with the charge's transaction", async () => {
      const charge = assertCreated(
        await company.post("/api/sandbox/pix_charges", { subject_id: person.id, value: "12.34" }),
      );
      assert.equal(charge.status, "pending");
      assert.match(charge.qr_code as string, /^000201/);
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post(`/api/sandbox/pix_charges/${charge.id}/pay`, {
          payer_document_number: person.document_number,
        }),
      );
      assert.equal(tx.id, charge.transaction_id);
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
      assert.deepEqual((await eventsOf(ctx, company, "identified")).at(-1)!.data, { transaction_id: tx.id });
    });

    await t.step("PIX charge refusing third parties, paid by someone else: payment_refunded", async () => {
      const charge = assertCreated(
        await company.post("/api/sandbox/pix_charges", {
          subject_id: person.id,
          value: "20.00",
          refuse_third_party: true,
        }),
      );
      const since = await lastEventId(ctx, company);
      const tx = assertCreated(
        await company.post(`/api/sandbox/pix_charges/${charge.id}/pay`, { payer_document_number: randomCpf() }),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["payment_refunded"]);
      assert.deepEqual(await only(since, "payment_refunded"), { transaction_id: tx.id });
      assert.equal(tx.status, "refunded");
    });

    await t.step("PIX charge expired unpaid: payment_expired", async () => {
      const charge = assertCreated(
        await company.post("/api/sandbox/pix_charges", { subject_id: person.id, value: "20.00" }),
      );
      const since = await lastEventId(ctx, company);
      const expired = assertCreated(await company.post(`/api/sandbox/pix_charges/${charge.id}/expire`));
      assert.equal(expired.status, "expired");
      assert.deepEqual(await typesSince(ctx, company, since), ["payment_expired"]);
      assert.deepEqual(await only(since, "payment_expired"), { transaction_id: charge.transaction_id });
      const again = await company.post(`/api/sandbox/pix_charges/${charge.id}/pay`, {});
      assert.deepEqual([again.status, again.body], [422, { errors: { status: ["is expired"] } }]);
    });

    await t.step("non_identified_bank_transaction: the bank_transaction object, MXN with concepto", async () => {
      const since = await lastEventId(ctx, company);
      assertCreated(
        await company.post("/api/sandbox/bank_transactions", UNKNOWN_MXN_PAYER_TRANSFER),
      );
      assert.deepEqual(await typesSince(ctx, company, since), ["non_identified_bank_transaction"]);
      const data = await only(since, "non_identified_bank_transaction");
      assert.deepEqual(keys(data), ["bank_transaction"]);
      const bt = data.bank_transaction as Record<string, Record<string, unknown>>;
      assert.deepEqual(keys(bt), [
        "bank_account_id",
        "currency",
        "id",
        "movement_date",
        "paid_at",
        "spei_concepto_de_pago",
        "subject",
        "value",
      ]);
      assert.deepEqual(keys(bt.subject), ["bank_account", "document_number", "document_type", "name"]);
      assert.deepEqual(keys(bt.subject.bank_account), ["account_number", "account_type", "bank", "branch_number"]);
      assert.equal(bt.value, "750.50");
      assert.equal(bt.spei_concepto_de_pago, "Factura 17");
      assert.match(bt.movement_date as unknown as string, /^\d{4}-\d{2}-\d{2}$/);
    });

    await t.step("outside MXN the bank transaction has no spei_concepto_de_pago", async () => {
      const since = await lastEventId(ctx, company);
      assertCreated(
        await company.post("/api/sandbox/bank_transactions", {
          value: "10.00",
          currency: "BRL",
          spei_concepto_de_pago: "ignored",
          payer: { document_number: randomCpf(), document_type: "cpf", name: "Outro Pagador" },
        }),
      );
      const data = (await eventsOf(ctx, company, "non_identified_bank_transaction")).filter((e) => e.id > since!)[0]
        .data;
      const bt = data.bank_transaction as Record<string, unknown>;
      assert.equal("spei_concepto_de_pago" in bt, false);
    });

    await t.step("subject decisions: subject_approved, subject_reproved, document_required", async () => {
      let since = await lastEventId(ctx, company);
      const reproved = assertCreated(
        await company.post(`/api/sandbox/subjects/${person.id}/reprove`, {
          items: ["proof_of_address_rejected"],
          reason: "address proof is illegible",
        }),
      );
      assert.equal(reproved.status, "reproved");
      assert.equal(reproved.status_reason, "address proof is illegible");
      assert.deepEqual(await only(since, "subject_reproved"), {
        subject_id: person.id,
        items: ["proof_of_address_rejected"],
        reason: "address proof is illegible",
      });

      since = await lastEventId(ctx, company);
      const asked = assertCreated(
        await company.post(`/api/sandbox/subjects/${person.id}/request_documents`, {
          required_documents: ["proof_of_address"],
        }),
      );
      assert.equal(asked.status, "reproved", "asking for documents leaves the status alone");
      assert.deepEqual(await only(since, "document_required"), {
        subject_id: person.id,
        required_documents: ["proof_of_address"],
      });

      since = await lastEventId(ctx, company);
      const approved = assertCreated(await company.post(`/api/sandbox/subjects/${person.id}/approve`));
      assert.deepEqual([approved.status, approved.status_reason], ["approved", ""]);
      assert.deepEqual(await only(since, "subject_approved"), { subject_id: person.id });
    });

    await t.step("subject_reproved without a reason has no reason key", async () => {
      const since = await lastEventId(ctx, company);
      assertCreated(
        await company.post(`/api/sandbox/subjects/${person.id}/reprove`, { items: ["old_tax_declaration"] }),
      );
      assert.deepEqual(await only(since, "subject_reproved"), {
        subject_id: person.id,
        items: ["old_tax_declaration"],
      });
      assertCreated(await company.post(`/api/sandbox/subjects/${person.id}/approve`));
    });

    await t.step("subscription events carry the subscription object with exactly its keys", async () => {
      let since = await lastEventId(ctx, company);
      const sub = assertCreated(
        await company.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 1 }),
      );
      const generated = await only(since, "subscription_qr_code_generated");
      assert.deepEqual(keys(generated), ["subscription"]);
      assert.deepEqual(generated.subscription, {
        id: sub.id,
        status: "pending",
        subject_id: person.id,
        qr_code: sub.qr_code,
      });

      since = await lastEventId(ctx, company);
      assertCreated(await company.post(`/api/sandbox/subscriptions/${sub.id}/pay_invoice`));
      assert.deepEqual(await typesSince(ctx, company, since), [
        "invoice_paid",
        "subscription_activated",
        "subscription_completed",
      ]);
      const invoice = (await only(since, "invoice_paid")).invoice as Record<string, unknown>;
      assert.deepEqual(keys(invoice), ["id", "status", "subject_id", "subscription_id"]);
      assert.deepEqual([invoice.status, invoice.subject_id, invoice.subscription_id], ["paid", person.id, sub.id]);
      assert.deepEqual((await only(since, "subscription_activated")).subscription, {
        id: sub.id,
        status: "active",
        subject_id: person.id,
      });
      assert.deepEqual((await only(since, "subscription_completed")).subscription, {
        id: sub.id,
        status: "completed",
        subject_id: person.id,
      });

      const other = assertCreated(
        await company.post("/api/sandbox/subscriptions", { subject_id: person.id, cycles: 3 }),
      );
      since = await lastEventId(ctx, company);
      assertCreated(
        await company.post(`/api/sandbox/subscriptions/${other.id}/cancel`, { by_payer: true, reason: "no longer" }),
      );
      assert.deepEqual((await only(since, "subscription_canceled")).subscription, {
        canceled_by_payer: true,
        canceled_reason: "no longer",
        id: other.id,
        status: "canceled",
        subject_id: person.id,
      });
    });

    await t.step("all 17 event types of the rails were produced", async () => {
      const { EVENT_TYPES, isOperational } = await import("../../domain/webhooks/outbox/events.ts");
      // identified and the subscription ones were checked with `only` or by position; count what exists. The
      // operational types come from the webhooks themselves (tests/webhooks/operational_events_test.ts).
      const types = new Set((await eventsOf(ctx, company)).map((e) => e.type));
      assert.deepEqual([...EVENT_TYPES].filter((type) => !isOperational(type) && !types.has(type)), []);
      assert.ok(seen.size >= 10);
    });
  } finally {
    await ctx.close();
  }
});
