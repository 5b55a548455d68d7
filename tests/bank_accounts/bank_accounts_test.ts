/**
 * Bank accounts through the API, country by country (Brazil with full details or PIX, Mexico's CLABE, Colombia's labels
 * and owners, international BIC/IBAN/ABA), with the bank directory, reads, updates and tenancy: the rules of
 * domain/bank_accounts/rules.ts held to what an integrator sends and reads back.
 */
import assert from "node:assert/strict";
import { newCompany, setup, type TestContext } from "../support/helpers.ts";
// Check digits are computed from each published algorithm, not copied from the service.
import { clabe, cnpj, nit, wrongLastDigit } from "../support/check_digits.ts";
import { brazil, colombia, international, mexico } from "../support/bank_accounts.ts";
import { newPerson } from "../support/subjects.ts";

const CPF = "52998224725";
const CURP = "GOMA900101HDFRRN01";

const CREATE_KEYS = [
  "account_number",
  "account_type",
  "aba",
  "bank",
  "branch_country",
  "branch_number",
  "currency",
  "iban",
  "id",
  "inserted_at",
  "intermediary_bank_account",
  "nickname",
  "owner_company",
  "owner_document_number",
  "owner_document_type",
  "owner_name",
  "pix_info",
  "routing_number",
  "updated_at",
].sort();
const READ_KEYS = CREATE_KEYS.map((k) => k === "intermediary_bank_account" ? "intermediary_bank_account_id" : k).sort();

async function directoryName(ctx: TestContext, country: string, code: string): Promise<string> {
  const [row] = await ctx
    .sql`select name from banks where company_id is null and country = ${country} and code = ${code}`;
  assert.ok(row, `${country} ${code} is seeded`);
  return row.name;
}

Deno.test("bank accounts", async (t) => {
  const ctx = await setup("bank_accounts");
  const company = await newCompany(ctx);
  const subjectId = await newPerson(company);
  const path = `/api/v1/subject/${subjectId}/bank_accounts`;
  const create = (bank_account: unknown, to = path) => company.post(to, { bank_account });

  await t.step("Brazil with full details: 201, the documented object, the directory's name and ISPB", async () => {
    await ctx.sql`update companies set social_name = 'Integrator Ltda', document_type = 'cnpj',
                  document_number = ${cnpj("112223330001")} where id = ${company.id}`;
    const res = await create(brazil({ owner_document_number: CPF, owner_document_type: "cpf", nickname: "main" }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const a = res.body.data;
    assert.deepEqual(Object.keys(a).sort(), CREATE_KEYS);
    assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(a.currency, "BRL");
    assert.equal(a.account_type, "conta-corrente");
    assert.equal(a.account_number, "123456-7");
    assert.equal(a.branch_number, "0001");
    assert.equal(a.intermediary_bank_account, null);
    assert.equal(a.pix_info, null);
    assert.equal(a.owner_document_type, "cpf");
    assert.deepEqual(a.owner_company, {
      social_name: "Integrator Ltda",
      id: company.id,
      document_type: "cnpj",
      document_number: cnpj("112223330001"),
    });
    assert.deepEqual(Object.keys(a.bank).sort(), ["code", "country", "id", "ispb", "name", "swift"]);
    assert.equal(a.bank.code, "341");
    assert.equal(a.bank.ispb, "60701190");
    assert.equal(a.bank.country, "BRA");
    assert.equal(a.bank.swift, null);
    assert.equal(a.bank.name, await directoryName(ctx, "BRA", "341"));
    assert.notEqual(a.bank.name, "itau");
    assert.match(a.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
  });

  await t.step("Brazil with PIX only: no bank details needed", async () => {
    const res = await create({
      currency: "BRL",
      owner_name: "Ana",
      pix_info: { type: "email", key: "ana@example.com" },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.pix_info, { type: "EMAIL", key: "ana@example.com" });
    assert.equal(res.body.data.account_number, null);
    assert.deepEqual(res.body.data.bank, { swift: null, ispb: null, name: null, id: null, code: null, country: "BRA" });
  });

  await t.step("Brazil without bank details or PIX: 400 naming what is missing", async () => {
    const res = await create({ currency: "BRL", owner_name: "Ana" });
    assert.equal(res.status, 400);
    for (const field of ["account_number", "branch_number", "bank", "pix_info"]) {
      assert.deepEqual(res.body.errors[field], ["can't be blank"], field);
    }
    const partial = await create(brazil({ bank: { code: "341", name: "Itaú" } }));
    assert.equal(partial.status, 400);
    assert.deepEqual(partial.body.errors, { bank: { ispb: ["can't be blank"] } });
  });

  await t.step("PIX keys are checked per type; a PHONE without + is a 422 on pix_info.key", async () => {
    const pix = (type: string, key: string) => create({ currency: "BRL", owner_name: "Ana", pix_info: { type, key } });
    const phone = await pix("PHONE", "5511987654321");
    assert.equal(phone.status, 422);
    assert.deepEqual(Object.keys(phone.body.errors), ["pix_info"]);
    assert.deepEqual(Object.keys(phone.body.errors.pix_info), ["key"]);

    const accepted: [string, string, string][] = [
      ["PHONE", "+5511987654321", "+5511987654321"],
      ["CPF", "529.982.247-25", CPF],
      ["CNPJ", cnpj("112223330001"), cnpj("112223330001")],
      ["EVP", "123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"],
    ];
    for (const [type, key, stored] of accepted) {
      const res = await pix(type, key);
      assert.equal(res.status, 201, `${type}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body.data.pix_info, { type, key: stored });
    }
    const refused: [string, string][] = [
      ["PHONE", "+55119"],
      ["CPF", "52998224726"],
      ["CNPJ", cnpj("112223330001").slice(0, 13) + "9"],
      ["EMAIL", "not-an-email"],
      ["EVP", "not-a-uuid"],
    ];
    for (const [type, key] of refused) {
      const res = await pix(type, key);
      assert.equal(res.status, 422, `${type} ${key}`);
      assert.ok(res.body.errors.pix_info.key, type);
    }
    const unknownType = await pix("IBAN", "x");
    assert.equal(unknownType.status, 422);
    assert.deepEqual(unknownType.body.errors.pix_info.type, ["must be one of: CPF, CNPJ, EMAIL, PHONE, EVP"]);
    const noKey = await create({ currency: "BRL", owner_name: "Ana", pix_info: { type: "EMAIL" } });
    assert.equal(noKey.status, 400);
    assert.deepEqual(noKey.body.errors, { pix_info: { key: ["can't be blank"] } });
  });

  await t.step("Brazil formats: 3-digit code, 8-digit ISPB, account types, owner documents", async () => {
    const code = await create(brazil({ bank: { code: "34", ispb: "60701190", name: "x" } }));
    assert.equal(code.status, 422);
    assert.deepEqual(code.body.errors, { bank: { code: ["has invalid format, expected three digits"] } });
    const ispb = await create(brazil({ bank: { code: "341", ispb: "6070", name: "x" } }));
    assert.equal(ispb.status, 422);
    assert.ok(ispb.body.errors.bank.ispb);
    const type = await create(brazil({ account_type: "salary" }));
    assert.equal(type.status, 422);
    assert.deepEqual(type.body.errors.account_type, ["must be one of: conta-corrente, poupanca"]);
    const badCpf = await create(brazil({ owner_document_type: "cpf", owner_document_number: "52998224726" }));
    assert.equal(badCpf.status, 422);
    assert.deepEqual(badCpf.body.errors, { owner_document_number: ["has invalid check digits"] });
    const company_ = await create(brazil({ owner_document_number: cnpj("987654320001") }));
    assert.equal(company_.status, 201);
    assert.equal(company_.body.data.owner_document_type, "cnpj");
  });

  await t.step("the currency is required and decides the country; USD is not a subject currency", async () => {
    const { currency: _, ...noCurrency } = brazil();
    const missing = await create(noCurrency);
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors.currency, ["can't be blank"]);
    const usd = await create(international());
    assert.equal(usd.status, 422);
    assert.deepEqual(usd.body.errors, { currency: ["must be one of: BRL, MXN, COP"] });
    const blankOwner = await create(brazil({ owner_name: "  " }));
    assert.equal(blankOwner.status, 400);
    assert.deepEqual(blankOwner.body.errors, { owner_name: ["can't be blank"] });
  });

  await t.step("Mexico: a CLABE with a valid control digit and a matching bank code", async () => {
    const res = await create(mexico({ owner_document_type: "curp", owner_document_number: CURP.toLowerCase() }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.data.account_number, clabe("01218000123456789"));
    assert.equal(res.body.data.bank.code, "012");
    assert.equal(res.body.data.bank.country, "MEX");
    assert.equal(res.body.data.bank.name, await directoryName(ctx, "MEX", "012"));
    assert.equal(res.body.data.owner_document_number, CURP);

    const control = await create(mexico({ account_number: wrongLastDigit(clabe("01218000123456789")) }));
    assert.equal(control.status, 422);
    assert.deepEqual(control.body.errors, { account_number: ["has an invalid check digit"] });
    const short = await create(mexico({ account_number: "0121800012345678" }));
    assert.equal(short.status, 422);
    assert.ok(short.body.errors.account_number);

    for (const code of ["12", "12345", "A12"]) {
      const bad = await create(mexico({ bank: { code, name: "x" } }));
      assert.equal(bad.status, 422, code);
      assert.deepEqual(bad.body.errors, { bank: { code: ["has invalid format, expected three or four digits"] } });
    }
    const mismatch = await create(mexico({ bank: { code: "014", name: "Santander" } }));
    assert.equal(mismatch.status, 422);
    assert.ok(mismatch.body.errors.bank.code);
    const fourDigits = await create(mexico({ bank: { code: "0812", name: "BBVA 4" } }));
    assert.equal(fourDigits.status, 201);

    const rfc = await create(mexico({ owner_document_type: "rfc", owner_document_number: "GOMA900101AB1" }));
    assert.equal(rfc.status, 201);
    const wrongType = await create(mexico({ owner_document_type: "cpf", owner_document_number: CPF }));
    assert.equal(wrongType.status, 422);
    assert.deepEqual(wrongType.body.errors, { owner_document_type: ["must be one of: curp, rfc"] });
  });

  await t.step("Mexico: account_type, bank, bank.name and bank.code are required", async () => {
    const res = await create({ currency: "MXN", bank: { code: "012" } });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors, {
      account_number: ["can't be blank"],
      account_type: ["can't be blank"],
      bank: { name: ["can't be blank"] },
    });
    const noBank = await create(mexico({ bank: null }));
    assert.equal(noBank.status, 400);
    assert.deepEqual(noBank.body.errors, { bank: ["can't be blank"] });
  });

  await t.step("every commonly used Mexican bank code but 046 is in the directory", async () => {
    const codes =
      "002 012 014 021 030 032 036 042 044 058 059 060 062 072 127 128 130 132 137 138 140 145 601 606 616 640 646"
        .split(" ");
    const rows = await ctx.sql`select code from banks where company_id is null and country = 'MEX' and code in ${
      ctx.sql(codes)
    }`;
    assert.equal(rows.length, codes.length);
  });

  await t.step("Colombia: labels map to account types, cc or nit owners, stored names win", async () => {
    const labels: [string, string][] = [
      ["Conta Corriente", "conta-corrente"],
      ["Cuenta de Ahorros", "poupanca"],
      ["Cuentas Nomina", "salary"],
      ["Cuentas pensionales", "payment"],
      ["poupanca", "poupanca"],
    ];
    for (const [label, stored] of labels) {
      const res = await create(colombia({ account_type: label }));
      assert.equal(res.status, 201, `${label}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.data.account_type, stored);
      assert.equal(res.body.data.bank.name, await directoryName(ctx, "COL", "007"));
    }
    const badType = await create(colombia({ account_type: "Cuenta Corriente Premium" }));
    assert.equal(badType.status, 422);
    assert.ok(badType.body.errors.account_type);

    const validNit = nit("900123456");
    const withNit = await create(colombia({ owner_document_type: "NIT", owner_document_number: validNit }));
    assert.equal(withNit.status, 201, JSON.stringify(withNit.body));
    assert.equal(withNit.body.data.owner_document_type, "nit");
    assert.equal(withNit.body.data.owner_document_number, validNit);
    const badNit = validNit.slice(0, 9) + ((Number(validNit[9]) + 1) % 10);
    const refused = await create(colombia({ owner_document_type: "nit", owner_document_number: badNit }));
    assert.equal(refused.status, 422);
    assert.deepEqual(refused.body.errors, { owner_document_number: ["has an invalid check digit"] });
    const cc = await create(colombia({ owner_document_type: "cc", owner_document_number: "1020304050" }));
    assert.equal(cc.status, 201);
    const ce = await create(colombia({ owner_document_type: "ce", owner_document_number: "123456" }));
    assert.equal(ce.status, 422);
    assert.deepEqual(ce.body.errors, { owner_document_type: ["must be one of: cc, nit"] });
  });

  await t.step("Colombia: a cc owner has exactly the 10 digits of a person's cc, no fewer, no more", async () => {
    const CC_DIGITS = 10; // the one format the interface gives for a cc
    const digits = (n: number) => "1234567890123".slice(0, n);
    for (const length of [6, CC_DIGITS - 1, CC_DIGITS, CC_DIGITS + 1]) {
      const number = digits(length);
      const account = await create(colombia({ owner_document_type: "cc", owner_document_number: number }));
      const person = await company.post("/api/v1/subject/people", {
        person: { document_number: number, document_type: "cc", social_name: "Carlos Pérez", fiscal_country: "COL" },
      });
      if (length === CC_DIGITS) {
        assert.equal(account.status, 201, JSON.stringify(account.body));
        assert.equal(account.body.data.owner_document_number, number);
        assert.ok([200, 201].includes(person.status), JSON.stringify(person.body));
      } else {
        assert.equal(account.status, 422, `${length} digits: ${JSON.stringify(account.body)}`);
        // the same rule, so the same words on both
        assert.deepEqual(account.body.errors, { owner_document_number: ["must have 10 digits"] });
        assert.equal(person.status, 422, `${length} digits: ${JSON.stringify(person.body)}`);
        assert.deepEqual(person.body.errors, { document_number: ["must have 10 digits"] });
      }
    }
    // written with separators, the account owner's cc is stored bare
    const dotted = await create(colombia({ owner_document_type: "cc", owner_document_number: "1.234.567.890" }));
    assert.equal(dotted.status, 201, JSON.stringify(dotted.body));
    assert.equal(dotted.body.data.owner_document_number, digits(CC_DIGITS));
  });

  await t.step("Colombia: account_number, branch_number, owner_name and the bank are required", async () => {
    const res = await create({ currency: "COP", bank: { name: "Bancolombia" } });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors, {
      account_number: ["can't be blank"],
      branch_number: ["can't be blank"],
      owner_name: ["can't be blank"],
      bank: { code: ["can't be blank"] },
    });
  });

  await t.step("an unknown code is learned: later accounts get the first name, other companies do not", async () => {
    const first = await create(colombia({ bank: { code: "999", name: "Banco Nuevo" } }));
    assert.equal(first.status, 201);
    assert.equal(first.body.data.bank.name, "Banco Nuevo");
    const second = await create(colombia({ bank: { code: "999", name: "Otro Nombre" } }));
    assert.equal(second.body.data.bank.name, "Banco Nuevo");
    assert.equal(second.body.data.bank.id, first.body.data.bank.id);

    const other = await newCompany(ctx);
    const otherSubject = await newPerson(other);
    const theirs = await other.post(`/api/v1/subject/${otherSubject}/bank_accounts`, {
      bank_account: colombia({ bank: { code: "999", name: "Su Banco" } }),
    });
    assert.equal(theirs.status, 201);
    assert.equal(theirs.body.data.bank.name, "Su Banco");
    assert.notEqual(theirs.body.data.bank.id, first.body.data.bank.id);
  });

  await t.step("international: USD or EUR, a valid BIC, IBAN and routing number, at company level", async () => {
    const res = await create(international(), "/api/v1/bank_accounts");
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const a = res.body.data;
    assert.deepEqual(Object.keys(a).sort(), CREATE_KEYS);
    assert.equal(a.currency, "USD");
    assert.equal(a.routing_number, "021000021");
    assert.equal(a.owner_document_type, "tax_id");
    assert.deepEqual(a.bank, {
      swift: "CHASUS33",
      ispb: null,
      name: "JPMorgan Chase",
      id: a.bank.id,
      code: null,
      country: "USA",
    });
    assert.equal(a.owner_company.id, company.id);

    const again = await create(international({ bank: { swift: "chasus33", name: "Chase" } }), "/api/v1/bank_accounts");
    assert.equal(again.status, 201);
    assert.equal(again.body.data.bank.name, "JPMorgan Chase");

    const eur = await create(
      international({
        currency: "EUR",
        routing_number: null,
        iban: "DE89 3704 0044 0532 0130 00",
        bank: { swift: "COBADEFFXXX", name: "Commerzbank" },
        branch_country: "de",
      }),
      "/api/v1/bank_accounts",
    );
    assert.equal(eur.status, 201, JSON.stringify(eur.body));
    assert.equal(eur.body.data.iban, "DE89370400440532013000");
    assert.equal(eur.body.data.bank.country, "DEU");
    assert.equal(eur.body.data.branch_country, "DEU");

    const invalid: [Record<string, unknown>, unknown][] = [
      [{ currency: "BRL" }, { currency: ["must be one of: USD, EUR"] }],
      [{ bank: { swift: "CHASUS", name: "x" } }, { bank: { swift: ["must have 8 or 11 characters"] } }],
      [{ routing_number: "021000022" }, { routing_number: ["has an invalid check digit"] }],
      [{ iban: "DE89370400440532013001" }, { iban: ["has invalid check digits"] }],
    ];
    for (const [overrides, errors] of invalid) {
      const bad = await create(international(overrides), "/api/v1/bank_accounts");
      assert.equal(bad.status, 422, JSON.stringify(overrides));
      assert.deepEqual(bad.body.errors, errors);
    }
    const missing = await create({ currency: "USD", bank: { name: "x" } }, "/api/v1/bank_accounts");
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors, {
      account_number: ["can't be blank"],
      owner_document_number: ["can't be blank"],
      owner_name: ["can't be blank"],
      bank: { swift: ["can't be blank"] },
    });

    const list = await company.get(path);
    assert.ok(list.body.data.every((acc: { currency: string }) => ["BRL", "MXN", "COP"].includes(acc.currency)));
  });

  await t.step("list and detail answer the read shape, with intermediary_bank_account_id", async () => {
    const created = await create(brazil({ nickname: "listed" }));
    const list = await company.get(path);
    assert.equal(list.status, 200);
    assert.ok(list.body.data.length > 1);
    for (const a of list.body.data) assert.deepEqual(Object.keys(a).sort(), READ_KEYS);
    const ids = list.body.data.map((a: { id: string }) => a.id);
    assert.deepEqual(ids, [...ids].sort());
    assert.ok(ids.includes(created.body.data.id));

    const detail = await company.get(`${path}/${created.body.data.id}`);
    assert.equal(detail.status, 200);
    const { intermediary_bank_account: _, ...rest } = created.body.data;
    assert.deepEqual(detail.body.data, { ...rest, intermediary_bank_account_id: null });

    const otherSubject = await newPerson(company, "12345678909");
    assert.deepEqual((await company.get(`/api/v1/subject/${otherSubject}/bank_accounts`)).body, { data: [] });
  });

  await t.step("update: given fields change, omitted ones stay, alpha-2 branch_country is shown alpha-3", async () => {
    const created = (await create(brazil({ nickname: "before", owner_document_number: CPF }))).body.data;
    const url = `${path}/${created.id}`;
    const res = await company.put(url, { bank_account: { nickname: "after", branch_country: "br" } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const updated = res.body.data;
    assert.deepEqual(Object.keys(updated).sort(), READ_KEYS);
    assert.equal(updated.nickname, "after");
    assert.equal(updated.branch_country, "BRA");
    for (const key of ["account_number", "branch_number", "owner_name", "owner_document_number", "currency", "bank"]) {
      assert.deepEqual(updated[key], created[key], key);
    }

    const bank = await company.put(url, { bank_account: { bank: { code: "237", ispb: "60746948", name: "brad" } } });
    assert.equal(bank.status, 200);
    assert.equal(bank.body.data.bank.code, "237");
    assert.equal(bank.body.data.bank.name, await directoryName(ctx, "BRA", "237"));
    assert.equal(bank.body.data.nickname, "after");

    const detail = await company.get(url);
    assert.deepEqual(detail.body.data, bank.body.data);

    const badCountry = await company.put(url, { bank_account: { branch_country: "XX" } });
    assert.equal(badCountry.status, 422);
    assert.deepEqual(badCountry.body.errors, {
      branch_country: ["is invalid: expected a known country, e.g. BRA or BR (no country has the code XX)"],
    });
    const usd = await company.put(url, { bank_account: { currency: "USD" } });
    assert.equal(usd.status, 422);
    assert.ok(usd.body.errors.currency);
    const blank = await company.put(url, { bank_account: { owner_name: null } });
    assert.equal(blank.status, 400);
    assert.deepEqual(blank.body.errors, { owner_name: ["can't be blank"] });
    assert.deepEqual((await company.get(url)).body.data, bank.body.data);
  });

  await t.step(
    "update: bank.code alone is a partial update; a bad code is named alone, never an ISPB not sent",
    async () => {
      const created = (await create(brazil({ bank: { code: "001", ispb: "00000000", name: "bb" } }))).body.data;
      const url = `${path}/${created.id}`;
      // every update field is optional (docs/errors.md, "Updates name only what they send"): the code brings its ISPB and name from the directory
      const itau = await company.put(url, { bank_account: { bank: { code: "341" } } });
      assert.equal(itau.status, 200, JSON.stringify(itau.body));
      assert.deepEqual(
        [itau.body.data.bank.code, itau.body.data.bank.ispb, itau.body.data.bank.name],
        ["341", "60701190", await directoryName(ctx, "BRA", "341")],
      );
      const updated = (await company.get(url)).body.data;
      // "1" is not a COMPE code: the request sent no ISPB, so there is none to call blank
      const short = await company.put(url, { bank_account: { bank: { code: "1" } } });
      assert.deepEqual([short.status, short.body], [422, {
        errors: { bank: { code: ["has invalid format, expected three digits"] } },
      }]);
      // a well-formed code the directory does not know: its ISPB cannot be guessed, and the code is what to fix
      const unknown = await company.put(url, { bank_account: { bank: { code: "999" } } });
      assert.deepEqual([unknown.status, unknown.body], [422, {
        errors: { bank: { code: ["is not a known bank code; send bank.ispb with it"] } },
      }]);
      assert.deepEqual((await company.get(url)).body.data, updated, "the refused updates changed nothing");
      // ...unless the ISPB comes with it
      const learned = await company.put(url, {
        bank_account: { bank: { code: "999", ispb: "12345678", name: "New" } },
      });
      assert.equal(learned.status, 200, JSON.stringify(learned.body));
      assert.deepEqual([learned.body.data.bank.code, learned.body.data.bank.ispb], ["999", "12345678"]);
    },
  );

  await t.step("a bank missing a part still has the formats of the parts given checked", async () => {
    const brazilian = await create(brazil({ bank: { code: "1", ispb: "607", name: null } }));
    assert.equal(brazilian.status, 400, JSON.stringify(brazilian.body));
    assert.deepEqual(brazilian.body.errors, {
      bank: {
        code: ["has invalid format, expected three digits"],
        ispb: ["has invalid format, expected eight digits"],
        name: ["can't be blank"],
      },
    });
    const mexican = await create(mexico({ bank: { code: "12345" } }));
    assert.equal(mexican.status, 400, JSON.stringify(mexican.body));
    assert.deepEqual(mexican.body.errors, {
      bank: { code: ["has invalid format, expected three or four digits"], name: ["can't be blank"] },
    });
    const abroad = await create(international({ bank: { swift: "NOTABIC" } }), "/api/v1/bank_accounts");
    assert.equal(abroad.status, 400, JSON.stringify(abroad.body));
    assert.deepEqual(abroad.body.errors, {
      bank: { swift: ["must have 8 or 11 characters"], name: ["can't be blank"] },
    });
  });

  await t.step("a body refused for its shape still hears the rules of its country", async () => {
    const created = await create(mexico({ owner_name: 5, account_number: "123" }));
    assert.equal(created.status, 422, JSON.stringify(created.body));
    assert.deepEqual(created.body.errors, {
      owner_name: ["is invalid: must be a string"],
      account_number: ["must have 18 digits (CLABE)"],
    });
    const missing = await create({ currency: "COP", nickname: 7, bank: { name: "Bancolombia" } });
    assert.equal(missing.status, 400, JSON.stringify(missing.body));
    assert.deepEqual(missing.body.errors, {
      nickname: ["is invalid: must be a string"],
      account_number: ["can't be blank"],
      branch_number: ["can't be blank"],
      owner_name: ["can't be blank"],
      bank: { code: ["can't be blank"] },
    });
    const abroad = await create(international({ currency: 840, iban: "DE00 0000" }), "/api/v1/bank_accounts");
    assert.equal(abroad.status, 422, JSON.stringify(abroad.body));
    assert.deepEqual(abroad.body.errors, { currency: ["is invalid: must be a string"] });

    const account = (await create(brazil())).body.data;
    const url = `${path}/${account.id}`;
    const update = await company.put(url, { bank_account: { nickname: 42, branch_number: "abc" } });
    assert.equal(update.status, 422, JSON.stringify(update.body));
    assert.deepEqual(update.body.errors, {
      nickname: ["is invalid: must be a string"],
      branch_number: ["must contain only digits, and a dash or X for the check digit"],
    });
    assert.equal((await company.get(url)).body.data.branch_number, account.branch_number);
    // an unknown account is still a 404 once the body is right; a malformed body is answered first
    const unknown = `${path}/${crypto.randomUUID()}`;
    assert.equal((await company.put(unknown, { bank_account: { nickname: 42 } })).status, 422);
    assert.equal((await company.put(unknown, { bank_account: { nickname: "x" } })).status, 404);
  });

  await t.step("branch_country alpha-2 is accepted on create too", async () => {
    const res = await create(mexico({ branch_country: "mx" }));
    assert.equal(res.status, 201);
    assert.equal(res.body.data.branch_country, "MEX");
  });

  await t.step("another company's subject or account, or another subject's account, is a 404", async () => {
    const account = (await create(brazil())).body.data;
    const other = await newCompany(ctx);
    const notFound = { errors: { detail: "Not Found" } };
    for (
      const res of [
        await other.post(path, { bank_account: brazil() }),
        await other.get(path),
        await other.get(`${path}/${account.id}`),
        await other.put(`${path}/${account.id}`, { bank_account: { nickname: "mine" } }),
      ]
    ) {
      assert.equal(res.status, 404);
      assert.deepEqual(res.body, notFound);
    }
    const sibling = await newPerson(company, "98765432100");
    const wrongSubject = await company.get(`/api/v1/subject/${sibling}/bank_accounts/${account.id}`);
    assert.equal(wrongSubject.status, 404);
    const put = await company.put(`/api/v1/subject/${sibling}/bank_accounts/${account.id}`, { bank_account: {} });
    assert.equal(put.status, 404);
    const unknown = await company.get(`${path}/${crypto.randomUUID()}`);
    assert.equal(unknown.status, 404);
    assert.equal((await company.get(`${path}/${account.id}`)).body.data.nickname, account.nickname);
  });

  await t.step("malformed ids and bodies are 4xx, never 5xx", async () => {
    const badId = await company.get(`${path}/not-a-uuid`);
    assert.equal(badId.status, 400);
    assert.deepEqual(badId.body, { errors: { bank_account_id: ["is invalid"] } });
    const badSubject = await company.get(`/api/v1/subject/42/bank_accounts`);
    assert.deepEqual(badSubject.body, { errors: { id: ["is invalid"] } });

    const badJson = await company.post(path, "{");
    assert.equal(badJson.status, 400);
    assert.equal(typeof badJson.body.errors.detail, "string");
    for (const body of [{}, { bank_account: "x" }, { bank_account: [] }, { account: brazil() }, "null"]) {
      const res = await company.post(path, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(typeof res.body.errors.detail, "string");
    }
    const wrongTypes: [Record<string, unknown>, string][] = [
      [{ currency: 986 }, "currency"],
      [{ bank: "341" }, "bank"],
      [{ pix_info: ["EMAIL", "a@b.co"] }, "pix_info"],
      [{ account_number: 1234567 }, "account_number"],
    ];
    for (const [overrides, field] of wrongTypes) {
      const res = await create(brazil(overrides));
      assert.equal(res.status, 422, JSON.stringify(overrides));
      assert.ok(res.body.errors[field], field);
    }
    const nested = await create(brazil({ bank: { code: 341, ispb: "60701190", name: "x" } }));
    assert.equal(nested.status, 422);
    assert.deepEqual(nested.body.errors, { bank: { code: ["is invalid: must be a string"] } });
    const putBad = await company.put(`${path}/${crypto.randomUUID()}`, "[1,2");
    assert.equal(putBad.status, 400);
  });

  await ctx.close();
});
