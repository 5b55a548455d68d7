/** The person rules on their own (no database): what a registration with each kind of document is checked for. */
import assert from "node:assert/strict";
import { ApiError, ErrorBag } from "../../domain/basics/errors.ts";
import {
  BRAZIL_STATES,
  checkDocumentNumber,
  checkPerson,
  curpCheckDigit,
  incomeCurrency,
  isValidCurp,
  type PersonFacts,
  RFC_PF_RE,
  toAlpha3,
} from "../../domain/subjects/person_rules.ts";
import * as check from "../support/check_digits.ts";

/** The field errors `checkPerson` finds, or {} when the person passes. */
function errorsOf(person: PersonFacts, failed?: Set<string>) {
  const bag = new ErrorBag();
  checkPerson(person, bag, failed);
  return bag.errors;
}

// CURP parts: initials, birth date YYMMDD, sex, state, inner consonants, the century character.
const curp = (parts: { start?: string; date?: string; sex?: string; state?: string; tail?: string } = {}) =>
  check.curp(
    `${parts.start ?? "GOMA"}${parts.date ?? "900101"}${parts.sex ?? "H"}${parts.state ?? "DF"}${parts.tail ?? "RRN0"}`,
  );

Deno.test("CPF: 11 digits with both mod-11 check digits, not all the same digit", async (t) => {
  const bases = ["529982247", "123456789", "000000001", "987654321", "111444777", "390533447"];

  await t.step("a CPF whose digits are computed from its first nine is accepted", () => {
    for (const base of bases) assert.deepEqual(checkDocumentNumber("cpf", check.cpf(base)), { value: check.cpf(base) });
  });

  await t.step("either check digit wrong is refused", () => {
    for (const base of bases) {
      const good = check.cpf(base);
      assert.deepEqual(checkDocumentNumber("cpf", check.wrongLastDigit(good)), { error: "is invalid" }, good);
      const firstWrong = good.slice(0, 9) + String((Number(good[9]) + 1) % 10) + good[10];
      assert.deepEqual(checkDocumentNumber("cpf", firstWrong), { error: "is invalid" }, good);
    }
  });

  await t.step("eleven equal digits pass the arithmetic but are no CPF", () => {
    for (let d = 0; d <= 9; d++) {
      const same = String(d).repeat(11);
      assert.equal(check.cpf(same.slice(0, 9)), same, "the digits do check");
      assert.deepEqual(checkDocumentNumber("cpf", same), { error: "is invalid" });
    }
  });

  await t.step("punctuation, spaces and other lengths are refused (digits only)", () => {
    const good = check.cpf("529982247");
    for (const raw of [`${good.slice(0, 3)}.${good.slice(3, 6)}.${good.slice(6, 9)}-${good.slice(9)}`, ` ${good}`]) {
      assert.deepEqual(checkDocumentNumber("cpf", raw), { error: "is invalid" }, raw);
    }
    assert.deepEqual(checkDocumentNumber("cpf", good.slice(0, 10)), { error: "is invalid" });
    assert.deepEqual(checkDocumentNumber("cpf", `${good}0`), { error: "is invalid" });
  });
});

Deno.test("CURP: the official format with RENAPO's check digit", async (t) => {
  await t.step("the check digit is RENAPO's weighted sum", () => {
    for (const first17 of ["GOMA900101HDFRRN0", "HEGG560427MVZRRL0", "ÑUÑE010203XNERRRA", "BADD110313HCMLNS0"]) {
      assert.equal(curpCheckDigit(first17), Number(check.curp(first17)[17]), first17);
    }
  });

  await t.step("a well-formed CURP with its computed digit is accepted, upper-cased", () => {
    for (
      const c of [curp(), curp({ sex: "M", state: "VZ" }), curp({ sex: "X", state: "NE" }), curp({ tail: "RRNA" })]
    ) {
      assert.equal(isValidCurp(c), true, c);
      assert.deepEqual(checkDocumentNumber("curp", c.toLowerCase()), { value: c });
    }
  });

  await t.step("every other final digit is refused", () => {
    const good = curp();
    for (let d = 0; d <= 9; d++) {
      if (String(d) === good[17]) continue;
      assert.equal(isValidCurp(good.slice(0, 17) + d), false, `${good.slice(0, 17)}${d}`);
    }
  });

  await t.step("a bad date, sex, state, second letter or length is refused even with a matching digit", () => {
    for (
      const c of [
        curp({ date: "901301" }), // month 13
        curp({ date: "900132" }), // day 32
        curp({ sex: "Q" }),
        curp({ state: "ZZ" }),
        curp({ start: "GBMA" }), // the second letter is the first inner vowel (or X)
        curp({ tail: "AEN0" }), // inner consonants cannot be vowels
        check.curp("GOMA900101HDFRRN").slice(0, 17),
      ]
    ) assert.equal(isValidCurp(c), false, c);
  });
});

Deno.test("other documents: cc 10 digits, ce 6 to 9 digits, passport 5 to 20 letters or digits", () => {
  const cases: [Parameters<typeof checkDocumentNumber>[0], string, boolean][] = [
    ["cc", "1234567890", true],
    ["cc", "123456789", false],
    ["cc", "12345678901", false],
    ["cc", "12345678a0", false],
    ["ce", "123456", true],
    ["ce", "123456789", true],
    ["ce", "12345", false],
    ["ce", "1234567890", false],
    ["passport", "AB123", true],
    ["passport", "a".repeat(20), true],
    ["passport", "AB12", false],
    ["passport", "A".repeat(21), false],
    ["passport", "AB-1234", false],
  ];
  for (const [type, raw, ok] of cases) {
    assert.equal("value" in checkDocumentNumber(type, raw), ok, `${type} ${raw}`);
  }
  assert.deepEqual(checkDocumentNumber("passport", "ab12345"), { value: "AB12345" }, "upper-cased");
});

Deno.test("RFC of a person: 4 letters, YYMMDD (month 01-12, day 01-31), a 3-character homoclave", () => {
  for (const rfc of ["GOMA900101AB1", "ÑUÑE010203XY9", "&OMA900229ZZA", "GOMA901231A1A"]) {
    assert.match(rfc, RFC_PF_RE);
  }
  for (
    const rfc of [
      "GOM900101AB1", // 3 letters: a company's RFC
      "GOMA901301AB1", // month 13
      "GOMA900100AB1", // day 0
      "GOMA900101AB", // 12 characters
      "GOMA900101AB12", // 14 characters
      "GOMA900101ABZ", // the last character is a digit or A
      "goma900101ab1",
    ]
  ) assert.doesNotMatch(rfc, RFC_PF_RE, rfc);
});

Deno.test("cross-field person rules", async (t) => {
  const base: PersonFacts = { document_type: "cpf", document_number: check.cpf("529982247"), fiscal_country: "BRA" };

  await t.step("rfc_pf must start with the CURP's first 10 characters", () => {
    const c = curp();
    const person = { ...base, document_type: "curp" as const, document_number: c.toLowerCase(), fiscal_country: "MEX" };
    assert.deepEqual(errorsOf({ ...person, rfc_pf: `${c.slice(0, 10)}AB1` }), {});
    assert.deepEqual(errorsOf({ ...person, rfc_pf: `${c.slice(0, 9)}2AB1` }), { rfc_pf: ["does not match curp"] });
    // another document type has no CURP to match
    assert.deepEqual(errorsOf({ ...base, rfc_pf: "XXXX000101AB1" }), {});
  });

  await t.step("income is limited in the currency the document implies", () => {
    // the provisional maxima of the interface, per currency
    const limits: [PersonFacts, string][] = [
      [base, "10000000.00"],
      [{ ...base, document_type: "curp", document_number: curp(), fiscal_country: "MEX" }, "100000000.00"],
      [{ ...base, document_type: "cc", document_number: "1234567890", fiscal_country: "COL" }, "50000000000.00"],
      [{ ...base, document_type: "ce", document_number: "123456", fiscal_country: "COL" }, "50000000000.00"],
      [{ ...base, document_type: "passport", document_number: "AB12345", fiscal_country: "CHL" }, "10000000000.00"],
      [{ ...base, document_type: "passport", document_number: "AB12345", fiscal_country: "BRA" }, "10000000.00"],
    ];
    for (const [person, max] of limits) {
      assert.deepEqual(errorsOf({ ...person, net_monthly_average_income: max }), {}, `${person.document_type} ${max}`);
      const over = `${max.slice(0, -1)}1`;
      assert.deepEqual(errorsOf({ ...person, net_monthly_average_income: over }), {
        net_monthly_average_income: [`must be less than or equal to ${max}`],
      });
    }
  });

  await t.step("without a currency to go by, the absolute ceiling applies", () => {
    const passport = { ...base, document_type: "passport" as const, document_number: "AB12345" };
    const failedCountry = new Set(["fiscal_country"]);
    const ceiling = "999999999999999999.99";
    assert.deepEqual(
      errorsOf({ ...passport, fiscal_country: "XXX", net_monthly_average_income: ceiling }, failedCountry),
      {},
    );
    assert.deepEqual(
      errorsOf(
        { ...passport, fiscal_country: "XXX", net_monthly_average_income: "1000000000000000000.00" },
        failedCountry,
      ),
      { net_monthly_average_income: [`must be less than or equal to ${ceiling}`] },
    );
  });

  await t.step("the income currency follows the document, and for passports the fiscal country", () => {
    assert.deepEqual(
      [
        incomeCurrency("cpf", "MEX"),
        incomeCurrency("curp", "BRA"),
        incomeCurrency("cc", "BRA"),
        incomeCurrency("ce", "MEX"),
        incomeCurrency("passport", "MEX"),
        incomeCurrency("passport", "COL"),
        incomeCurrency("passport", "USA"),
      ],
      ["BRL", "MXN", "COP", "COP", "MXN", "COP", undefined],
    );
  });

  await t.step("in Brazil address_state is one of the 27 federative units", () => {
    assert.equal(new Set(BRAZIL_STATES).size, 27);
    const message = `must be one of: ${BRAZIL_STATES.join(", ")}`;
    for (const uf of ["SP", "RJ", "DF", "TO"]) assert.deepEqual(errorsOf({ ...base, address_state: uf }), {}, uf);
    for (const uf of ["sp", "XX", "São Paulo"]) {
      assert.deepEqual(errorsOf({ ...base, address_state: uf }), { address_state: [message] }, uf);
    }
    // the address country wins over the fiscal one, in either alpha form
    assert.deepEqual(errorsOf({ ...base, address_state: "Jalisco", address_country: "MEX" }), {});
    assert.deepEqual(errorsOf({ ...base, fiscal_country: "MEX", address_state: "XX", address_country: "br" }), {
      address_state: [message],
    });
  });

  await t.step("a field that already failed is not reported again through another rule", () => {
    const bad = { ...base, document_number: check.wrongLastDigit(base.document_number) };
    assert.deepEqual(errorsOf(bad), { document_number: ["is invalid"] });
    assert.deepEqual(errorsOf(bad, new Set(["document_number"])), {});
  });

  await t.step("every broken rule is reported at once, as one 422", () => {
    const bag = new ErrorBag();
    checkPerson(
      { ...base, document_number: "00000000000", net_monthly_average_income: "10000000.01", address_state: "XX" },
      bag,
    );
    assert.throws(() => bag.throwIfAny(), (err) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 422);
      assert.deepEqual(Object.keys(err.errors).sort(), [
        "address_state",
        "document_number",
        "net_monthly_average_income",
      ]);
      return true;
    });
  });
});

Deno.test("fiscal countries: alpha-2 or alpha-3 in, alpha-3 out", () => {
  assert.deepEqual(["BR", "mx", " co ", "CL", "BRA", "chl"].map(toAlpha3), ["BRA", "MEX", "COL", "CHL", "BRA", "CHL"]);
  // unknown codes pass through, upper-cased, for the schema's list to refuse
  assert.equal(toAlpha3("zz"), "ZZ");
});
