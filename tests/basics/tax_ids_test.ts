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
  rfcPfProblem,
} from "../../domain/basics/tax_ids.ts";
import * as check from "../support/check_digits.ts";

// CURP parts: initials, birth date YYMMDD, sex, state, inner consonants, the century character.
const curp = check.curpOf;

Deno.test("CPF: 11 digits with both mod-11 check digits, not all the same digit", async (t) => {
  const bases = ["529982247", "123456789", "000000001", "987654321", "111444777", "390533447"];

  await t.step("a CPF whose digits are computed from its first nine is accepted", () => {
    for (const base of bases) assert.deepEqual(checkTaxId("cpf", check.cpf(base)), { value: check.cpf(base) });
  });

  await t.step("either check digit wrong is refused", () => {
    for (const base of bases) {
      const good = check.cpf(base);
      assert.deepEqual(checkTaxId("cpf", check.wrongLastDigit(good)), { error: "has invalid check digits" }, good);
      const firstWrong = good.slice(0, 9) + String((Number(good[9]) + 1) % 10) + good[10];
      assert.deepEqual(checkTaxId("cpf", firstWrong), { error: "has invalid check digits" }, good);
    }
  });

  await t.step("eleven equal digits pass the arithmetic but are no CPF", () => {
    for (let d = 0; d <= 9; d++) {
      const same = String(d).repeat(11);
      assert.equal(check.cpf(same.slice(0, 9)), same, "the digits do check");
      assert.deepEqual(checkTaxId("cpf", same), { error: "cannot be one digit repeated" });
    }
  });

  await t.step("punctuated or bare, the same CPF, stored bare as a CNPJ is", () => {
    const good = check.cpf("529982247");
    for (const raw of [`${good.slice(0, 3)}.${good.slice(3, 6)}.${good.slice(6, 9)}-${good.slice(9)}`, ` ${good}`]) {
      assert.deepEqual(checkTaxId("cpf", raw), { value: good }, raw);
    }
  });

  await t.step("a refusal says what is wrong: a character, the length, then the check digits", () => {
    const good = check.cpf("529982247");
    assert.deepEqual(checkTaxId("cpf", `${good.slice(0, 10)}A`), { error: "must contain only digits" });
    assert.deepEqual(checkTaxId("cpf", `${good.slice(0, 3)}_${good.slice(3)}`), { error: "must contain only digits" });
    assert.deepEqual(checkTaxId("cpf", good.slice(0, 10)), { error: "must have 11 digits" });
    assert.deepEqual(checkTaxId("cpf", `${good}0`), { error: "must have 11 digits" });
    assert.deepEqual(checkTaxId("cpf", "529.982.247-2"), { error: "must have 11 digits" });
    assert.deepEqual(checkTaxId("cpf", "529.982.247-26"), { error: "has invalid check digits" });
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

Deno.test("every refusal says what is wrong, in the order a person fixes it", async (t) => {
  const refusal = (type: Parameters<typeof checkTaxId>[0], raw: string) => {
    const checked = checkTaxId(type, raw);
    assert.ok("error" in checked, `${type} ${raw} accepted`);
    return checked.error;
  };

  await t.step("CNPJ: characters, 14 digits, one digit repeated, check digits", () => {
    const good = check.cnpj("112223330001");
    assert.equal(refusal("cnpj", `${good.slice(0, 13)}X`), "must contain only digits");
    assert.equal(refusal("cnpj", "11.222.333/0001"), "must have 14 digits");
    assert.equal(refusal("cnpj", "0".repeat(14)), "cannot be one digit repeated");
    assert.equal(refusal("cnpj", check.wrongLastDigit(good)), "has invalid check digits");
  });

  await t.step("CURP: characters, 18 of them, each part of the format, the check digit", () => {
    const good = curp();
    const cases: [string, string][] = [
      [`${good.slice(0, 17)}-`, "must contain only letters and digits"],
      [good.slice(0, 17), "must have 18 characters"],
      [`G1MA${good.slice(4)}`, "has invalid format, expected four letters first, the second a vowel or X"],
      [curp({ date: "901301" }), "has invalid format, expected a birth date (YYMMDD) in characters 5 to 10"],
      [curp({ sex: "Q" }), "has invalid format, expected H, M or X as character 11"],
      [curp({ state: "ZZ" }), "has invalid format, expected a state code in characters 12 and 13"],
      [curp({ tail: "AEN0" }), "has invalid format, expected consonants in characters 14 to 16"],
      [`${good.slice(0, 17)}A`, "has invalid format, expected a digit last"],
      [check.wrongLastDigit(good), "has an invalid check digit"],
    ];
    for (const [raw, message] of cases) assert.equal(refusal("curp", raw), message, raw);
  });

  await t.step("a company's RFC: characters, 12 of them, letters, date, homoclave, check digit", () => {
    const good = check.rfc("ABC680524P7");
    const cases: [string, string][] = [
      [`${good.slice(0, 11)}*`, "must contain only letters and digits"],
      ["GODE561231GR8", "must have 12 characters (a company's RFC)"],
      [`A1C${good.slice(3)}`, "has invalid format, expected three letters first"],
      ["ABC681324P70", "has invalid format, expected a date (YYMMDD) after the letters"],
      ["ABC680524P7Z", "has invalid format, expected a homoclave of two letters or digits, then a digit or A"],
      [good.slice(0, 11) + (good[11] === "1" ? "2" : "1"), "has an invalid check digit"],
    ];
    for (const [raw, message] of cases) assert.equal(refusal("rfc", raw), message, raw);
    assert.deepEqual(checkTaxId("rfc", `${good.slice(0, 3)}-${good.slice(3, 9)}-${good.slice(9)}`), { value: good });
  });

  await t.step("a person's RFC (rfc_pf) by its shape: characters, 13 of them, then its parts", () => {
    assert.equal(rfcPfProblem("GOMA900101AB1"), null);
    assert.equal(rfcPfProblem("GOMA-900101-AB1"), "must contain only letters and digits");
    assert.equal(rfcPfProblem("GOMA9001"), "must have 13 characters");
    assert.equal(rfcPfProblem("GOM1900101AB1"), "has invalid format, expected four letters first");
    assert.equal(rfcPfProblem("GOMA901301AB1"), "has invalid format, expected a date (YYMMDD) after the letters");
  });

  await t.step("NIT, cc, ce, passport, RUT: characters and length each say so", () => {
    const nit = check.nit("900123456");
    const cases: [Parameters<typeof checkTaxId>[0], string, string][] = [
      ["nit", "90012345X", "must contain only digits"],
      ["nit", nit.slice(0, 9), "must have 10 digits (nine and the check digit)"],
      ["nit", check.wrongLastDigit(nit), "has an invalid check digit"],
      ["cc", "123456789", "must have 10 digits"],
      ["cc", "12345678a0", "must contain only digits"],
      ["ce", "12345", "must have 6 to 9 digits"],
      ["passport", "AB-1234", "must contain only letters and digits"],
      ["passport", "AB12", "must have 5 to 20 characters"],
      ["rut", "1234567", "must have 8 or 9 characters (the check character included)"],
      ["rut", "1234567KK", "has invalid format, expected digits, then a digit or K last"],
    ];
    for (const [type, raw, message] of cases) assert.equal(refusal(type, raw), message, `${type} ${raw}`);
  });
});
