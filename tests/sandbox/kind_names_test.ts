/**
 * `kind` and `transaction_kind` (docs/sandbox.md): the sandbox and a subject's list say `kind`, the transactions API says
 * `transaction_kind`; every answer carries both with one value, and both lists filter by either name, refusing the two
 * when they disagree.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { registerPerson } from "../support/rails.ts";

Deno.test("a transaction's kind under both names, in answers and in list filters", async (t) => {
  const ctx = await setup("sandbox_kind_names");
  const company = await newCompany(ctx);
  const subject = await registerPerson(company);
  const own = (await company.get("/api/v1/bank_accounts")).body.data;
  const brl = own.find((a: { internal: boolean; currency: string }) => a.internal && a.currency === "BRL").id;
  const both = (x: { kind: string; transaction_kind: string }) => [x.kind, x.transaction_kind];

  try {
    const payin = await company.post("/api/sandbox/payins", {
      subject_id: subject.id,
      value: "10.00",
      currency: "BRL",
    });
    const card = await company.post("/api/sandbox/card_payments", {
      subject_id: subject.id,
      value: "5.00",
      currency: "BRL",
      outcome: "approved",
    });
    const api = await company.post("/api/v1/transactions", {
      transaction: {
        subject_id: subject.id,
        to_bank_account_id: brl,
        currency: "BRL",
        exchange_currency: "BRL",
        value: "7.00",
      },
    });

    await t.step("the sandbox's answers carry transaction_kind beside kind", () => {
      assert.deepEqual(both(payin.body.data), ["payin", "payin"]);
      assert.deepEqual(both(card.body.data), ["card_payment", "card_payment"]);
    });

    await t.step(
      "the transactions API's answers carry kind beside transaction_kind: create, pay, detail, void",
      async () => {
        assert.deepEqual(both(api.body.data), ["payin", "payin"]);
        const other = await company.post("/api/v1/transactions", {
          transaction: {
            subject_id: subject.id,
            to_bank_account_id: brl,
            currency: "BRL",
            exchange_currency: "BRL",
            value: "3.00",
          },
        });
        const voided = await company.get(`/api/v1/transactions/${other.body.data.id}/refund`);
        assert.deepEqual(both(voided.body.data), ["payin", "payin"]);
        const paid = await company.post(`/api/sandbox/transactions/${api.body.data.id}/pay`, {});
        assert.deepEqual(both(paid.body.data), ["payin", "payin"]);
        assert.deepEqual(both((await company.get(`/api/v1/transactions/${api.body.data.id}`)).body.data), [
          "payin",
          "payin",
        ]);
      },
    );

    await t.step("a subject's list filters by kind, or by transaction_kind as its alias", async () => {
      const list = (query: string) => company.get(`/api/v1/subject/${subject.id}/transactions${query}`);
      const all = (await list("")).body.data;
      assert.ok(all.every((x: { kind: string; transaction_kind: string }) => x.kind === x.transaction_kind));
      for (
        const query of [
          "?kind=card_payment",
          "?transaction_kind=card_payment",
          "?kind=card_payment&transaction_kind=card_payment",
        ]
      ) {
        const res = await list(query);
        assert.equal(res.status, 200, query);
        assert.deepEqual(res.body.data.map((x: { id: string }) => x.id), [card.body.data.id], query);
      }
      assert.equal((await list("?kind=payin")).body.data.length, 3, "the sandbox pay-in and two API pay-ins");
    });

    await t.step("the transactions API's list filters by transaction_kind, or by kind as its alias", async () => {
      const list = (query: string) => company.get(`/api/v1/transactions?subject_id=${subject.id}${query}`);
      for (const query of ["&transaction_kind=card_payment", "&kind=card_payment"]) {
        const res = await list(query);
        assert.equal(res.status, 200, query);
        assert.deepEqual(res.body.data.map((x: { id: string }) => x.id), [card.body.data.id], query);
      }
    });

    await t.step("both names with different values: 422 naming the alias; an unknown kind: 422 naming it", async () => {
      const api = await company.get("/api/v1/transactions?transaction_kind=payin&kind=payout");
      assert.deepEqual([api.status, api.body], [422, {
        errors: { kind: ["must be the same as transaction_kind when both are given"] },
      }]);
      const subjects = await company.get(
        `/api/v1/subject/${subject.id}/transactions?kind=payin&transaction_kind=refund`,
      );
      assert.deepEqual([subjects.status, subjects.body], [422, {
        errors: { transaction_kind: ["must be the same as kind when both are given"] },
      }]);
      const unknown = await company.get(`/api/v1/subject/${subject.id}/transactions?kind=wire`);
      assert.equal(unknown.status, 422);
      assert.deepEqual(Object.keys(unknown.body.errors), ["kind"]);
      assert.match(unknown.body.errors.kind[0], /^must be one of: payin, payout, card_payment, pix_charge, refund/);
    });
  } finally {
    await ctx.close();
  }
});
