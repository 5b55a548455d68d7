/**
 * The person rules on their own (no database): what a registration is checked for across its fields. The document
 * numbers themselves are tests/basics/tax_ids_test.ts's.
 */
import assert from "node:assert/strict";
import { ApiError, ErrorBag } from "../../domain/basics/errors.ts";
import {
  BRAZIL_STATES,
  checkPerson,
  incomeCurrency,
  type PersonFacts,
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
const curp = check.curpOf;

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
    assert.deepEqual(errorsOf(bad), { document_number: ["has invalid check digits"] });
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
