/**
 * `GET /api/sandbox/test_documents` as an integrator uses it: fresh valid values of every type, which the service then
 * accepts in a registration; the type and count refused with the field named; a token needed as for every sandbox call.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { MAX_TEST_DOCUMENTS, TEST_DOCUMENT_TYPES } from "../../domain/rails/test_documents.ts";
import { documentProblem } from "../support/document_checks.ts";

Deno.test("the sandbox hands out fresh valid test documents", async (t) => {
  const ctx = await setup("sandbox_test_documents");
  const company = await newCompany(ctx);
  const documents = (query: string) => company.get(`/api/sandbox/test_documents?${query}`);

  try {
    await t.step("five CPFs, distinct and valid; the first registers a person (201)", async () => {
      const res = await documents("type=cpf&count=5");
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const values: string[] = res.body.data.map((d: { type: string; value: string }) => d.value);
      assert.equal(values.length, 5);
      assert.equal(new Set(values).size, 5);
      for (const d of res.body.data) assert.deepEqual(Object.keys(d).sort(), ["type", "value"]);
      for (const v of values) assert.equal(documentProblem("cpf", v), null, v);
      const person = await company.post("/api/v1/subject/people", {
        person: { document_number: values[0], document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
      });
      assert.equal(person.status, 201, JSON.stringify(person.body));
      assert.equal(person.body.data.document_number, values[0]);
    });

    await t.step("a CURP registers a Mexican person, and a CLABE their MXN account", async () => {
      const [curp] = (await documents("type=curp")).body.data;
      const person = await company.post("/api/v1/subject/people", {
        person: {
          document_number: curp.value,
          document_type: "curp",
          social_name: "Mario Gomez",
          fiscal_country: "MEX",
        },
      });
      assert.equal(person.status, 201, JSON.stringify(person.body));
      const [clabe] = (await documents("type=clabe")).body.data;
      const account = await company.post(`/api/v1/subject/${person.body.data.id}/bank_accounts`, {
        bank_account: {
          currency: "MXN",
          owner_name: "Mario Gomez",
          account_number: clabe.value,
          account_type: "conta-corrente",
          bank: { code: clabe.value.slice(0, 3), name: "Banco" },
        },
      });
      assert.equal(account.status, 201, JSON.stringify(account.body));
      assert.equal(account.body.data.account_number, clabe.value);
    });

    await t.step("every type, a full batch: each value valid as the service checks it", async () => {
      for (const type of TEST_DOCUMENT_TYPES) {
        const res = await documents(`type=${type}&count=${MAX_TEST_DOCUMENTS}`);
        assert.equal(res.status, 200, `${type}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.data.length, MAX_TEST_DOCUMENTS, type);
        const refused = res.body.data
          .map((d: { type: string; value: string }) => [d.type, d.value, documentProblem(type, d.value)])
          .filter(([t, , problem]: [string, string, string | null]) => t !== type || problem !== null);
        assert.deepEqual(refused, [], type);
      }
    });

    await t.step("one value without a count; two calls, two values", async () => {
      const a = await documents("type=cnpj");
      const b = await documents("type=cnpj");
      assert.equal(a.body.data.length, 1);
      assert.notEqual(a.body.data[0].value, b.body.data[0].value);
    });

    await t.step("the type and the count are refused naming the field", async () => {
      const missing = await documents("count=2");
      assert.equal(missing.status, 400);
      assert.deepEqual(Object.keys(missing.body.errors), ["type"]);
      assert.match(missing.body.errors.type[0], /^can't be blank/);
      const unknown = await documents("type=ssn");
      assert.equal(unknown.status, 422);
      assert.deepEqual(Object.keys(unknown.body.errors), ["type"]);
      assert.match(unknown.body.errors.type[0], /^must be one of: cpf, cnpj, /);
      for (const count of ["0", "101", "2.5", "many"]) {
        const res = await documents(`type=cpf&count=${count}`);
        assert.equal(res.status, 422, count);
        assert.deepEqual(Object.keys(res.body.errors), ["count"], count);
      }
    });

    await t.step("without a token: 401, as every sandbox call", async () => {
      const res = await ctx.app.request("/api/sandbox/test_documents?type=cpf");
      assert.equal(res.status, 401);
      assert.deepEqual(await res.json(), { errors: { detail: "Unauthorized" } });
    });
  } finally {
    await ctx.close();
  }
});
