/**
 * Transaction values as exact decimals: amounts, USD values from the rate table, totals of the largest values, and what
 * the yearly totals count.
 */
import assert from "node:assert/strict";
import { fromCents, toCents } from "../../domain/basics/money.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { assertCreated, registerPerson } from "../support/rails.ts";

/** Money is exact decimal text end to end: no float ever rounds a cent away. */
Deno.test("transaction values are exact decimals", async (t) => {
  const ctx = await setup("rails_money");
  const company = await newCompany(ctx);
  try {
    const payin = (subjectId: string, value: unknown, currency: string) =>
      company.post("/api/sandbox/payins", { subject_id: subjectId, value, currency });
    const values = async (subjectId: string) =>
      (await company.get(`/api/v1/subject/${subjectId}/transaction_values`)).body.data;

    await t.step("0.10 + 0.20 is 0.30, as strings and as JSON numbers", async () => {
      const person = await registerPerson(company);
      assertCreated(await payin(person.id, "0.10", "USD"));
      assertCreated(await payin(person.id, 0.2, "USD"));
      assert.deepEqual(await values(person.id), [{ currency: "USD", value: "0.30", usd_value: "0.30", count: 2 }]);
    });

    await t.step("USD values are the rate table's, rounded to the cent in NUMERIC", async () => {
      const person = await registerPerson(company);
      // 1,234,567.89 COP × 0.00025 = 308.6419725 → 308.64; 0.05 MXN × 0.055 = 0.00275 → 0.00
      const cop = assertCreated(await payin(person.id, "1234567.89", "COP"));
      assert.deepEqual([cop.value, cop.usd_value], ["1234567.89", "308.64"]);
      const mxn = assertCreated(await payin(person.id, "0.05", "MXN"));
      assert.deepEqual([mxn.value, mxn.usd_value], ["0.05", "0.00"]);
      const eur = assertCreated(await payin(person.id, "1", "eur"));
      assert.deepEqual([eur.currency, eur.value, eur.usd_value], ["EUR", "1.00", "1.08"]);
      assert.deepEqual(await values(person.id), [
        { currency: "COP", value: "1234567.89", usd_value: "308.64", count: 1 },
        { currency: "EUR", value: "1.00", usd_value: "1.08", count: 1 },
        { currency: "MXN", value: "0.05", usd_value: "0.00", count: 1 },
      ]);
    });

    await t.step("the largest values add up exactly, one row per currency", async () => {
      const person = await registerPerson(company);
      const max = "999999999999999999.99";
      assertCreated(await payin(person.id, max, "USD"));
      assertCreated(await payin(person.id, max, "USD"));
      assertCreated(await payin(person.id, "0.01", "USD"));
      const big = assertCreated(await payin(person.id, max, "EUR"));
      // 999,999,999,999,999,999.99 × 1.08 = 1,079,999,999,999,999,999.9892 → .99
      assert.equal(big.usd_value, "1079999999999999999.99");
      const usdTotal = fromCents(toCents(max)! * 2n + 1n);
      assert.equal(usdTotal, "1999999999999999999.99");
      assert.deepEqual(await values(person.id), [
        { currency: "EUR", value: max, usd_value: "1079999999999999999.99", count: 1 },
        { currency: "USD", value: usdTotal, usd_value: usdTotal, count: 3 },
      ]);
    });

    await t.step("money that did not move is listed but not totalled", async () => {
      const person = await registerPerson(company);
      assertCreated(
        await company.post("/api/sandbox/card_payments", {
          subject_id: person.id,
          value: "99.99",
          currency: "BRL",
          outcome: "failed",
        }),
      );
      assertCreated(await company.post("/api/sandbox/pix_charges", { subject_id: person.id, value: "10.00" }));
      assertCreated(
        await company.post("/api/sandbox/card_payments", {
          subject_id: person.id,
          value: "0.01",
          currency: "BRL",
          outcome: "approved",
        }),
      );
      const list = (await company.get(`/api/v1/subject/${person.id}/transactions`)).body.data;
      assert.deepEqual(list.map((x: { kind: string; status: string }) => `${x.kind}:${x.status}`), [
        "card_payment:failed",
        "pix_charge:pending",
        "card_payment:approved",
      ]);
      for (const x of list) {
        assert.deepEqual(Object.keys(x).sort(), [
          "cleared",
          "currency",
          "exchange_id",
          "id",
          "inserted_at",
          "kind",
          "status",
          "transaction_kind",
          "usd_value",
          "value",
          "wire_id",
        ]);
        assert.match(x.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
      }
      assert.deepEqual(await values(person.id), [{ currency: "BRL", value: "0.01", usd_value: "0.00", count: 1 }]);
    });

    await t.step("only this calendar year counts", async () => {
      const person = await registerPerson(company);
      const tx = assertCreated(await payin(person.id, "5.00", "USD"));
      await ctx.sql`update transactions set inserted_at = date_trunc('year', now()) - interval '1 second'
                    where id = ${tx.id as string}`;
      assertCreated(await payin(person.id, "1.00", "USD"));
      assert.deepEqual(await values(person.id), [{ currency: "USD", value: "1.00", usd_value: "1.00", count: 1 }]);
    });

    await t.step("a subject with no transactions has empty lists", async () => {
      const person = await registerPerson(company);
      assert.deepEqual((await company.get(`/api/v1/subject/${person.id}/transactions`)).body, { data: [] });
      assert.deepEqual((await company.get(`/api/v1/subject/${person.id}/transaction_values`)).body, { data: [] });
    });
  } finally {
    await ctx.close();
  }
});
