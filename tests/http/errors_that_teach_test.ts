/**
 * Errors that teach, as an integrator meets them over HTTP against the real service (`main.ts` as a process): each
 * refusal keeps the message decisions fix as its start and adds the form expected, with an example; a CPF sent as a
 * number hears it is invalid and must be a string; a CLABE or account number copied from a bank statement is stored
 * bare. Apart from the people and bank-account tests because it follows one integrator's second hour, mistake by
 * mistake.
 */
import assert from "node:assert/strict";
import { setup } from "../support/helpers.ts";
import { httpCompany, startService } from "../support/service_process.ts";
import { brazil, mexico } from "../support/bank_accounts.ts";
import { clabe } from "../support/check_digits.ts";

Deno.test("errors that teach: a refusal says what was expected, with an example", async (t) => {
  const ctx = await setup("errors_that_teach");
  const service = await startService(ctx.url);
  const company = await httpCompany();
  const post = (path: string, body: unknown) => company.call(service.base, "POST", path, body);
  const person = (fields: Record<string, unknown>) =>
    post("/api/v1/subject/people", {
      person: {
        document_number: "52998224725",
        document_type: "cpf",
        social_name: "Ana Souza",
        fiscal_country: "BRA",
        ...fields,
      },
    });
  let personId = "";
  try {
    await t.step("a birth date written day first hears the order of its parts", async () => {
      const res = await person({ birth_date: "02/01/1990" });
      assert.deepEqual([res.status, res.body], [422, {
        errors: { birth_date: ["has invalid format: expected YYYY-MM-DD, e.g. 1990-01-02"] },
      }]);
      const fixed = await person({ birth_date: "1990-01-02" });
      assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
      assert.equal(fixed.body.data.birth_date, "1990-01-02");
      personId = fixed.body.data.id;
    });

    await t.step("a CPF sent as a JSON number hears it is invalid and must be a string", async () => {
      const res = await person({ document_number: 52998224725 });
      assert.deepEqual([res.status, res.body], [422, {
        errors: { document_number: ["is invalid: must be a string"] },
      }]);
    });

    await t.step("a fiscal country written out hears that two letters work as well as three", async () => {
      const res = await person({ fiscal_country: "Brasil" });
      assert.deepEqual([res.status, res.body], [422, {
        errors: { fiscal_country: ["must be one of: BRA, MEX, COL, CHL (or BR, MX, CO, CL)"] },
      }]);
      const alpha2 = await person({ fiscal_country: "BR" });
      assert.deepEqual([alpha2.status, alpha2.body.data.fiscal_country], [200, "BRA"]);
    });

    await t.step("an amount written the Brazilian way hears the dot, with an example", async () => {
      const res = await post("/api/v1/transactions", {
        transaction: {
          subject_id: personId,
          to_bank_account_id: crypto.randomUUID(),
          currency: "BRL",
          exchange_currency: "BRL",
          value: "1.500,00",
        },
      });
      assert.deepEqual([res.status, res.body], [422, {
        errors: { value: ['has invalid format: expected a decimal string with a dot, e.g. "1500.00"'] },
      }]);
      const income = await person({ net_monthly_average_income: "1.500,00" });
      assert.deepEqual([income.status, income.body], [422, {
        errors: {
          net_monthly_average_income: ['has invalid format: expected a decimal string with a dot, e.g. "1500.00"'],
        },
      }]);
    });

    await t.step("an amount with three decimals, or negative, hears which: its places, or its sign", async () => {
      const transaction = (value: unknown) =>
        post("/api/v1/transactions", {
          transaction: {
            subject_id: personId,
            to_bank_account_id: crypto.randomUUID(),
            currency: "BRL",
            exchange_currency: "BRL",
            value,
          },
        });
      const places = 'has invalid format: expected at most two decimal places, e.g. "1.50"';
      const positive = 'has invalid format: expected an amount greater than 0, e.g. "1500.00"';
      for (const [value, message] of [["1.505", places], [1.505, places], ["-5", positive], [-5, positive]] as const) {
        const res = await transaction(value);
        assert.deepEqual([res.status, res.body], [422, { errors: { value: [message] } }], String(value));
      }
      const payin = await post("/api/sandbox/payins", { subject_id: personId, value: "-5", currency: "BRL" });
      assert.deepEqual([payin.status, payin.body], [422, { errors: { value: [positive] } }]);
      const income = await person({ net_monthly_average_income: "1.505" });
      assert.deepEqual([income.status, income.body], [422, { errors: { net_monthly_average_income: [places] } }]);
      const negative = await person({ net_monthly_average_income: "-5" });
      assert.deepEqual([negative.status, negative.body], [422, {
        errors: { net_monthly_average_income: ['has invalid format: expected an amount of 0 or more, e.g. "1500.00"'] },
      }]);
    });

    await t.step("a country code of two letters that names no country hears it is not a known country", async () => {
      const res = await post(`/api/v1/subject/${personId}/bank_accounts`, {
        bank_account: brazil({ branch_country: "XX" }),
      });
      assert.deepEqual([res.status, res.body], [422, {
        errors: {
          branch_country: ["is invalid: expected a known country, e.g. BRA or BR (no country has the code XX)"],
        },
      }]);
      const spelled = await post(`/api/v1/subject/${personId}/bank_accounts`, {
        bank_account: brazil({ branch_country: "Brasil" }),
      });
      assert.deepEqual([spelled.status, spelled.body], [422, {
        errors: { branch_country: ["is invalid: expected three letters or two, e.g. BRA or BR"] },
      }]);
      const company = await post("/api/v1/subject/companies", {
        company: {
          document_type: "tax_id",
          document_number: "123456789",
          social_name: "Acme Ltd",
          fiscal_country: "XX",
        },
      });
      assert.equal(company.status, 422, JSON.stringify(company.body));
      assert.deepEqual(company.body.errors.fiscal_country, [
        "is not an ISO 3166-1 country code: expected a known country, e.g. BRA or BR (no country has the code XX)",
      ]);
    });

    await t.step("a CLABE spaced as a bank statement prints it is accepted and stored bare", async () => {
      const bare = clabe("01218000123456789");
      const spaced = `${bare.slice(0, 3)} ${bare.slice(3, 6)} ${bare.slice(6, 17)} ${bare.slice(17)}`;
      const res = await post(`/api/v1/subject/${personId}/bank_accounts`, {
        bank_account: mexico({ account_number: spaced }),
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.data.account_number, bare);
      const shown = await company.call(
        service.base,
        "GET",
        `/api/v1/subject/${personId}/bank_accounts/${res.body.data.id}`,
      );
      assert.equal(shown.body.data.account_number, bare);
    });

    await t.step("a Brazilian account number with its thousands dot is stored without it", async () => {
      const res = await post(`/api/v1/subject/${personId}/bank_accounts`, {
        bank_account: brazil({ account_number: "12.345-6" }),
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.data.account_number, "12345-6");
    });
  } finally {
    await service.stop();
    await ctx.close();
  }
});
