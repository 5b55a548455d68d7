/**
 * The transactions API (domain/rails/payments.ts): internal accounts, pay-ins and pay-outs with their exchanges and
 * wires, pending pay-ins paid or expired, refunds, the list, tenancy, and clearance for API transactions.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { eventsOf, registerBrlAccount, registerPerson, typesSince } from "../support/rails.ts";
import type { Company } from "../support/helpers.ts";

async function internalAccount(company: Company, currency: string): Promise<string> {
  const res = await company.get("/api/v1/bank_accounts");
  const found = res.body.data.find((a: { internal: boolean; currency: string }) =>
    a.internal && a.currency === currency
  );
  assert.ok(found, `an internal ${currency} account`);
  return found.id;
}

Deno.test("transactions through the API", async (t) => {
  const ctx = await setup("transactions_api");
  const company = await newCompany(ctx);
  const other = await newCompany(ctx);
  const subject = await registerPerson(company);
  const brlIn = await internalAccount(company, "BRL");
  const payin = (fields: Record<string, unknown> = {}) =>
    company.post("/api/v1/transactions", {
      transaction: {
        subject_id: subject.id,
        to_bank_account_id: brlIn,
        currency: "BRL",
        exchange_currency: "BRL",
        value: "100.00",
        ...fields,
      },
    });

  try {
    await t.step("every company has one internal account per currency, listed beside its own", async () => {
      const res = await company.get("/api/v1/bank_accounts");
      assert.equal(res.status, 200);
      const internal = res.body.data.filter((a: { internal: boolean }) => a.internal);
      assert.deepEqual(internal.map((a: { currency: string }) => a.currency).sort(), [
        "BRL",
        "CLP",
        "COP",
        "EUR",
        "MXN",
        "USD",
      ]);
      const one = await company.get(`/api/v1/bank_accounts/${brlIn}`);
      assert.equal(one.body.data.id, brlIn);
    });

    await t.step("a bank-transfer pay-in waits (pending), then the sandbox pays it: identified", async () => {
      const since = (await eventsOf(ctx, company)).at(-1)?.id ?? null;
      const created = await payin();
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.data.status, "pending");
      assert.equal(created.body.data.dynamic_pix_code, null);
      assert.equal(created.body.data.from_bank_account, null);
      const paid = await company.post(`/api/sandbox/transactions/${created.body.data.id}/pay`, {});
      assert.equal(paid.status, 201, "a sandbox action answers 201 (docs/sandbox.md)");
      assert.equal(paid.body.data.status, "identified");
      assert.deepEqual(await typesSince(ctx, company, since), ["identified"]);
    });

    await t.step("a pay-in converting BRL into USD: exchanged into the USD internal account", async () => {
      const usdIn = await internalAccount(company, "USD");
      const created = await payin({ to_bank_account_id: usdIn, exchange_currency: "USD", value: "1000.00" });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.data.exchanged_value, "180.00"); // the rate table: 1 BRL = 0.18 USD
      const since = (await eventsOf(ctx, company)).at(-1)!.id;
      const paid = await company.post(`/api/sandbox/transactions/${created.body.data.id}/pay`, {});
      assert.equal(paid.body.data.status, "exchanged");
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "exchange_created"]);
      const balance = await company.get(`/api/v1/bank_accounts/${usdIn}/balance`);
      assert.equal(balance.body.data.credit_value, "180.00");
      assert.equal(balance.body.data.balance, "180.00");
    });

    await t.step(
      "a pay-out to the subject's account is identified at once and wired; the wire reads back",
      async () => {
        const account = await registerBrlAccount(company, subject.id);
        const since = (await eventsOf(ctx, company)).at(-1)!.id;
        const res = await company.post("/api/v1/transactions", {
          transaction: {
            subject_id: subject.id,
            to_bank_account_id: account.id,
            currency: "BRL",
            exchange_currency: "BRL",
            value: "40.00",
          },
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.data.status, "wired");
        assert.equal(res.body.data.from_bank_account.id, brlIn, "funded from the BRL internal account");
        assert.deepEqual(await typesSince(ctx, company, since), ["identified", "wire_created"]);
        const wire = await company.get(`/api/v1/wires/${res.body.data.wire_id}`);
        assert.equal(wire.status, 200);
        assert.deepEqual(wire.body.data.transaction_ids, [res.body.data.id]);
        assert.equal(wire.body.data.bank_account_id, account.id);
        const balance = await company.get(`/api/v1/bank_accounts/${brlIn}/balance`);
        assert.equal(balance.body.data.debit_value, "40.00");
      },
    );

    await t.step("a pay-out paid in USD to a BRL account is exchanged, then wired", async () => {
      const account = await registerBrlAccount(company, subject.id);
      const since = (await eventsOf(ctx, company)).at(-1)!.id;
      const res = await company.post("/api/v1/transactions", {
        transaction: {
          subject_id: subject.id,
          to_bank_account_id: account.id,
          currency: "USD",
          exchange_currency: "BRL",
          value: "18.00",
        },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.data.exchanged_value, "100.00");
      assert.deepEqual(await typesSince(ctx, company, since), ["identified", "exchange_created", "wire_created"]);
    });

    await t.step("the sandbox expires a pending pay-in: canceled, with payment_expired", async () => {
      const created = await payin({ use_dynamic_pix: true });
      const res = await company.post(`/api/sandbox/transactions/${created.body.data.id}/expire`);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.data.status, "canceled");
      assert.match(res.body.data.canceled_reason, /expired/);
      const [last] = (await eventsOf(ctx, company)).slice(-1);
      assert.deepEqual([last.type, last.data.transaction_id], ["payment_expired", created.body.data.id]);
    });

    await t.step("a PIX paid by a third party while third parties are refused: canceled and refunded", async () => {
      const created = await payin({ use_dynamic_pix: true, refuse_third_party: true });
      const res = await company.post(`/api/sandbox/transactions/${created.body.data.id}/pay`, {
        payer_document_number: "111.444.777-35",
      });
      assert.equal(res.body.data.status, "canceled");
      const [last] = (await eventsOf(ctx, company)).slice(-1);
      assert.equal(last.type, "payment_refunded");
    });

    await t.step("a refund is only for a received pay-in", async () => {
      const pending = await payin();
      const res = await company.get(`/api/v1/transactions/${pending.body.data.id}/refund_received_transaction`);
      assert.equal(res.status, 422);
    });

    await t.step("refused bodies name the field", async () => {
      const wrongCurrency = await payin({ exchange_currency: "MXN" });
      assert.equal(wrongCurrency.status, 422);
      assert.ok(wrongCurrency.body.errors.to_bank_account_id);
      const pixInMxn = await payin({ currency: "MXN", use_dynamic_pix: true });
      assert.equal(pixInMxn.status, 422);
      assert.ok(pixInMxn.body.errors.use_dynamic_pix);
      const stranger = await registerPerson(company);
      const strangersAccount = await registerBrlAccount(company, stranger.id);
      const notTheSubjects = await payin({ to_bank_account_id: strangersAccount.id });
      assert.equal(notTheSubjects.status, 422);
      assert.ok(notTheSubjects.body.errors.to_bank_account_id);
      const missing = await company.post("/api/v1/transactions", { transaction: { subject_id: subject.id } });
      assert.equal(missing.status, 400);
      assert.deepEqual(Object.keys(missing.body.errors).sort(), [
        "currency",
        "exchange_currency",
        "to_bank_account_id",
        "value",
      ]);
    });

    await t.step("the list pages newest first and filters by status and subject", async () => {
      const all = await company.get(`/api/v1/transactions?subject_id=${subject.id}&per_page=100`);
      const ids = all.body.data.map((x: { id: string }) => x.id);
      assert.deepEqual(ids, [...ids].sort().reverse());
      const first = await company.get(`/api/v1/transactions?subject_id=${subject.id}&per_page=2`);
      const next = await company.get(
        `/api/v1/transactions?subject_id=${subject.id}&per_page=2&last_id=${first.body.data[1].id}`,
      );
      assert.deepEqual(next.body.data.map((x: { id: string }) => x.id), ids.slice(2, 4));
      const canceled = await company.get("/api/v1/transactions?status=canceled");
      assert.ok(canceled.body.data.length >= 2);
      assert.ok(canceled.body.data.every((x: { status: string }) => x.status === "canceled"));
    });

    await t.step("another company's ids answer 404 on every route", async () => {
      const mine = await payin();
      const id = mine.body.data.id;
      const wireId = (await company.get(`/api/v1/transactions?status=wired`)).body.data[0].wire_id;
      for (
        const path of [
          `/api/v1/transactions/${id}`,
          `/api/v1/transactions/${id}/refund`,
          `/api/v1/transactions/${id}/refund_received_transaction`,
          `/api/v1/transactions/${id}/refund_received_transaction/${id}`,
          `/api/v1/bank_accounts/${brlIn}`,
          `/api/v1/bank_accounts/${brlIn}/balance`,
          `/api/v1/wires/${wireId}`,
        ]
      ) {
        assert.equal((await other.get(path)).status, 404, path);
      }
      assert.equal((await other.post(`/api/sandbox/transactions/${id}/pay`, {})).status, 404);
      const theirs = await other.post("/api/v1/transactions", {
        transaction: {
          subject_id: subject.id,
          to_bank_account_id: brlIn,
          currency: "BRL",
          exchange_currency: "BRL",
          value: "1.00",
        },
      });
      assert.equal(theirs.status, 422);
      assert.deepEqual(Object.keys(theirs.body.errors).sort(), ["subject_id", "to_bank_account_id"]);
      assert.equal((await company.get(`/api/v1/transactions/${id}`)).body.data.status, "pending", "untouched");
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("clearance holds for transactions from the API: past 20,000 USD without documents, reproved and held", async () => {
  const ctx = await setup("transactions_api_clearance");
  try {
    const company = await newCompany(ctx);
    const subject = await registerPerson(company);
    const brlIn = await internalAccount(company, "BRL");
    const receive = async (value: string) => {
      const created = await company.post("/api/v1/transactions", {
        transaction: {
          subject_id: subject.id,
          to_bank_account_id: brlIn,
          currency: "BRL",
          exchange_currency: "BRL",
          value,
        },
      });
      return (await company.post(`/api/sandbox/transactions/${created.body.data.id}/pay`, {})).body.data;
    };
    // 60,000 BRL is 10,800 USD by the rate table: the first fits, the second crosses 20,000 USD
    assert.equal((await receive("60000.00")).cleared, true);
    assert.equal((await receive("60000.00")).cleared, false);
    const person = await company.get(`/api/v1/subject/people/${subject.id}`);
    assert.equal(person.body.data.status, "reproved");
    assert.equal((await receive("10.00")).cleared, false, "the next transaction is not cleared either");
  } finally {
    await ctx.close();
  }
});
