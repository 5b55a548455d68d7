import assert from "node:assert/strict";
import { checkCompanyDocument, fiscalCountryError, isValidNit } from "../../domain/subjects/company_rules.ts";
import * as check from "../support/check_digits.ts";

Deno.test("company tax ids: check digits by the published algorithms", async (t) => {
  await t.step("CNPJ: valid with or without punctuation, stored bare; a wrong digit is refused", () => {
    for (const base of ["112223330001", "453718460001", "090876540001"]) {
      const full = check.cnpj(base);
      assert.deepEqual(checkCompanyDocument("cnpj", full), { value: full });
      const punctuated = `${full.slice(0, 2)}.${full.slice(2, 5)}.${full.slice(5, 8)}/${full.slice(8, 12)}-${
        full.slice(12)
      }`;
      assert.deepEqual(checkCompanyDocument("cnpj", punctuated), { value: full });
      assert.ok("error" in checkCompanyDocument("cnpj", check.wrongLastDigit(full)));
    }
  });

  await t.step("RFC: a company's 12 characters with its check digit; a person's 13 are refused here", () => {
    for (const first11 of ["ABC680524P7", "XYZ010101AA", "GHI991231KL"]) {
      const full = check.rfc(first11);
      assert.deepEqual(checkCompanyDocument("rfc", full), { value: full }, full);
      const wrong = full.slice(0, 11) + (full[11] === "1" ? "2" : "1");
      assert.ok("error" in checkCompanyDocument("rfc", wrong), wrong);
    }
    assert.ok("error" in checkCompanyDocument("rfc", "GODE561231GR8"));
    assert.ok("error" in checkCompanyDocument("rfc", "ABC681324P70"), "month 13");
  });

  await t.step("NIT: nine digits and DIAN's check digit", () => {
    for (const base of ["860007759", "900123456", "800197268"]) {
      const full = check.nit(base);
      assert.deepEqual(checkCompanyDocument("nit", full), { value: full });
      assert.deepEqual(checkCompanyDocument("nit", `${base}-${full[9]}`), { value: full });
      assert.ok("error" in checkCompanyDocument("nit", check.wrongLastDigit(full)));
      assert.ok("error" in checkCompanyDocument("nit", base), "a company's NIT carries its check digit");
      assert.equal(isValidNit(base), true, "a bank-account owner's NIT may leave it out");
    }
  });

  await t.step("RUT: mod 11 with K; dots and dash allowed", () => {
    for (const body of ["76086428", "96790240", "77261280"]) {
      const full = check.rut(body);
      assert.deepEqual(checkCompanyDocument("rut", full), { value: full });
      const dotted = `${body.slice(0, 2)}.${body.slice(2, 5)}.${body.slice(5)}-${full.slice(-1)}`;
      assert.deepEqual(checkCompanyDocument("rut", dotted.toLowerCase()), { value: full });
      const wrong = body + (full.endsWith("1") ? "2" : "1");
      assert.ok("error" in checkCompanyDocument("rut", wrong), wrong);
    }
  });

  await t.step("tax_id: any country's id of letters and digits", () => {
    assert.deepEqual(checkCompanyDocument("tax_id", "12-3456789"), { value: "123456789" });
    assert.ok("error" in checkCompanyDocument("tax_id", "a b"));
  });

  await t.step("each country's tax id goes with that fiscal country", () => {
    assert.equal(fiscalCountryError("cnpj", "BRA"), null);
    assert.equal(fiscalCountryError("rfc", "BRA"), "must be MEX for a rfc");
    assert.equal(fiscalCountryError("tax_id", "USA"), null);
  });
});
