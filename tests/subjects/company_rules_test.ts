/** The company rules on their own; the tax ids themselves are tests/basics/tax_ids_test.ts's. */
import assert from "node:assert/strict";
import { fiscalCountryError } from "../../domain/subjects/company_rules.ts";

Deno.test("company customers: each country's tax id goes with that fiscal country", () => {
  assert.equal(fiscalCountryError("cnpj", "BRA"), null);
  assert.equal(fiscalCountryError("rfc", "BRA"), "must be MEX for a rfc");
  assert.equal(fiscalCountryError("tax_id", "USA"), null);
});
