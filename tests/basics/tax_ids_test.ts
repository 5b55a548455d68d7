/** The tax ids on their own (no database): formats and check digits, computed from the published algorithms. */
import assert from "node:assert/strict";
import {
  checkTaxId,
  curpCheckDigit,
  isRfcShape,
  isValidCurp,
  isValidNit,
  nitCheckDigit,
  RFC_PF_RE,
} from "../../domain/basics/tax_ids.ts";
import * as check from "../support/check_digits.ts";

// CURP parts: initials, birth date YYMMDD, sex, state, inner consonants, the century character.
const curp = (parts: { start?: string; date?: string; sex?: string; state?: string; tail?: string } = {}) =>
  check.curp(
    `${parts.start ?? "GOMA"}${parts.date ?? "900101"}${parts.sex ?? "H"}${parts.state ?? "DF"}${parts.tail ?? "RRN0"}`,
  );

Deno.test("CPF: 11 digits with both mod-11 check digits, not all the same digit", async (t) => {
  const bases = ["529982247", "123456789", "000000001", "987654321", "111444777", "390533447"];

  await t.step("a CPF whose digits are computed from its first nine is accepted", () => {
    for (const base of bases) assert.deepEqual(checkTaxId("cpf", check.cpf(base)), { value: check.cpf(base) });
  });

  await t.step("either check digit wrong is refused", () => {
    for (const base of bases) {
      const good = check.cpf(base);
      assert.deepEqual(checkTaxId("cpf", check.wrongLastDigit(good)), { error: "is invalid" }, good);
      const firstWrong = good.slice(0, 9) + String((Number(good[9]) + 1) % 10) + good[10];
      assert.deepEqual(checkTaxId("cpf", firstWrong), { error: "is invalid" }, good);
    }
  });

  await t.step("eleven equal digits pass the arithmetic but are no CPF", () => {
    for (let d = 0; d <= 9; d++) {
      const same = String(d).repeat(11);
      assert.equal(check.cpf(same.slice(0, 9)), same, "the digits do check");
      assert.deepEqual(checkTaxId("cpf", same), { error: "is invalid" });
    }
  });

  await t.step("punctuation, spaces and other lengths are refused (digits only)", () => {
    const good = check.cpf("529982247");
    for (const raw of [`${good.slice(0, 3)}.${good.slice(3, 6)}.${good.slice(6, 9)}-${good.slice(9)}`, ` ${good}`]) {
      assert.deepEqual(checkTaxId("cpf", raw), { error: "is invalid" }, raw);
    }
    assert.deepEqual(checkTaxId("cpf", good.slice(0, 10)), { error: "is invalid" });
    assert.deepEqual(checkTaxId("cpf", `${good}0`), { error: "is invalid" });
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
      assert.deepEqual(checkTaxId("curp", c.toLowerCase()), { value: c });
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
  const cases: [Parameters<typeof checkTaxId>[0], string, boolean][] = [
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
    assert.equal("value" in checkTaxId(type, raw), ok, `${type} ${raw}`);
  }
  assert.deepEqual(checkTaxId("passport", "ab12345"), { value: "AB12345" }, "upper-cased");
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

Deno.test("company tax ids: check digits by the published algorithms", async (t) => {
  await t.step("CNPJ: valid with or without punctuation, stored bare; a wrong digit is refused", () => {
    for (const base of ["112223330001", "453718460001", "090876540001"]) {
      const full = check.cnpj(base);
      assert.deepEqual(checkTaxId("cnpj", full), { value: full });
      const punctuated = `${full.slice(0, 2)}.${full.slice(2, 5)}.${full.slice(5, 8)}/${full.slice(8, 12)}-${
        full.slice(12)
      }`;
      assert.deepEqual(checkTaxId("cnpj", punctuated), { value: full });
      assert.ok("error" in checkTaxId("cnpj", check.wrongLastDigit(full)));
    }
  });

  await t.step("RFC: a company's 12 characters with its check digit; a person's 13 are refused here", () => {
    for (const first11 of ["ABC680524P7", "XYZ010101AA", "GHI991231KL"]) {
      const full = check.rfc(first11);
      assert.deepEqual(checkTaxId("rfc", full), { value: full }, full);
      const wrong = full.slice(0, 11) + (full[11] === "1" ? "2" : "1");
      assert.ok("error" in checkTaxId("rfc", wrong), wrong);
    }
    assert.ok("error" in checkTaxId("rfc", "GODE561231GR8"));
    assert.ok("error" in checkTaxId("rfc", "ABC681324P70"), "month 13");
  });

  await t.step("NIT: nine digits and DIAN's check digit", () => {
    for (const base of ["860007759", "900123456", "800197268"]) {
      const full = check.nit(base);
      assert.deepEqual(checkTaxId("nit", full), { value: full });
      assert.deepEqual(checkTaxId("nit", `${base}-${full[9]}`), { value: full });
      assert.ok("error" in checkTaxId("nit", check.wrongLastDigit(full)));
      assert.ok("error" in checkTaxId("nit", base), "a company's NIT carries its check digit");
      assert.equal(isValidNit(base), true, "a bank-account owner's NIT may leave it out");
    }
  });

  await t.step("RUT: mod 11 with K; dots and dash allowed", () => {
    for (const body of ["76086428", "96790240", "77261280"]) {
      const full = check.rut(body);
      assert.deepEqual(checkTaxId("rut", full), { value: full });
      const dotted = `${body.slice(0, 2)}.${body.slice(2, 5)}.${body.slice(5)}-${full.slice(-1)}`;
      assert.deepEqual(checkTaxId("rut", dotted.toLowerCase()), { value: full });
      const wrong = body + (full.endsWith("1") ? "2" : "1");
      assert.ok("error" in checkTaxId("rut", wrong), wrong);
    }
  });

  await t.step("tax_id: any country's id of letters and digits", () => {
    assert.deepEqual(checkTaxId("tax_id", "12-3456789"), { value: "123456789" });
    assert.ok("error" in checkTaxId("tax_id", "a b"));
  });
});

Deno.test("NIT of a bank-account owner: DIAN's check digit, verified when the 10th digit is given", () => {
  for (const base of ["900123456", "800197268", "860034313", "890903938", "830000001"]) {
    const full = check.nit(base);
    assert.equal(nitCheckDigit(base), Number(full[9]), base);
    assert.equal(isValidNit(full), true, full);
    assert.equal(isValidNit(check.wrongLastDigit(full)), false, full);
    assert.equal(isValidNit(base), true, "nine digits alone");
  }
});

Deno.test("RFC by its shape alone, as an account owner's: a company's 12 characters or a person's 13", () => {
  for (const rfc of ["GOMA900101AB1", "ABC900101AB1", "&OMA900229ZZA"]) assert.equal(isRfcShape(rfc), true, rfc);
  for (const rfc of ["GOMA901301AB1", "AB900101AB1", "GOMAB900101AB1", "ABC900101ABZ"]) {
    assert.equal(isRfcShape(rfc), false, rfc);
  }
});
