/**
 * People through the API: registration (again is an update), detail, list and PUT, the person rules (CPF, CURP,
 * rfc_pf, cc, ce, passport, income, states) and every bad request answering 4xx with the documented body.
 */
import assert from "node:assert/strict";
import { type Company, newCompany, setup } from "../support/helpers.ts";

// Check digits computed from each algorithm (CPF mod 11; CURP RENAPO weights 18..2), not copied from documentation.
const CPF = { valid: ["52998224725", "12345678909", "98765432100", "00000000191"], badDigit: "52998224726" };
const CURP = { valid: "GOMA900101HDFRRN01", second: "HEGG560427MVZRRL04", badDigit: "GOMA900101HDFRRN02" };

const PERSON_KEYS = [
  "id",
  "status",
  "clearance_level",
  "required_clearance_level",
  "social_name",
  "document_type",
  "document_number",
  "fiscal_country",
  "rfc_pf",
  "email",
  "phone_country_code",
  "phone_area_code",
  "phone_number",
  "birth_date",
  "net_monthly_average_income",
  "address_street",
  "address_number",
  "address_complement",
  "address_neighborhood",
  "address_postal_code",
  "address_city",
  "address_state",
  "address_country",
  "references",
  "documents",
  "inserted_at",
  "updated_at",
].sort();

const cpfPerson = (overrides: Record<string, unknown> = {}) => ({
  document_number: "52998224725",
  document_type: "cpf",
  social_name: "Ana Souza",
  fiscal_country: "BRA",
  ...overrides,
});

async function register(company: Company, person: Record<string, unknown>) {
  return await company.post("/api/v1/subject/people", { person });
}

Deno.test("person endpoints", async (t) => {
  const ctx = await setup("people");
  const company = await newCompany(ctx);

  await t.step("registering a person answers 201 with the documented object", async () => {
    const res = await register(
      company,
      cpfPerson({
        email: "ana@example.com",
        phone_country_code: "55",
        phone_area_code: "11",
        phone_number: "987654321",
        birth_date: "1990-01-02",
        net_monthly_average_income: "1500.5",
        address_street: "Rua A",
        address_state: "SP",
        address_country: "BRA",
        website: "https://ana.example.com",
        unknown_field: "ignored",
      }),
    );
    assert.equal(res.status, 201);
    const p = res.body.data;
    assert.deepEqual(Object.keys(p).sort(), PERSON_KEYS);
    assert.match(p.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(p.status, "approved");
    assert.equal(p.clearance_level, 1);
    assert.equal(p.required_clearance_level, 1);
    assert.equal(p.net_monthly_average_income, "1500.50");
    assert.equal(p.birth_date, "1990-01-02");
    assert.equal(p.rfc_pf, null);
    assert.deepEqual(p.references, []);
    assert.deepEqual(p.documents, []);
    assert.match(p.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
    assert.match(p.updated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
    assert.ok(Math.abs(Date.parse(`${p.inserted_at}Z`) - Date.now()) < 60_000, "inserted_at is UTC");
    assert.ok(res.headers.get("x-request-id"));
  });

  await t.step("registering the same CPF again updates that person and keeps its id", async () => {
    const first = await register(company, cpfPerson({ document_number: "12345678909", email: "old@example.com" }));
    assert.equal(first.status, 201);
    const again = await register(company, cpfPerson({ document_number: "12345678909", social_name: "Ana Nova" }));
    assert.equal(again.status, 200);
    assert.equal(again.body.data.id, first.body.data.id);
    assert.equal(again.body.data.social_name, "Ana Nova");
    assert.equal(again.body.data.email, "old@example.com", "fields not given stay");
  });

  await t.step("the detail shows status_reason; the list does not", async () => {
    const created = await register(company, cpfPerson({ document_number: "98765432100" }));
    const detail = await company.get(`/api/v1/subject/people/${created.body.data.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.data.status_reason, "");
    assert.deepEqual(Object.keys(detail.body.data).sort(), [...PERSON_KEYS, "status_reason"].sort());
    const list = await company.get("/api/v1/subject/people");
    assert.ok(list.body.data.every((p: Record<string, unknown>) => !("status_reason" in p)));
  });

  await t.step("PUT changes given fields, leaves omitted ones, clears nulls", async () => {
    const created = await register(
      company,
      cpfPerson({
        document_number: "00000000191",
        email: "keep@example.com",
        phone_number: "123456789",
        address_city: "São Paulo",
      }),
    );
    const id = created.body.data.id;
    const res = await company.put(`/api/v1/subject/people/${id}`, {
      person: { social_name: "Renamed", phone_number: null, net_monthly_average_income: "10000000.00" },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.id, id);
    assert.equal(res.body.data.social_name, "Renamed");
    assert.equal(res.body.data.email, "keep@example.com");
    assert.equal(res.body.data.address_city, "São Paulo");
    assert.equal(res.body.data.phone_number, null);
    assert.equal(res.body.data.net_monthly_average_income, "10000000.00");
    const shown = await company.get(`/api/v1/subject/people/${id}`);
    assert.equal(shown.body.data.social_name, "Renamed");
  });

  await t.step("PUT refuses to change the document and checks income against the stored document", async () => {
    const created = await register(company, cpfPerson({ document_number: CPF.valid[0] }));
    const id = created.body.data.id;
    const changed = await company.put(`/api/v1/subject/people/${id}`, {
      person: { document_number: CPF.valid[1], document_type: "passport" },
    });
    assert.equal(changed.status, 422);
    assert.deepEqual(changed.body, {
      errors: { document_number: ["cannot be changed"], document_type: ["cannot be changed"] },
    });
    const rich = await company.put(`/api/v1/subject/people/${id}`, {
      person: { net_monthly_average_income: "10000000.01" },
    });
    assert.equal(rich.status, 422);
    assert.deepEqual(rich.body.errors, { net_monthly_average_income: ["must be less than or equal to 10000000.00"] });
    const blank = await company.put(`/api/v1/subject/people/${id}`, { person: { social_name: "  " } });
    assert.deepEqual([blank.status, blank.body.errors], [400, { social_name: ["can't be blank"] }]);
  });

  await t.step(
    "PUT lists a wrong field beside the rules it would break and the document it cannot change",
    async () => {
      const created = await register(company, cpfPerson({ document_number: CPF.valid[2] }));
      const url = `/api/v1/subject/people/${created.body.data.id}`;
      const brlMax = "10000000.00"; // a CPF's income is in BRL
      const states =
        "AC, AL, AP, AM, BA, CE, DF, ES, GO, MA, MT, MS, MG, PA, PB, PR, PE, PI, RJ, RN, RS, RO, RR, SC, SP, SE, TO";
      const res = await company.put(url, {
        person: { email: "bad", net_monthly_average_income: "10000000.01", address_state: "XX", document_type: "cc" },
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(res.body.errors, {
        email: ["has invalid format: expected an email address, e.g. ana@example.com"],
        net_monthly_average_income: [`must be less than or equal to ${brlMax}`],
        address_state: [`must be one of: ${states}`],
        document_type: ["cannot be changed"],
      });
      const blank = await company.put(url, { person: { social_name: "", net_monthly_average_income: "10000000.01" } });
      assert.equal(blank.status, 400, JSON.stringify(blank.body));
      assert.deepEqual(blank.body.errors, {
        social_name: ["can't be blank"],
        net_monthly_average_income: [`must be less than or equal to ${brlMax}`],
      });
      assert.equal((await company.get(url)).body.data.email, null);
    },
  );

  await t.step("registration lists a bad document number, a missing name and every bad document together", async () => {
    const garbage = { labels: ["cpf-number"], file_type: "image/png", file_name: "cpf.png", file_data: "@@@@" };
    const noExtension = { labels: ["rg-photo"], file_type: "text/plain", file_name: "rg", file_data: "aGVsbG8=" };
    const res = await register(
      company,
      cpfPerson({ document_number: CPF.badDigit, social_name: "", documents: [garbage, noExtension] }),
    );
    // a failed document is a 400 (as is a missing field), whatever else is wrong
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.deepEqual(res.body.errors, {
      document_number: ["has invalid check digits"],
      social_name: ["can't be blank"],
      documents: {
        "0": { file_data: ["is not valid Base64"] },
        "1": { file_name: ["must include a file extension"] },
      },
    });
    const onlyDocument = await register(company, cpfPerson({ document_number: CPF.badDigit, documents: [garbage] }));
    assert.equal(onlyDocument.status, 400, JSON.stringify(onlyDocument.body));
    assert.deepEqual(onlyDocument.body.errors, {
      document_number: ["has invalid check digits"],
      documents: { "0": { file_data: ["is not valid Base64"] } },
    });
    // a document without labels does not hide what is wrong with the next one
    const unlabelled = await register(company, cpfPerson({ documents: [{ ...garbage, labels: [] }, noExtension] }));
    assert.equal(unlabelled.status, 400, JSON.stringify(unlabelled.body));
    assert.deepEqual(unlabelled.body.errors, {
      documents: {
        "0": { labels: ["can't be blank"], file_data: ["is not valid Base64"] },
        "1": { file_name: ["must include a file extension"] },
      },
    });
    const people = await company.get("/api/v1/subject/people");
    assert.ok(!people.body.data.some((p: { document_number: string }) => p.document_number === CPF.badDigit));
  });

  await ctx.close();
});

Deno.test("person rules", async (t) => {
  const ctx = await setup("person_rules");
  const company = await newCompany(ctx);
  const status = async (person: Record<string, unknown>) => {
    const res = await register(company, person);
    return { status: res.status, errors: res.body.errors, data: res.body.data };
  };

  await t.step(
    "CPF: 11 digits with valid check digits, not all equal; a refusal says which of these is wrong",
    async () => {
      for (const cpf of CPF.valid) {
        assert.ok([200, 201].includes((await status(cpfPerson({ document_number: cpf }))).status), cpf);
      }
      const cases: [string, string][] = [
        [CPF.badDigit, "has invalid check digits"],
        ["529.982.247-26", "has invalid check digits"],
        ["11111111111", "cannot be one digit repeated"],
        ["529.982.247-2", "must have 11 digits"],
        ["5299822472", "must have 11 digits"],
        ["abcdefghijk", "must contain only digits"],
        ["529,982,247-25", "must contain only digits"],
      ];
      for (const [cpf, message] of cases) {
        const res = await status(cpfPerson({ document_number: cpf }));
        assert.deepEqual([res.status, res.errors], [422, { document_number: [message] }], cpf);
      }
    },
  );

  await t.step("CPF: punctuated or bare is one person, stored bare, as a company's CNPJ is", async () => {
    // the connector strips the punctuation before sending, a person typing it keeps it (docs/errors.md, "What is
    // wrong with a number")
    const bare = await status(cpfPerson({ document_number: "39053344705" }));
    assert.equal(bare.status, 201, JSON.stringify(bare));
    const punctuated = await status(cpfPerson({ document_number: "390.533.447-05", email: "ana@example.com" }));
    assert.equal(punctuated.status, 200, JSON.stringify(punctuated));
    assert.deepEqual(
      [punctuated.data.id, punctuated.data.document_number, punctuated.data.email],
      [bare.data.id, "39053344705", "ana@example.com"],
    );
  });

  const curpPerson = (o: Record<string, unknown> = {}) => ({
    document_number: CURP.valid,
    document_type: "curp",
    social_name: "Mario Gomez",
    fiscal_country: "MEX",
    ...o,
  });

  await t.step("CURP: official format and check digit; lowercase is normalised", async () => {
    assert.equal((await status(curpPerson())).status, 201);
    const lower = await status(curpPerson({ document_number: CURP.second.toLowerCase() }));
    assert.equal(lower.status, 201);
    assert.equal(lower.data.document_number, CURP.second);
    const cases: [string, string][] = [
      [CURP.badDigit, "has an invalid check digit"],
      ["GOMA900101HZZRRN01", "has invalid format, expected a state code in characters 12 and 13"],
      ["GOMA901301HDFRRN01", "has invalid format, expected a birth date (YYMMDD) in characters 5 to 10"],
      ["GOMA900101QDFRRN01", "has invalid format, expected H, M or X as character 11"],
      ["GOMA900101HDF", "must have 18 characters"],
      ["GOMA-900101-HDFRRN01", "must contain only letters and digits"],
    ];
    for (const [curp, message] of cases) {
      const res = await status(curpPerson({ document_number: curp }));
      assert.deepEqual([res.status, res.errors], [422, { document_number: [message] }], curp);
    }
  });

  await t.step("rfc_pf: 13 characters, first 10 must match the CURP", async () => {
    const ok = await status(curpPerson({ rfc_pf: "goma900101ab1" }));
    assert.equal(ok.data.rfc_pf, "GOMA900101AB1");
    const mismatch = await status(curpPerson({ rfc_pf: "GOMB900101AB1" }));
    assert.deepEqual([mismatch.status, mismatch.errors], [422, { rfc_pf: ["does not match curp"] }]);
    const bad = await status(curpPerson({ rfc_pf: "GOMA9001" }));
    assert.deepEqual([bad.status, bad.errors], [422, { rfc_pf: ["must have 13 characters"] }]);
    const date = await status(curpPerson({ rfc_pf: "GOMA901301AB1" }));
    assert.deepEqual([date.status, date.errors], [422, {
      rfc_pf: ["has invalid format, expected a date (YYMMDD) after the letters"],
    }]);
  });

  const other = (type: string, number: string, country: string) => ({
    document_number: number,
    document_type: type,
    social_name: "Someone",
    fiscal_country: country,
  });

  await t.step("cc is 10 digits, ce 6 to 9 digits, passport 5 to 20 letters or digits", async () => {
    const accepted = [
      other("cc", "1234567890", "COL"),
      other("ce", "123456", "COL"),
      other("ce", "123456789", "COL"),
      other("passport", "ab12345", "CHL"),
      other("passport", "X".repeat(20), "CHL"),
    ];
    for (const p of accepted) assert.equal((await status(p)).status, 201, JSON.stringify(p));
    const refused: [Record<string, unknown>, string][] = [
      [other("cc", "123456789", "COL"), "must have 10 digits"],
      [other("cc", "12345678901", "COL"), "must have 10 digits"],
      [other("ce", "12345", "COL"), "must have 6 to 9 digits"],
      [other("ce", "1234567890", "COL"), "must have 6 to 9 digits"],
      [other("passport", "AB12", "CHL"), "must have 5 to 20 characters"],
      [other("passport", "AB-12345", "CHL"), "must contain only letters and digits"],
    ];
    for (const [p, message] of refused) {
      const res = await status(p);
      assert.deepEqual([res.status, res.errors], [422, { document_number: [message] }], JSON.stringify(p));
    }
  });

  await t.step("document_type and fiscal_country are enums; alpha-2 countries are stored as alpha-3", async () => {
    const bad = await status(cpfPerson({ document_type: "rg", fiscal_country: "ARG" }));
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.errors, {
      document_type: ["must be one of: cpf, curp, cc, ce, passport"],
      fiscal_country: ["must be one of: BRA, MEX, COL, CHL (or BR, MX, CO, CL)"],
    });
    const alpha2 = await status(other("cc", "1234567891", "CO"));
    assert.equal(alpha2.data.fiscal_country, "COL");
  });

  await t.step("income maxima follow the currency inferred from the document", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [cpfPerson({ document_number: "12345678909" }), "10000000.00"],
      [curpPerson(), "100000000.00"],
      [other("cc", "1234567892", "COL"), "50000000000.00"],
      [other("passport", "CL12345", "CHL"), "10000000000.00"],
      [other("passport", "BR12345", "BRA"), "10000000.00"],
    ];
    for (const [person, max] of cases) {
      const atMax = await status({ ...person, net_monthly_average_income: max });
      assert.ok([200, 201].includes(atMax.status), `${max} accepted`);
      assert.equal(atMax.data.net_monthly_average_income, max);
      const over = (BigInt(max.replace(".", "")) + 1n).toString();
      const overText = `${over.slice(0, -2)}.${over.slice(-2)}`;
      const res = await status({ ...person, net_monthly_average_income: overText });
      assert.equal(res.status, 422, overText);
      assert.deepEqual(res.errors, { net_monthly_average_income: [`must be less than or equal to ${max}`] });
    }
    const decimals = await status(cpfPerson({ net_monthly_average_income: "10.123" }));
    assert.deepEqual([decimals.status, decimals.errors], [422, {
      net_monthly_average_income: ['has invalid format: expected at most two decimal places, e.g. "1.50"'],
    }]);
    const huge = await status(cpfPerson({ net_monthly_average_income: "12345678901234567890123.00" }));
    assert.deepEqual([huge.status, huge.errors], [422, {
      net_monthly_average_income: ["must be less than or equal to 10000000.00"],
    }]);
    const negative = await status(cpfPerson({ net_monthly_average_income: "-1.00" }));
    assert.equal(negative.status, 422);
  });

  await t.step("Brazilian states, dates, emails, phone codes and websites", async () => {
    const state = await status(cpfPerson({ address_state: "XX" }));
    assert.equal(state.status, 422);
    assert.match(state.errors.address_state[0], /^must be one of: AC, AL, AP/);
    assert.equal((await status(cpfPerson({ address_state: "rj" }))).data.address_state, "RJ");
    // outside Brazil the state is free text
    assert.equal((await status(curpPerson({ address_state: "Jalisco" }))).status, 200);
    const checks: [Record<string, unknown>, string, string][] = [
      [{ birth_date: "2023-02-30" }, "birth_date", "is invalid: no such day in the calendar"],
      [{ birth_date: "01/02/1990" }, "birth_date", "has invalid format: expected YYYY-MM-DD, e.g. 1990-01-02"],
      [{ birth_date: "2999-01-01" }, "birth_date", "is invalid: in the future"],
      [{ email: "not-an-email" }, "email", "has invalid format: expected an email address, e.g. ana@example.com"],
      [{ phone_country_code: "5" }, "phone_country_code", "has invalid format: expected 2 digits, e.g. 55"],
      [
        { website: "ftp://x.example" },
        "website",
        "has invalid format: expected an http:// or https:// URL, e.g. https://example.com",
      ],
    ];
    for (const [fields, field, message] of checks) {
      const res = await status(cpfPerson(fields));
      assert.deepEqual([res.status, res.errors], [422, { [field]: [message] }], JSON.stringify(fields));
    }
  });

  await t.step("missing required fields answer 400, listing invalid ones too", async () => {
    const res = await status({ document_type: "cpf", social_name: "", email: "bad" });
    assert.equal(res.status, 400);
    assert.deepEqual(res.errors, {
      document_number: ["can't be blank"],
      social_name: ["can't be blank"],
      fiscal_country: ["can't be blank"],
      email: ["has invalid format: expected an email address, e.g. ana@example.com"],
    });
    const mixed = await status({
      document_type: "curp",
      document_number: CURP.valid,
      social_name: "Mario",
      email: "bad",
      rfc_pf: "GOMB900101AB1",
      address_country: "BRA",
      address_state: "XX",
      net_monthly_average_income: "100000000.01",
    });
    assert.equal(mixed.status, 400);
    assert.deepEqual(Object.keys(mixed.errors).sort(), [
      "address_state",
      "email",
      "fiscal_country",
      "net_monthly_average_income",
      "rfc_pf",
    ]);
    assert.deepEqual(mixed.errors.rfc_pf, ["does not match curp"]);
    assert.deepEqual(mixed.errors.net_monthly_average_income, ["must be less than or equal to 100000000.00"]);
    const nulls = await status({ document_number: null, document_type: null, social_name: null, fiscal_country: null });
    assert.equal(nulls.status, 400);
    assert.deepEqual(Object.keys(nulls.errors).sort(), [
      "document_number",
      "document_type",
      "fiscal_country",
      "social_name",
    ]);
  });

  await ctx.close();
});

Deno.test("bad requests answer 4xx with the documented body, never 5xx", async (t) => {
  const ctx = await setup("people_bad_requests");
  const company = await newCompany(ctx);

  await t.step("malformed JSON", async () => {
    const res = await company.post("/api/v1/subject/people", '{"person": {');
    assert.equal(res.status, 400);
    assert.equal(typeof res.body.errors.detail, "string");
  });

  await t.step("wrapper key missing or not an object", async () => {
    for (const body of [{}, { person: "x" }, { person: [] }, [], '"text"', "null"]) {
      const res = await company.post("/api/v1/subject/people", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(typeof res.body.errors.detail, "string", JSON.stringify(body));
    }
  });

  await t.step("wrong JSON types", async () => {
    const res = await register(company, cpfPerson({ document_number: 52998224725, social_name: ["x"], email: 7 }));
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.errors, {
      document_number: ["is invalid: must be a string"],
      social_name: ["is invalid: must be a string"],
      email: ["is invalid: must be a string"],
    });
  });

  await t.step("a NUL character, which no text column can hold", async () => {
    const res = await register(company, cpfPerson({ social_name: "Ana\u0000Souza" }));
    assert.deepEqual([res.status, res.body], [422, { errors: { social_name: ["is invalid"] } }]);
  });

  await t.step("a body sent as another content type", async () => {
    const res = await company.call("POST", "/api/v1/subject/people", JSON.stringify({ person: cpfPerson() }), {
      "content-type": "text/plain",
    });
    assert.deepEqual([res.status, res.body], [400, { errors: { detail: "Content-Type must be application/json" } }]);
  });

  await t.step("huge strings", async () => {
    const res = await register(company, cpfPerson({ social_name: "x".repeat(1_000_000) }));
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.errors, { social_name: ["is too long (maximum is 255 characters)"] });
  });

  await t.step("a body over 22 MB answers 413", async () => {
    const res = await company.post("/api/v1/subject/people", JSON.stringify({ pad: "x".repeat(23 * 1024 * 1024) }));
    const detail = "Payload Too Large: a body of this route is at most 22 MB";
    assert.deepEqual([res.status, res.body], [413, { errors: { detail } }]);
  });

  await t.step("a non-UUID path id answers 400; an unknown one 404", async () => {
    const bad = await company.get("/api/v1/subject/people/123");
    assert.deepEqual([bad.status, bad.body], [400, { errors: { id: ["is invalid"] } }]);
    const badPut = await company.put("/api/v1/subject/people/not-a-uuid", { person: { social_name: "x" } });
    assert.deepEqual([badPut.status, badPut.body], [400, { errors: { id: ["is invalid"] } }]);
    const unknown = await company.get(`/api/v1/subject/people/${crypto.randomUUID()}`);
    assert.deepEqual([unknown.status, unknown.body], [404, { errors: { detail: "Not Found" } }]);
  });

  await t.step("a bad last_id is refused", async () => {
    const res = await company.get("/api/v1/subject/people?last_id=zzz");
    assert.deepEqual([res.status, res.body], [422, { errors: { last_id: ["is invalid"] } }]);
  });

  await ctx.close();
});

Deno.test("listing pages through more than 100 people in id order", async () => {
  const ctx = await setup("people_pages");
  const company = await newCompany(ctx);
  const created: string[] = [];
  for (let i = 0; i < 205; i++) {
    const res = await register(company, {
      document_number: String(1_000_000_000 + i),
      document_type: "cc",
      social_name: `Person ${i}`,
      fiscal_country: "COL",
    });
    assert.equal(res.status, 201);
    created.push(res.body.data.id);
  }
  const seen: string[] = [];
  const sizes: number[] = [];
  let lastId: string | undefined;
  for (let page = 0; page < 5; page++) {
    const res = await company.get(`/api/v1/subject/people${lastId ? `?last_id=${lastId}` : ""}`);
    assert.equal(res.status, 200);
    sizes.push(res.body.data.length);
    if (!res.body.data.length) break;
    seen.push(...res.body.data.map((p: { id: string }) => p.id));
    lastId = seen[seen.length - 1];
  }
  assert.deepEqual(sizes, [100, 100, 5, 0]);
  assert.deepEqual(seen, [...created].sort());
  assert.deepEqual(seen, created, "ids are time-ordered: creation order is id order");
  await ctx.close();
});
