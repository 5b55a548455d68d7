/**
 * Company customers as subjects: registration by tax id (again is an update), each tax id checked with its country, the
 * routes mirroring the person ones, and tenancy.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import * as check from "../support/check_digits.ts";
import { eventsOf, registerBrlAccount } from "../support/rails.ts";

Deno.test("company customers are subjects", async (t) => {
  const ctx = await setup("companies");
  const company = await newCompany(ctx);
  const other = await newCompany(ctx);
  const cnpj = check.cnpj("453718460001");
  const body = (fields: Record<string, unknown> = {}) => ({
    company: {
      document_type: "cnpj",
      document_number: cnpj,
      social_name: "Comercio Exemplo Ltda",
      fiscal_country: "BR",
      trade_name: "Exemplo",
      email: "financeiro@exemplo.com.br",
      ...fields,
    },
  });
  let id = "";

  try {
    await t.step("registering answers 201 and the company object; the same tax id again updates it (200)", async () => {
      const first = await company.post("/api/v1/subject/companies", body());
      assert.equal(first.status, 201, JSON.stringify(first.body));
      id = first.body.data.id;
      assert.equal(first.body.data.document_type, "cnpj");
      assert.equal(first.body.data.document_number, cnpj);
      assert.equal(first.body.data.fiscal_country, "BRA", "alpha-2 accepted, shown alpha-3");
      assert.equal(first.body.data.status, "approved");
      assert.deepEqual(first.body.data.documents, []);
      const again = await company.post("/api/v1/subject/companies", body({ trade_name: "Exemplo Pagamentos" }));
      assert.equal(again.status, 200);
      assert.equal(again.body.data.id, id);
      assert.equal(again.body.data.trade_name, "Exemplo Pagamentos");
    });

    await t.step("each tax id is checked, and goes with its country", async () => {
      const wrongDigit = await company.post(
        "/api/v1/subject/companies",
        body({ document_number: check.wrongLastDigit(cnpj) }),
      );
      assert.equal(wrongDigit.status, 422);
      assert.deepEqual(wrongDigit.body.errors, { document_number: ["has invalid check digits"] });
      const rfc = check.rfc("ABC680524P7");
      const mexican = await company.post(
        "/api/v1/subject/companies",
        body({ document_type: "rfc", document_number: rfc, fiscal_country: "MEX" }),
      );
      assert.equal(mexican.status, 201, JSON.stringify(mexican.body));
      const misplaced = await company.post(
        "/api/v1/subject/companies",
        body({ document_type: "nit", document_number: check.nit("900123456"), fiscal_country: "BRA" }),
      );
      assert.equal(misplaced.status, 422);
      assert.deepEqual(misplaced.body.errors, { fiscal_country: ["must be COL for a nit"] });
      const chilean = await company.post(
        "/api/v1/subject/companies",
        body({ document_type: "rut", document_number: check.rut("76086428"), fiscal_country: "CL" }),
      );
      assert.equal(chilean.status, 201, JSON.stringify(chilean.body));
      const missing = await company.post("/api/v1/subject/companies", { company: { document_type: "cnpj" } });
      assert.equal(missing.status, 400);
      assert.deepEqual(Object.keys(missing.body.errors).sort(), ["document_number", "fiscal_country", "social_name"]);
    });

    await t.step("list, detail and update mirror the person routes; the tax id cannot change", async () => {
      const list = await company.get("/api/v1/subject/companies");
      assert.deepEqual(list.body.data.map((c: { id: string }) => c.id)[0], id);
      const detail = await company.get(`/api/v1/subject/companies/${id}`);
      assert.equal(detail.body.data.status_reason, "");
      const updated = await company.put(`/api/v1/subject/companies/${id}`, {
        company: { website: "https://exemplo.com.br", email: null },
      });
      assert.equal(updated.status, 200);
      assert.equal(updated.body.data.website, "https://exemplo.com.br");
      assert.equal(updated.body.data.email, null);
      assert.equal(updated.body.data.trade_name, "Exemplo Pagamentos", "omitted fields stay");
      const renamed = await company.put(`/api/v1/subject/companies/${id}`, { company: { document_number: "1" } });
      assert.equal(renamed.status, 422);
    });

    await t.step("people and companies keep to their own routes", async () => {
      const person = await company.post("/api/v1/subject/people", {
        person: {
          document_number: check.cpf("529982247"),
          document_type: "cpf",
          social_name: "Ana",
          fiscal_country: "BRA",
        },
      });
      assert.equal((await company.get(`/api/v1/subject/people/${id}`)).status, 404);
      assert.equal((await company.get(`/api/v1/subject/companies/${person.body.data.id}`)).status, 404);
      const people = await company.get("/api/v1/subject/people");
      assert.ok(people.body.data.every((p: { id: string }) => p.id !== id));
    });

    await t.step(
      "a company's id works wherever a subject's does: documents, bank accounts, transactions, status",
      async () => {
        const account = await registerBrlAccount(company, id, "Comercio Exemplo Ltda");
        const payout = await company.post("/api/v1/transactions", {
          transaction: {
            subject_id: id,
            to_bank_account_id: account.id,
            currency: "BRL",
            exchange_currency: "BRL",
            value: "10.00",
          },
        });
        assert.equal(payout.status, 201, JSON.stringify(payout.body));
        assert.equal(payout.body.data.subject.document_type, "cnpj");
        assert.equal(payout.body.data.source_document_number, cnpj);
        const reproved = await company.post(`/api/sandbox/subjects/${id}/reprove`, {
          items: ["proof_of_address_missing"],
        });
        assert.equal(reproved.status, 201, JSON.stringify(reproved.body));
        assert.equal(reproved.body.data.status, "reproved");
        assert.equal(reproved.body.data.trade_name, "Exemplo Pagamentos", "answered as a company");
        const [event] = (await eventsOf(ctx, company, "subject_reproved")).slice(-1);
        assert.equal(event.data.subject_id, id);
        const values = await company.get(`/api/v1/subject/${id}/transaction_values`);
        assert.equal(values.status, 200);
      },
    );

    await t.step("another company's id is not found", async () => {
      assert.equal((await other.get(`/api/v1/subject/companies/${id}`)).status, 404);
      assert.equal((await other.put(`/api/v1/subject/companies/${id}`, { company: { trade_name: "X" } })).status, 404);
      assert.deepEqual((await other.get("/api/v1/subject/companies")).body.data, []);
    });
  } finally {
    await ctx.close();
  }
});
