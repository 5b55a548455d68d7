/**
 * The messages that teach, on their own (no database, no HTTP): each keeps the start decisions fix and adds the form
 * expected with an example, and a value of the wrong JSON type keeps `is invalid` and names the type wanted. Apart
 * from the story test (tests/http/errors_that_teach_test.ts) so every message is pinned here, and each field's wiring
 * there.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { EMAIL_FORMAT, invalidFormat } from "../../domain/basics/errors.ts";
import { amountProblem, DECIMAL_FORMAT, DECIMAL_PLACES, NEGATIVE, NOT_POSITIVE } from "../../domain/basics/money.ts";
import { COUNTRY_FORMS, oneOfCountries, unknownCountry } from "../../domain/basics/countries.ts";
import { FISCAL_COUNTRIES } from "../../domain/subjects/person_rules.ts";
import { WRONG_TYPE } from "../../routes/openapi/validation.ts";
import { BIRTH_DATE_FORMAT } from "../../routes/subjects/schemas.ts";

Deno.test("format messages keep decisions' start and add the form expected, with an example", async (t) => {
  await t.step("the shape of every one", () => {
    assert.equal(invalidFormat("2 digits", "55"), "has invalid format: expected 2 digits, e.g. 55");
    for (const message of [EMAIL_FORMAT, DECIMAL_FORMAT, DECIMAL_PLACES, NOT_POSITIVE, NEGATIVE, BIRTH_DATE_FORMAT]) {
      assert.match(message, /^has invalid format: expected .+, e\.g\. .+$/, message);
    }
  });

  await t.step("the ones the issue names, word for word", () => {
    assert.equal(BIRTH_DATE_FORMAT, "has invalid format: expected YYYY-MM-DD, e.g. 1990-01-02");
    assert.equal(DECIMAL_FORMAT, 'has invalid format: expected a decimal string with a dot, e.g. "1500.00"');
    assert.equal(EMAIL_FORMAT, "has invalid format: expected an email address, e.g. ana@example.com");
  });

  await t.step("a country list names the two-letter forms it reads too", () => {
    assert.equal(oneOfCountries(FISCAL_COUNTRIES), "must be one of: BRA, MEX, COL, CHL (or BR, MX, CO, CL)");
    assert.equal(oneOfCountries(["DEU"]), "must be one of: DEU (or DE)");
    assert.equal(COUNTRY_FORMS, "expected three letters or two, e.g. BRA or BR");
  });

  await t.step("an amount hears which part is wrong: its form, its decimals, or its sign", () => {
    const said = (value: string, least: "positive" | "zero") => amountProblem(value, least);
    assert.equal(
      said("1.500,00", "positive"),
      'has invalid format: expected a decimal string with a dot, e.g. "1500.00"',
    );
    assert.equal(said("abc", "zero"), DECIMAL_FORMAT);
    assert.equal(said("1.", "positive"), DECIMAL_FORMAT);
    assert.equal(said("1.505", "positive"), 'has invalid format: expected at most two decimal places, e.g. "1.50"');
    assert.equal(said("1.505", "zero"), DECIMAL_PLACES);
    assert.equal(said("-5", "positive"), 'has invalid format: expected an amount greater than 0, e.g. "1500.00"');
    assert.equal(said("-5", "zero"), 'has invalid format: expected an amount of 0 or more, e.g. "1500.00"');
    assert.equal(said("-1.505", "positive"), NOT_POSITIVE, "the sign before the decimals");
    assert.equal(said("0.00", "positive"), "must be greater than 0");
    for (const good of ["0", "0.00", "1500", "1500.5", "1500.05"]) assert.equal(said(good, "zero"), null, good);
    for (const good of ["0.01", "1500", "1500.50"]) assert.equal(said(good, "positive"), null, good);
  });

  await t.step("a country code of the right form that names no country hears that it is not a known one", () => {
    assert.equal(unknownCountry("Brasil"), COUNTRY_FORMS);
    assert.equal(unknownCountry("B1"), COUNTRY_FORMS);
    assert.equal(unknownCountry("xx"), "expected a known country, e.g. BRA or BR (no country has the code XX)");
    assert.equal(unknownCountry("XXX"), "expected a known country, e.g. BRA or BR (no country has the code XXX)");
  });
});

Deno.test("a value of the wrong JSON type hears it is invalid and the type wanted; a missing one is still blank", () => {
  const schema = z.object({
    document_number: z.string(),
    max_concurrency: z.number().int(),
    by_payer: z.boolean(),
    bank: z.object({ code: z.string() }),
    labels: z.array(z.string()),
    blank: z.string(),
  });
  const result = schema.safeParse({
    document_number: 52998224725,
    max_concurrency: "5",
    by_payer: "yes",
    bank: "341",
    labels: "rg",
    blank: null,
  });
  assert.ok(!result.success);
  const messages = Object.fromEntries(result.error.issues.map((i) => [i.path.join("."), i.message]));
  assert.deepEqual(messages, {
    document_number: "is invalid: must be a string",
    max_concurrency: "is invalid: must be a number",
    by_payer: "is invalid: must be true or false",
    bank: "is invalid: must be an object",
    labels: "is invalid: must be an array",
    blank: "can't be blank",
  });
  assert.equal(WRONG_TYPE.string, "is invalid: must be a string");
  // decisions fix `is invalid` for these; a client matching on the start must keep matching
  for (const [expected, message] of Object.entries(WRONG_TYPE)) {
    assert.match(message, /^is invalid: must be .+$/, expected);
  }
});
