/**
 * The running yearly totals of sql/0015 stay exact: the SQL's money that counts is the code's, concurrent pay-ins are
 * counted once, and status changes and refunds move the total as they should.
 */
import assert from "node:assert/strict";
import { TRANSACTED_STATUSES } from "../../domain/rails/clearance.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { assertCreated, registerPerson } from "../support/rails.ts";

Deno.test("running yearly totals stay exact", async (t) => {
  const ctx = await setup("running_totals");
  const company = await newCompany(ctx);
  const values = async (subjectId: string) =>
    (await company.get(`/api/v1/subject/${subjectId}/transaction_values`)).body.data;
  /** What the rows say, summed the slow way: the totals must always agree with it. */
  const recount = async (subjectId: string) => [
    ...await ctx.sql<{ currency: string; value: string; usd_value: string; count: number }[]>`
      select currency, sum(value)::numeric(30, 2)::text as value, sum(usd_value)::numeric(30, 2)::text as usd_value,
             count(*)::int as count
      from transactions
      where subject_id = ${subjectId} and status in ${ctx.sql(TRANSACTED_STATUSES)} and kind <> 'refund'
        and inserted_at >= date_trunc('year', now() at time zone 'UTC') at time zone 'UTC'
      group by currency order by currency`,
  ];

  try {
    await t.step("the SQL definition of money that counts is the one the code uses", async () => {
      const [{ expr }] = await ctx.sql<{ expr: string }[]>`
        select pg_get_expr(d.adbin, d.adrelid) as expr
        from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
        where d.adrelid = 'transactions'::regclass and a.attname = 'counted'`;
      const quoted = [...expr.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]);
      assert.deepEqual(quoted.filter((s) => s !== "refund").sort(), [...TRANSACTED_STATUSES].sort());
      assert.ok(quoted.includes("refund"), "refunds are left out");
    });

    await t.step("32 pay-ins at once into one subject: nothing lost, nothing counted twice", async () => {
      const person = await registerPerson(company);
      const amounts = Array.from({ length: 32 }, (_, i) => `${i + 1}.${String(i).padStart(2, "0")}`);
      const answers = await Promise.all(
        amounts.map((value) => company.post("/api/sandbox/payins", { subject_id: person.id, value, currency: "BRL" })),
      );
      for (const a of answers) assertCreated(a);
      const expectedCents = amounts.reduce((s, v) => s + Math.round(Number(v) * 100), 0);
      const [total] = await values(person.id);
      assert.equal(total.count, 32);
      assert.equal(total.value, `${Math.floor(expectedCents / 100)}.${String(expectedCents % 100).padStart(2, "0")}`);
      assert.deepEqual(await values(person.id), await recount(person.id));
    });

    await t.step("a pending charge counts once paid, and leaves the total when its status stops counting", async () => {
      const person = await registerPerson(company);
      const charge = assertCreated(
        await company.post("/api/sandbox/pix_charges", { subject_id: person.id, value: "10.00" }),
      );
      assert.deepEqual(await values(person.id), []);
      await company.post(`/api/sandbox/pix_charges/${charge.id}/pay`, {});
      assert.deepEqual(await values(person.id), [{ currency: "BRL", value: "10.00", usd_value: "1.80", count: 1 }]);
      // no route takes identified money back today: the row changes as an operator's correction would
      await ctx.sql`update transactions set status = 'failed' where id = ${charge.id as string}`;
      assert.deepEqual(await values(person.id), []);
      assert.deepEqual(await values(person.id), await recount(person.id));
    });

    await t.step("a refund through the API leaves the pay-in counted once", async () => {
      const person = await registerPerson(company);
      const own = await company.get("/api/v1/bank_accounts");
      const brl = own.body.data.find((a: { internal: boolean; currency: string }) =>
        a.internal && a.currency === "BRL"
      );
      const created = await company.post("/api/v1/transactions", {
        transaction: {
          subject_id: person.id,
          to_bank_account_id: brl.id,
          currency: "BRL",
          exchange_currency: "BRL",
          value: "7.00",
        },
      });
      await company.post(`/api/sandbox/transactions/${created.body.data.id}/pay`, {});
      await company.get(`/api/v1/transactions/${created.body.data.id}/refund_received_transaction`);
      assert.deepEqual(await values(person.id), [{ currency: "BRL", value: "7.00", usd_value: "1.26", count: 1 }]);
    });
  } finally {
    await ctx.close();
  }
});
