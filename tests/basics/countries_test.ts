/** Country codes on their own: ISO 3166-1 alpha-2 and alpha-3, the way clients and BICs send them. */
import assert from "node:assert/strict";
import { countryAlpha3 } from "../../domain/basics/countries.ts";

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const allPairs = [...LETTERS].flatMap((a) => [...LETTERS].map((b) => a + b));

Deno.test("country codes: alpha-2 or alpha-3 in any case, alpha-3 out", async (t) => {
  await t.step("the countries the service works with and their neighbours", () => {
    const expected: [string, string][] = [
      ["BR", "BRA"],
      ["MX", "MEX"],
      ["CO", "COL"],
      ["CL", "CHL"],
      ["AR", "ARG"],
      ["PE", "PER"],
      ["US", "USA"],
      ["DE", "DEU"],
      ["GB", "GBR"],
      ["ES", "ESP"],
      ["XK", "XKX"], // Kosovo: user-assigned in ISO, used by SWIFT
    ];
    for (const [alpha2, alpha3] of expected) {
      assert.equal(countryAlpha3(alpha2), alpha3, alpha2);
      assert.equal(countryAlpha3(alpha2.toLowerCase()), alpha3, alpha2.toLowerCase());
      assert.equal(countryAlpha3(` ${alpha3.toLowerCase()} `), alpha3, alpha3);
    }
  });

  await t.step("codes that name no country give null", () => {
    for (const code of ["", "B", "ZZ", "UK", "EU", "ZZZ", "BRAZ", "B1", "12"]) {
      assert.equal(countryAlpha3(code), null, code);
    }
  });

  await t.step("all 249 ISO 3166-1 countries and Kosovo, each with its own alpha-3 that maps to itself", () => {
    const mapped = allPairs.map((alpha2) => [alpha2, countryAlpha3(alpha2)] as const).filter(([, a3]) => a3 !== null);
    assert.equal(mapped.length, 249 + 1);
    assert.equal(new Set(mapped.map(([, alpha3]) => alpha3)).size, mapped.length, "no alpha-3 shared");
    for (const [alpha2, alpha3] of mapped) {
      assert.match(alpha3!, /^[A-Z]{3}$/, alpha2);
      assert.equal(countryAlpha3(alpha3!), alpha3, `${alpha2} → ${alpha3}`);
    }
  });
});
