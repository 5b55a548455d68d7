/**
 * Values the database cannot hold (dates outside its calendar, lone surrogates, property-generated bodies of every
 * route) are refused with a 4xx, never a 500. Kept apart from the feature tests because it sweeps every route at once.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type Company, newCompany, type Reply, setup } from "../support/helpers.ts";
import { ENDPOINTS, EVENTS } from "../support/endpoints.ts";

// Whatever an integrator sends, the answer is theirs to fix (4xx), never a 500: values Postgres cannot hold (year
// 0000, year 10000, lone UTF-16 surrogates in JSON, numbers past every column) are refused before they reach it.
// The properties start from valid bodies and spoil one to three fields at a time, so the spoiled value is the one
// that reaches the database instead of being hidden behind another field's validation error.

/** Runs per property: together they take a few seconds. */
const RUNS = 120;

/** Raw JSON number tokens that JSON.stringify cannot write: they are spliced into the body text as they are. */
const RAW = "\u0001raw:";
const rawNumber = fc.constantFrom(
  "1e400",
  "-1e400",
  "123456789012345678901234567890",
  "9007199254740993",
  "2147483648",
  "-2147483649",
  "1.00000000000000000000001",
  "0.0000000000000000000001",
  "-0",
).map((n) => `${RAW}${n}`);

function bodyText(value: unknown): string {
  return JSON.stringify(value).replace(new RegExp(`"${RAW}([^"]*)"`, "g"), "$1");
}

const edgeStrings = fc.constantFrom(
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ud83d",
  "\u202einvoice",
  "\r\n",
  "0000-01-01",
  "9999-12-31",
  "-0001-01-01",
  "10000-01-01",
  "1e400",
  "NaN",
  "Infinity",
  "-1",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "*",
);

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** Dates and datetimes near the ends of the calendar, with offsets as far as a clock goes and further. */
const dateLike = fc.record({
  year: fc.oneof(fc.constantFrom(0, 1, 9999, 10000), fc.integer({ min: 0, max: 9999 })),
  month: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 12 }) }, fc.constantFrom(0, 13)),
  day: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 28 }) }, fc.constantFrom(0, 29, 30, 31, 32)),
  time: fc.option(fc.tuple(fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 60 }), fc.boolean())),
  offset: fc.option(fc.tuple(fc.constantFrom("+", "-"), fc.constantFrom(0, 1, 14, 23, 24, 99), fc.constantFrom(0, 59))),
}).map(({ year, month, day, time, offset }) =>
  `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}` +
  (time ? `T${pad(time[0], 2)}:${pad(time[1], 2)}${time[2] ? ":59.999999" : ""}` : "") +
  (time && offset ? `${offset[0]}${pad(offset[1], 2)}:${pad(offset[2], 2)}` : "")
);

/** Amounts from nothing to far past NUMERIC(20, 2), as strings and as JSON numbers. */
const decimalLike = fc.oneof(
  fc.stringMatching(/^\d{1,45}(\.\d{1,4})?$/),
  fc.constantFrom("999999999999999999.99", "1000000000000000000.00", "0.00", "0.001", "-1.00"),
  fc.double(),
  rawNumber,
);

const anyString = fc.oneof(
  { weight: 3, arbitrary: edgeStrings },
  { weight: 1, arbitrary: dateLike },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }) },
);

const anyNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, 1e21, Number.MAX_VALUE, Number.MIN_VALUE),
  rawNumber,
);

const scalar = fc.oneof(anyString, anyNumber, fc.boolean(), fc.constant(null));
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(anyString, scalar, { maxKeys: 3 }) },
);

/** A bad value of the kind the field expects (a date for a date, an amount for an amount), or anything at all. */
function near(valid: unknown): fc.Arbitrary<unknown> {
  if (typeof valid === "string" && /^\d{4}-\d{2}-\d{2}/.test(valid)) {
    return fc.oneof({ weight: 4, arbitrary: dateLike }, hostile);
  }
  if (typeof valid === "number" || (typeof valid === "string" && /^\d+(\.\d+)?$/.test(valid))) {
    return fc.oneof({ weight: 3, arbitrary: fc.oneof(decimalLike, anyNumber) }, hostile);
  }
  if (typeof valid === "string") return fc.oneof({ weight: 3, arbitrary: anyString }, hostile);
  return hostile;
}

type Json = Record<string, unknown>;

/** Every path into a body: its fields, and the fields of its nested objects. */
function paths(body: Json, prefix: string[] = []): string[][] {
  return Object.entries(body).flatMap(([k, v]) =>
    v && typeof v === "object" && !Array.isArray(v) ? [[...prefix, k], ...paths(v as Json, [...prefix, k])] : [
      [...prefix, k],
    ]
  );
}

const at = (body: unknown, path: string[]) => path.reduce((o, k) => (o as Json | undefined)?.[k], body);

/** One of the valid bodies with one to three fields replaced by bad values (or removed). */
function spoiled(valid: Json[]): fc.Arbitrary<Json> {
  return fc.constantFrom(...valid).chain((base) => {
    const all = paths(base);
    const change = fc.constantFrom(...all).chain((path) =>
      fc.tuple(fc.constant(path), fc.oneof({ weight: 9, arbitrary: near(at(base, path)) }, fc.constant(undefined)))
    );
    return fc.array(change, { minLength: 1, maxLength: 3 }).map((changes) => {
      const body = structuredClone(base);
      for (const [path, value] of changes) {
        const parent = at(body, path.slice(0, -1));
        if (!parent || typeof parent !== "object") continue;
        const key = path[path.length - 1];
        if (value === undefined) delete (parent as Json)[key];
        else (parent as Json)[key] = value;
      }
      return body;
    });
  });
}

/** Percent-encodes every UTF-16 unit, lone surrogates included (encodeURIComponent throws on those). */
function percentEncode(s: string): string {
  let out = "";
  for (const unit of s) {
    const code = unit.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    } else out += encodeURIComponent(unit);
  }
  return out;
}

function assertNo5xx(what: string, input: unknown, res: Reply) {
  assert.ok(res.status < 500, `${what} answered ${res.status} for ${bodyText(input)}: ${JSON.stringify(res.body)}`);
}

async function send(company: Company, method: string, path: string, body: unknown) {
  const res = await company.call(method, path, bodyText(body));
  assertNo5xx(`${method} ${path}`, body, res);
}

Deno.test("values the database cannot hold are refused, not a 500", async (t) => {
  const ctx = await setup("hostile_input");
  const company = await newCompany(ctx);
  const person = (await company.post("/api/v1/subject/people", {
    person: { document_number: "52998224725", document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
  })).body.data;
  const account = (await company.post(`/api/v1/subject/${person.id}/bank_accounts`, {
    bank_account: { currency: "BRL", owner_name: "Ana Souza", pix_info: { type: "EVP", key: crypto.randomUUID() } },
  })).body.data;
  const endpoint = (await company.post(ENDPOINTS, { url: "https://example.com/hooks" })).body.data;

  await t.step("events filters outside the calendar answer 422 naming the filter", async () => {
    for (
      const query of [
        "from=0000-01-01",
        "to=0000-12-31",
        "from=0000-06-01T12:00:00Z",
        "to=0000-01-01T00:00",
        "from=2026-01-01T00:00:00%2B99:99",
        "to=2026-01-01T00:00:00-24:00",
      ]
    ) {
      const res = await company.get(`${EVENTS}?${query}`);
      assert.equal(res.status, 422, `${query}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(Object.keys(res.body.errors), [query.slice(0, query.indexOf("="))], query);
    }
  });

  await t.step("the first and last days of the calendar are valid bounds, whatever the offset", async () => {
    // a delivery record to find, at the endpoint created above
    const payin = await company.post("/api/sandbox/payins", { subject_id: person.id, value: "10.00", currency: "BRL" });
    assert.equal(payin.status, 201);
    for (
      const query of [
        "to=9999-12-31",
        "from=0001-01-01",
        "from=0001-01-01T00:00:00%2B14:00&to=9999-12-31T23:59:59.999999-14:00",
        "from=0001-01-01T00:00%2B23:59&to=9999-12-31T23:59-23:59",
      ]
    ) {
      const res = await company.get(`${EVENTS}?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      assert.ok(res.body.data.length > 0, query);
    }
    const none = await company.get(`${EVENTS}?to=0001-01-01T00:00:00%2B14:00`);
    assert.equal(none.status, 200, JSON.stringify(none.body));
    assert.deepEqual(none.body.data, []);
  });

  await t.step("a birth date in year 0000 is invalid, not a 500", async () => {
    const res = await company.post("/api/v1/subject/people", {
      person: {
        document_number: "11144477735",
        document_type: "cpf",
        social_name: "Old",
        fiscal_country: "BRA",
        birth_date: "0000-01-01",
      },
    });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual(res.body, { errors: { birth_date: ["is invalid: no such day in the calendar"] } });
    const update = await company.put(`/api/v1/subject/people/${person.id}`, { person: { birth_date: "0000-02-29" } });
    assert.equal(update.status, 422, JSON.stringify(update.body));
    assert.deepEqual(update.body, { errors: { birth_date: ["is invalid: no such day in the calendar"] } });
  });

  await t.step("a lone UTF-16 surrogate is refused naming its field (jsonb cannot hold one)", async () => {
    const mapping = await company.post(ENDPOINTS, {
      url: "https://example.com/mapped",
      event_mapping: { identified: "paid\ud800" },
    });
    assert.equal(mapping.status, 422, JSON.stringify(mapping.body));
    assert.deepEqual(mapping.body, { errors: { event_mapping: { identified: ["is invalid"] } } });
    const owner = await company.post(`/api/v1/subject/${person.id}/bank_accounts`, {
      bank_account: { currency: "BRL", owner_name: "Ana \udc00", pix_info: { type: "EVP", key: crypto.randomUUID() } },
    });
    assert.equal(owner.status, 422, JSON.stringify(owner.body));
    assert.deepEqual(owner.body, { errors: { owner_name: ["is invalid"] } });
    const payer = await company.post("/api/sandbox/bank_transactions", {
      value: "1.00",
      currency: "BRL",
      payer: { document_number: "11144477735", document_type: "cpf", name: "\ud83d" },
    });
    assert.equal(payer.status, 422, JSON.stringify(payer.body));
    assert.deepEqual(payer.body, { errors: { payer: { name: ["is invalid"] } } });
    // a well-formed pair is simply a character
    const emoji = await company.put(`/api/v1/subject/people/${person.id}`, { person: { address_city: "São Paulo 🏙" } });
    assert.equal(emoji.status, 200, JSON.stringify(emoji.body));
  });

  await t.step("property: any events filter answers below 500", async () => {
    const valid: Json[] = [
      { from: "2026-01-01", to: "2026-12-31T23:59:59Z" },
      { from: "2026-01-01T00:00:00+03:00", per_page: "50", order_by: "asc", status: "pending" },
      { type: "identified,wire_created", endpoint_id: endpoint.id, last_id: endpoint.id, per_page: "100" },
    ];
    const raw = fc.constantFrom("%", "%zz", "%00", "%ED%A0%80", "%FF", "+");
    await fc.assert(
      fc.asyncProperty(spoiled(valid), fc.option(raw), async (query, rawTail) => {
        const qs = Object.entries(query)
          .map(([k, v]) => `${k}=${percentEncode(typeof v === "string" ? v : bodyText(v))}`).join("&") +
          (rawTail ? `&from=${rawTail}` : "");
        const res = await company.get(`${EVENTS}?${qs}`);
        assertNo5xx("GET events", qs, res);
      }),
      { numRuns: RUNS },
    );
  });

  await t.step("property: person bodies answer below 500", async () => {
    const optional = {
      email: "ana@example.com",
      website: "https://example.com",
      phone_country_code: "55",
      phone_area_code: "11",
      phone_number: "987654321",
      birth_date: "1990-01-02",
      address_street: "Rua A",
      address_number: "12",
      address_city: "São Paulo",
      address_postal_code: "01000-000",
      address_country: "BRA",
    };
    const valid: Json[] = [
      {
        ...optional,
        document_number: "52998224725",
        document_type: "cpf",
        social_name: "Ana Souza",
        fiscal_country: "BRA",
        net_monthly_average_income: "1500.00",
        address_state: "SP",
      },
      {
        ...optional,
        document_number: "GOMA900101HDFRRN01",
        document_type: "curp",
        rfc_pf: "GOMA900101AB1",
        social_name: "Mario Gomez",
        fiscal_country: "MX",
        net_monthly_average_income: 25000,
      },
      { document_number: "AB12345", document_type: "passport", social_name: "Pat", fiscal_country: "CHL" },
    ];
    await fc.assert(
      fc.asyncProperty(spoiled(valid), (p) => send(company, "POST", "/api/v1/subject/people", { person: p })),
      { numRuns: RUNS },
    );
    const updates = valid.map(({ document_number: _, document_type: __, ...rest }) => rest);
    await fc.assert(
      fc.asyncProperty(
        spoiled(updates),
        (p) => send(company, "PUT", `/api/v1/subject/people/${person.id}`, { person: p }),
      ),
      { numRuns: RUNS },
    );
  });

  await t.step("property: bank account bodies answer below 500", async () => {
    const subject = `/api/v1/subject/${person.id}/bank_accounts`;
    const cases: [string, string, Json[]][] = [
      ["POST", subject, [
        {
          currency: "BRL",
          owner_name: "Ana Souza",
          owner_document_type: "cpf",
          owner_document_number: "52998224725",
          account_number: "123456-7",
          branch_number: "0001",
          account_type: "conta-corrente",
          branch_country: "BR",
          nickname: "salary",
          bank: { code: "341", ispb: "60701190", name: "Itau" },
        },
        { currency: "BRL", owner_name: "Ana Souza", pix_info: { type: "PHONE", key: "+5511987654321" } },
        {
          currency: "MXN",
          account_number: "002010077777777771",
          account_type: "conta-corrente",
          bank: { code: "002", name: "Banamex" },
          owner_document_type: "curp",
          owner_document_number: "GOMA900101HDFRRN01",
        },
        {
          currency: "COP",
          account_number: "12345678901",
          branch_number: "123",
          owner_name: "Carlos",
          account_type: "Cuenta de Ahorros",
          owner_document_type: "cc",
          owner_document_number: "1020304050",
          bank: { code: "007", name: "Bancolombia" },
        },
      ]],
      ["POST", "/api/v1/bank_accounts", [{
        currency: "USD",
        account_number: "000123456789",
        owner_name: "Acme Inc",
        owner_document_number: "12-3456789",
        owner_document_type: "tax_id",
        routing_number: "021000021",
        iban: "DE89370400440532013000",
        bank: { swift: "CHASUS33", name: "JPMorgan Chase" },
      }]],
      ["PUT", `${subject}/${account.id}`, [{ nickname: "main", branch_country: "BRA", owner_name: "Ana S" }]],
    ];
    for (const [method, path, valid] of cases) {
      await fc.assert(
        fc.asyncProperty(spoiled(valid), (b) => send(company, method, path, { bank_account: b })),
        { numRuns: RUNS },
      );
    }
  });

  await t.step("property: webhook endpoint bodies answer below 500", async () => {
    // a company of its own, so the endpoints made here do not change what the other steps see
    const owner = await newCompany(ctx);
    const target = (await owner.post(ENDPOINTS, { url: "https://example.com/target" })).body.data;
    const valid: Json[] = [{
      url: "https://example.com/h",
      enabled_events: ["identified", "wire_created"],
      delivery_mode: "sequential",
      event_payload_type: "thin",
      inject_secret_in_body: true,
      wrap_in_notification: false,
      max_concurrency: 5,
      event_mapping: { identified: "paid" },
    }];
    await fc.assert(
      fc.asyncProperty(
        spoiled(valid),
        fc.boolean(),
        (b, update) => send(owner, update ? "PUT" : "POST", update ? `${ENDPOINTS}/${target.id}` : ENDPOINTS, b),
      ),
      { numRuns: RUNS },
    );
  });

  await t.step("property: sandbox bodies answer below 500", async () => {
    const money = { subject_id: person.id, value: "10.00", currency: "BRL" };
    const calls: [string, Json][] = [
      ["/api/sandbox/payins", { ...money, exchange: true }],
      ["/api/sandbox/payouts", { ...money, bank_account_id: account.id, fail_with: "AC03" }],
      ["/api/sandbox/card_payments", { ...money, outcome: "approved" }],
      ["/api/sandbox/pix_charges", { subject_id: person.id, value: 12.5, refuse_third_party: true }],
      ["/api/sandbox/bank_transactions", {
        value: "320.00",
        currency: "MXN",
        spei_concepto_de_pago: "Factura 17",
        payer: {
          document_number: "GOMA900101HDFRRN01",
          document_type: "curp",
          name: "Mario Gomez",
          bank_account: { bank: "BBVA MEXICO", account_number: "012180001234567891" },
        },
      }],
      ["/api/sandbox/subscriptions", { subject_id: person.id, cycles: 3 }],
      [`/api/sandbox/subjects/${person.id}/reprove`, { items: ["proof_of_address_rejected"], reason: "illegible" }],
      [`/api/sandbox/subjects/${person.id}/request_documents`, { required_documents: ["proof_of_address"] }],
    ];
    for (const [path, valid] of calls) {
      await fc.assert(fc.asyncProperty(spoiled([valid]), (b) => send(company, "POST", path, b)), { numRuns: RUNS / 2 });
    }
  });

  await ctx.close();
});
