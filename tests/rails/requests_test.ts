/**
 * The rails routes' requests: another company's subjects, accounts and charges answer 404, refused fields are named
 * (400 or 422), and with SANDBOX off the sandbox routes do not exist.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { assertCreated, registerBrlAccount, registerPerson } from "../support/rails.ts";
import { randomCpf } from "../support/check_digits.ts";

Deno.test("rails routes never reach another company's data", async (t) => {
  const ctx = await setup("rails_requests_tenancy");
  const owner = await newCompany(ctx);
  const intruder = await newCompany(ctx);
  try {
    const person = await registerPerson(owner);
    const account = await registerBrlAccount(owner, person.id);
    const charge = assertCreated(
      await owner.post("/api/sandbox/pix_charges", { subject_id: person.id, value: "1.00" }),
    );
    const ownPerson = await registerPerson(intruder);
    const notFound = { errors: { detail: "Not Found" } };

    await t.step("reads of another company's subject answer 404", async () => {
      for (const path of ["transactions", "transaction_values"]) {
        const res = await intruder.get(`/api/v1/subject/${person.id}/${path}`);
        assert.deepEqual([res.status, res.body], [404, notFound], path);
      }
    });

    await t.step("sandbox calls naming another company's subject, account or charge answer 404", async () => {
      const calls: [string, unknown][] = [
        ["/api/sandbox/payins", { subject_id: person.id, value: "1.00", currency: "BRL" }],
        ["/api/sandbox/payouts", { subject_id: person.id, bank_account_id: account.id, value: "1", currency: "BRL" }],
        ["/api/sandbox/payouts", {
          subject_id: ownPerson.id,
          bank_account_id: account.id,
          value: "1",
          currency: "BRL",
        }],
        ["/api/sandbox/card_payments", { subject_id: person.id, value: "1.00", currency: "BRL", outcome: "approved" }],
        ["/api/sandbox/pix_charges", { subject_id: person.id, value: "1.00" }],
        [`/api/sandbox/pix_charges/${charge.id}/pay`, {}],
        [`/api/sandbox/pix_charges/${charge.id}/expire`, undefined],
        ["/api/sandbox/subscriptions", { subject_id: person.id, cycles: 1 }],
        [`/api/sandbox/subjects/${person.id}/approve`, undefined],
        [`/api/sandbox/subjects/${person.id}/reprove`, { items: ["proof_of_address_rejected"] }],
        [`/api/sandbox/subjects/${person.id}/request_documents`, { required_documents: ["proof_of_address"] }],
      ];
      for (const [path, body] of calls) {
        const res = await intruder.post(path, body);
        assert.deepEqual([res.status, res.body], [404, notFound], path);
      }
      const [{ count }] = await ctx.sql`select count(*)::int from events where company_id = ${intruder.id}`;
      assert.equal(count, 0, "nothing happened for the intruder");
      const [p] = await ctx.sql`select status from people where id = ${person.id}`;
      assert.equal(p.status, "approved");
    });

    await t.step("a payout to another subject's account of the same company is refused", async () => {
      const other = await registerPerson(owner);
      const res = await owner.post("/api/sandbox/payouts", {
        subject_id: other.id,
        bank_account_id: account.id,
        value: "1.00",
        currency: "BRL",
      });
      assert.deepEqual([res.status, res.body], [422, {
        errors: { bank_account_id: ["does not belong to the subject"] },
      }]);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("rails routes name the fields they refuse", async (t) => {
  const ctx = await setup("rails_requests_validation");
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const post = async (path: string, body: unknown) => {
      const res = await company.post(path, body);
      return [res.status, res.body];
    };

    await t.step("missing fields: 400, each named", async () => {
      assert.deepEqual(await post("/api/sandbox/payins", {}), [400, {
        errors: { subject_id: ["can't be blank"], value: ["can't be blank"], currency: ["can't be blank"] },
      }]);
      assert.deepEqual(
        await post("/api/sandbox/card_payments", { subject_id: person.id, value: "1", currency: "BRL" }),
        [
          400,
          { errors: { outcome: ["can't be blank"] } },
        ],
      );
      assert.deepEqual(await post("/api/sandbox/bank_transactions", { value: "1", currency: "BRL" }), [400, {
        errors: { payer: ["can't be blank"] },
      }]);
      assert.deepEqual(await post(`/api/sandbox/subjects/${person.id}/reprove`, { items: [] }), [400, {
        errors: { items: ["can't be blank"] },
      }]);
    });

    await t.step("invalid values: 422, each named", async () => {
      const payin = (o: Record<string, unknown>) =>
        post("/api/sandbox/payins", { subject_id: person.id, value: "1.00", currency: "BRL", ...o });
      assert.deepEqual(await payin({ value: "0.00" }), [422, { errors: { value: ["must be greater than 0"] } }]);
      assert.deepEqual(await payin({ value: "-1.00" }), [422, {
        errors: { value: ['has invalid format: expected an amount greater than 0, e.g. "1500.00"'] },
      }]);
      assert.deepEqual(await payin({ value: "1.234" }), [422, {
        errors: { value: ['has invalid format: expected at most two decimal places, e.g. "1.50"'] },
      }]);
      assert.deepEqual(await payin({ currency: "ARS" }), [422, {
        errors: { currency: ["must be one of: BRL, MXN, COP, CLP, EUR, USD"] },
      }]);
      assert.deepEqual(await payin({ subject_id: "nope", exchange: "yes" }), [422, {
        errors: { subject_id: ["is invalid"], exchange: ["is invalid: must be true or false"] },
      }]);
      const account = await registerBrlAccount(company, person.id);
      assert.deepEqual(
        await post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "1.00",
          currency: "BRL",
          fail_with: "XX99",
        }),
        [422, { errors: { fail_with: ["must be one of: AC03, AC14, CH11, AG03"] } }],
      );
      const [status, body] = await post(`/api/sandbox/subjects/${person.id}/request_documents`, {
        required_documents: ["passport"],
      });
      assert.equal(status, 422);
      assert.deepEqual(Object.keys((body as { errors: object }).errors), ["required_documents"]);
      assert.deepEqual(
        await post("/api/sandbox/bank_transactions", {
          value: "1.00",
          currency: "BRL",
          payer: { document_number: "12345678900", document_type: "cpf", name: "X" },
        }),
        [422, { errors: { payer: { document_number: ["has invalid check digits"] } } }],
      );
      assert.deepEqual(
        await post("/api/sandbox/bank_transactions", {
          value: "1.00",
          currency: "BRL",
          payer: { document_number: randomCpf(), document_type: "rg", name: "X" },
        }),
        [422, { errors: { payer: { document_type: ["must be one of: cpf, curp, cc, ce, passport"] } } }],
      );
    });

    await t.step("a field refused for its shape does not hide what the rails say of the others", async () => {
      assert.deepEqual(
        await post("/api/sandbox/bank_transactions", {
          value: "abc",
          currency: "BRL",
          payer: { document_number: "12345678900", document_type: "cpf", name: "X" },
        }),
        [422, {
          errors: {
            value: ['has invalid format: expected a decimal string with a dot, e.g. "1500.00"'],
            payer: { document_number: ["has invalid check digits"] },
          },
        }],
      );
      const other = await registerPerson(company);
      const account = await registerBrlAccount(company, other.id);
      assert.deepEqual(
        await post("/api/sandbox/payouts", {
          subject_id: person.id,
          bank_account_id: account.id,
          value: "1.00",
          currency: "ARS",
        }),
        [422, {
          errors: {
            currency: ["must be one of: BRL, MXN, COP, CLP, EUR, USD"],
            bank_account_id: ["does not belong to the subject"],
          },
        }],
      );
      const [{ count }] = await ctx.sql`select count(*)::int from transactions where company_id = ${company.id}`;
      assert.equal(count, 0, "nothing moved");
    });

    await t.step("malformed ids and bodies: 400", async () => {
      const res = await company.get("/api/v1/subject/nope/transactions");
      assert.deepEqual([res.status, res.body], [400, { errors: { id: ["is invalid"] } }]);
      assert.deepEqual(await post("/api/sandbox/subjects/nope/approve", undefined), [400, {
        errors: { id: ["is invalid"] },
      }]);
      const broken = await company.post("/api/sandbox/payins", "{not json");
      assert.equal(broken.status, 400);
      assert.equal(typeof broken.body.errors.detail, "string");
      const unknown = await company.get(`/api/v1/subject/${crypto.randomUUID()}/transactions`);
      assert.equal(unknown.status, 404);
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("with SANDBOX off the sandbox routes do not exist", async () => {
  const ctx = await setup("rails_requests_no_sandbox", { env: { SANDBOX: "false" } });
  const company = await newCompany(ctx);
  try {
    const person = await registerPerson(company);
    const res = await company.post("/api/sandbox/payins", { subject_id: person.id, value: "1.00", currency: "BRL" });
    assert.deepEqual([res.status, res.body], [404, { errors: { detail: "Not Found" } }]);
    const list = await company.get(`/api/v1/subject/${person.id}/transactions`);
    assert.deepEqual([list.status, list.body], [200, { data: [] }]);
  } finally {
    await ctx.close();
  }
});
