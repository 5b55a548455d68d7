/** The bank account rules on their own (no database): what each country requires and how it is stored. */
import assert from "node:assert/strict";
import {
  type BankAccountInput,
  type BankAccountScope,
  bareAccountNumber,
  isValidAba,
  isValidClabe,
  type NormalizedBankAccount,
  validateBankAccountInput,
} from "../../domain/bank_accounts/rules.ts";
import { ApiError, type FieldErrors } from "../../domain/basics/errors.ts";
import * as check from "../support/check_digits.ts";

type Outcome = { ok: NormalizedBankAccount } | { status: number; errors: FieldErrors };

function validate(input: BankAccountInput, scope: BankAccountScope = "subject"): Outcome {
  try {
    return { ok: validateBankAccountInput(input, { scope }) };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.status, errors: err.errors as FieldErrors };
  }
}

function accepted(input: BankAccountInput, scope?: BankAccountScope): NormalizedBankAccount {
  const outcome = validate(input, scope);
  assert.ok("ok" in outcome, `refused: ${JSON.stringify(outcome)}`);
  return outcome.ok;
}

function refused(input: BankAccountInput, scope?: BankAccountScope): { status: number; errors: FieldErrors } {
  const outcome = validate(input, scope);
  assert.ok(!("ok" in outcome), `accepted: ${JSON.stringify(input)}`);
  return outcome;
}

const CPF = check.cpf("529982247");
const CNPJ = check.cnpj("112223330001");

const brazil = (o: BankAccountInput = {}): BankAccountInput => ({
  currency: "BRL",
  owner_name: "Ana Souza",
  account_number: "12345-6",
  branch_number: "0001",
  bank: { code: "001", ispb: "00000000", name: "Banco do Brasil" },
  ...o,
});

const CLABE = check.clabe("00218001234567890");
const mexico = (o: BankAccountInput = {}): BankAccountInput => ({
  currency: "MXN",
  account_number: CLABE,
  account_type: "conta-corrente",
  bank: { code: "002", name: "Banamex" },
  ...o,
});

const colombia = (o: BankAccountInput = {}): BankAccountInput => ({
  currency: "COP",
  account_number: "123-456789-01",
  branch_number: "0012",
  owner_name: "Carlos Pérez",
  bank: { code: "1007", name: "Bancolombia" },
  ...o,
});

const international = (o: BankAccountInput = {}): BankAccountInput => ({
  currency: "USD",
  account_number: "000123456789",
  owner_name: "Acme Ltda",
  owner_document_number: "12-3456789",
  bank: { name: "Deutsche Bank", swift: "DEUTDEFF" },
  ...o,
});

Deno.test("the currency decides whose rules apply and who may register the account", () => {
  assert.equal(accepted(brazil()).country, "BRA");
  assert.equal(accepted(mexico({ currency: "mxn" })).currency, "MXN");
  assert.equal(accepted(colombia()).country, "COL");
  assert.equal(accepted(international(), "international").country, "INT");
  assert.equal(accepted(international({ currency: "EUR" }), "any").country, "INT");

  assert.deepEqual(refused(international(), "subject"), {
    status: 422,
    errors: { currency: ["must be one of: BRL, MXN, COP"] },
  });
  assert.deepEqual(refused(brazil(), "international").errors.currency, ["must be one of: USD, EUR"]);
  assert.deepEqual(refused({ ...brazil(), currency: "ARS" }, "any").errors.currency, [
    "must be one of: BRL, MXN, COP, USD, EUR",
  ]);
  assert.deepEqual(refused({ ...brazil(), currency: "" }), { status: 400, errors: { currency: ["can't be blank"] } });
});

Deno.test("Brazil: full bank details or PIX alone", async (t) => {
  await t.step("full details are stored with the owner's document typed from its length", () => {
    const cpfOwner = accepted(
      brazil({ owner_document_number: `${CPF.slice(0, 3)}.${CPF.slice(3, 6)}.${CPF.slice(6)}` }),
    );
    assert.deepEqual([cpfOwner.owner_document_number, cpfOwner.owner_document_type], [CPF, "cpf"]);
    const cnpjOwner = accepted(brazil({ owner_document_number: CNPJ }));
    assert.deepEqual([cnpjOwner.owner_document_number, cnpjOwner.owner_document_type], [CNPJ, "cnpj"]);
    assert.deepEqual(accepted(brazil()).bank, {
      country: "BRA",
      code: "001",
      ispb: "00000000",
      swift: null,
      name: "Banco do Brasil",
    });
  });

  await t.step("an owner document with a wrong check digit, or of a type Brazil does not use, is refused", () => {
    assert.deepEqual(refused(brazil({ owner_document_number: check.wrongLastDigit(CPF) })).errors, {
      owner_document_number: ["has invalid check digits"],
    });
    assert.deepEqual(refused(brazil({ owner_document_number: check.wrongLastDigit(CNPJ) })).errors, {
      owner_document_number: ["has invalid check digits"],
    });
    assert.deepEqual(refused(brazil({ owner_document_type: "cpf", owner_document_number: "529.982.247" })).errors, {
      owner_document_number: ["must have 11 digits"],
    });
    assert.deepEqual(
      refused(brazil({ owner_document_type: "cnpj", owner_document_number: "11.222.333/0001-8O" })).errors,
      {
        owner_document_number: ["must contain only digits"],
      },
    );
    assert.deepEqual(refused(brazil({ owner_document_type: "curp", owner_document_number: CPF })).errors, {
      owner_document_type: ["must be one of: cpf, cnpj"],
    });
  });

  await t.step("bank code three digits, ISPB eight digits", () => {
    const bad = refused(brazil({ bank: { code: "0001", ispb: "1234567", name: "X" } }));
    assert.deepEqual(bad, {
      status: 422,
      errors: {
        bank: {
          code: ["has invalid format, expected three digits"],
          ispb: ["has invalid format, expected eight digits"],
        },
      },
    });
  });

  await t.step("any part of the details given makes all of them required (400)", () => {
    const partial = refused({ currency: "BRL", owner_name: "Ana", account_number: "123" });
    assert.equal(partial.status, 400);
    assert.deepEqual(partial.errors, { branch_number: ["can't be blank"], bank: ["can't be blank"] });
    const noIspb = refused(brazil({ bank: { code: "001", name: "Banco do Brasil" } }));
    assert.deepEqual(noIspb, { status: 400, errors: { bank: { ispb: ["can't be blank"] } } });
  });

  await t.step("neither details nor PIX is a 400 naming pix_info", () => {
    const none = refused({ currency: "BRL", owner_name: "Ana" });
    assert.equal(none.status, 400);
    assert.deepEqual(none.errors.pix_info, ["can't be blank"]);
  });

  await t.step("PIX keys: CPF and CNPJ with check digits, email, +phone, EVP uuid; stored normalised", () => {
    const pix = (type: string, key: string) => ({ currency: "BRL", owner_name: "Ana", pix_info: { type, key } });
    const stored = (type: string, key: string) => {
      const a = accepted(pix(type, key));
      return [a.pix_type, a.pix_key];
    };
    assert.deepEqual(stored("cpf", `${CPF.slice(0, 9)}-${CPF.slice(9)}`), ["CPF", CPF]);
    assert.deepEqual(stored("CNPJ", CNPJ), ["CNPJ", CNPJ]);
    assert.deepEqual(stored("EMAIL", "ana@example.com"), ["EMAIL", "ana@example.com"]);
    assert.deepEqual(stored("PHONE", "+5511987654321"), ["PHONE", "+5511987654321"]);
    const evp = crypto.randomUUID();
    assert.deepEqual(stored("EVP", evp.toUpperCase()), ["EVP", evp]);

    for (
      const [type, key, message] of [
        ["CPF", check.wrongLastDigit(CPF), "has invalid check digits"],
        ["CPF", `${CPF.slice(0, 3)}.${CPF.slice(3, 6)}.${CPF.slice(6, 9)}`, "must have 11 digits"],
        ["CNPJ", check.wrongLastDigit(CNPJ), "has invalid check digits"],
        ["CNPJ", "0".repeat(14), "cannot be one digit repeated"],
        ["EMAIL", "not-an-address", "has invalid format: expected an email address, e.g. ana@example.com"],
        ["EVP", "1234", "has invalid format, expected a random key (a UUID)"],
      ]
    ) assert.deepEqual(refused(pix(type, key)), { status: 422, errors: { pix_info: { key: [message] } } }, key);
    assert.deepEqual(refused(pix("PHONE", "5511987654321")).errors, {
      pix_info: { key: ["has invalid format, expected + followed by 12 or 13 digits (country code included)"] },
    });
    assert.deepEqual(refused(pix("BOLETO", "x")).errors, {
      pix_info: { type: ["must be one of: CPF, CNPJ, EMAIL, PHONE, EVP"] },
    });
    assert.deepEqual(refused({ currency: "BRL", owner_name: "Ana", pix_info: { type: "CPF" } }), {
      status: 400,
      errors: { pix_info: { key: ["can't be blank"] } },
    });
  });

  await t.step("account types: only conta-corrente and poupanca, any case", () => {
    assert.equal(accepted(brazil({ account_type: "Poupanca" })).account_type, "poupanca");
    assert.deepEqual(refused(brazil({ account_type: "salary" })).errors, {
      account_type: ["must be one of: conta-corrente, poupanca"],
    });
  });
});

Deno.test("Mexico: an 18-digit CLABE with its Banxico control digit", async (t) => {
  await t.step("the control digit is Banxico's 3-7-1 weighted sum", () => {
    for (const first17 of ["00218001234567890", "01418000000000000", "12345678901234567", "99999999999999999"]) {
      const c = check.clabe(first17);
      assert.equal(isValidClabe(c), true, c);
      for (let d = 0; d <= 9; d++) {
        if (String(d) !== c[17]) assert.equal(isValidClabe(first17 + d), false, first17 + d);
      }
    }
  });

  await t.step("a valid CLABE is stored with its bank; a wrong digit or length is refused", () => {
    const a = accepted(mexico());
    assert.deepEqual([a.account_number, a.bank?.code, a.bank?.country], [CLABE, "002", "MEX"]);
    assert.deepEqual(refused(mexico({ account_number: check.wrongLastDigit(CLABE) })).errors, {
      account_number: ["has an invalid check digit"],
    });
    assert.deepEqual(refused(mexico({ account_number: CLABE.slice(1) })).errors, {
      account_number: ["must have 18 digits (CLABE)"],
    });
    assert.deepEqual(refused(mexico({ account_number: `${CLABE.slice(0, 3)}/${CLABE.slice(3)}` })).errors, {
      account_number: ["must contain only digits"],
    });
  });

  await t.step("a CLABE spaced as a bank statement prints it is stored bare", () => {
    const spaced = `${CLABE.slice(0, 3)} ${CLABE.slice(3, 6)} ${CLABE.slice(6, 17)} ${CLABE.slice(17)}`;
    assert.equal(accepted(mexico({ account_number: spaced })).account_number, CLABE);
    const dashed = `${CLABE.slice(0, 3)}-${CLABE.slice(3, 6)}-${CLABE.slice(6, 17)}-${CLABE.slice(17)}`;
    assert.equal(accepted(mexico({ account_number: dashed })).account_number, CLABE);
    // the spacing goes before the digits are judged: a wrong digit is still named as such
    assert.deepEqual(
      refused(mexico({ account_number: `${CLABE.slice(0, 9)} ${check.wrongLastDigit(CLABE).slice(9)}` }))
        .errors,
      { account_number: ["has an invalid check digit"] },
    );
  });

  await t.step("a 3-digit bank code must be the CLABE's first three digits; 4 digits are not compared", () => {
    assert.deepEqual(refused(mexico({ bank: { code: "012", name: "BBVA" } })).errors, {
      bank: { code: ["does not match account_number"] },
    });
    assert.equal(accepted(mexico({ bank: { code: "4002", name: "Banamex" } })).bank?.code, "4002");
    assert.deepEqual(refused(mexico({ bank: { code: "20", name: "X" } })).errors, {
      bank: { code: ["has invalid format, expected three or four digits"] },
    });
  });

  await t.step("account_type is required", () => {
    assert.deepEqual(refused(mexico({ account_type: null })), {
      status: 400,
      errors: { account_type: ["can't be blank"] },
    });
  });

  await t.step("the owner's CURP (check digit) or RFC, typed from its length", () => {
    const curp = check.curp("GOMA900101HDFRRN0");
    const byCurp = accepted(mexico({ owner_document_number: curp.toLowerCase() }));
    assert.deepEqual([byCurp.owner_document_number, byCurp.owner_document_type], [curp, "curp"]);
    assert.deepEqual(refused(mexico({ owner_document_number: check.wrongLastDigit(curp) })).errors, {
      owner_document_number: ["has an invalid check digit"],
    });
    assert.equal(accepted(mexico({ owner_document_number: "GOMA900101AB1" })).owner_document_type, "rfc");
    assert.equal(accepted(mexico({ owner_document_number: "ABC900101AB1" })).owner_document_type, "rfc", "company");
    assert.deepEqual(refused(mexico({ owner_document_type: "rfc", owner_document_number: "GOMA901301AB1" })).errors, {
      owner_document_number: ["has invalid format, expected a date (YYMMDD) after the letters"],
    });
    assert.deepEqual(refused(mexico({ owner_document_type: "rfc", owner_document_number: "GOMA900101A" })).errors, {
      owner_document_number: ["must have 12 or 13 characters"],
    });
  });
});

Deno.test("Colombia: labels for account types, cc or NIT owners", async (t) => {
  await t.step("the four labels map whatever their case and spacing", () => {
    const labels: [string, string][] = [
      ["Conta Corriente", "conta-corrente"],
      ["cuenta  de AHORROS", "poupanca"],
      ["Cuentas Nomina", "salary"],
      ["CUENTAS PENSIONALES", "payment"],
      ["poupanca", "poupanca"],
    ];
    for (const [label, stored] of labels) {
      assert.equal(accepted(colombia({ account_type: label })).account_type, stored, label);
    }
    assert.deepEqual(refused(colombia({ account_type: "Cuenta Corriente" })).errors, {
      account_type: [
        "must be one of: conta-corrente, poupanca, salary, payment, Conta Corriente, Cuenta de Ahorros, " +
        "Cuentas Nomina, Cuentas pensionales",
      ],
    });
  });

  await t.step("NIT: DIAN's check digit, verified when the 10th digit is given", () => {
    const nit = check.nit("900123456");
    const a = accepted(colombia({ owner_document_type: "NIT", owner_document_number: `${nit.slice(0, 9)}-${nit[9]}` }));
    assert.deepEqual([a.owner_document_type, a.owner_document_number], ["nit", nit]);
    assert.deepEqual(
      refused(colombia({ owner_document_type: "nit", owner_document_number: check.wrongLastDigit(nit) })).errors,
      { owner_document_number: ["has an invalid check digit"] },
    );
    assert.deepEqual(
      refused(colombia({ owner_document_type: "nit", owner_document_number: "90012345" })).errors,
      { owner_document_number: ["must have 9 or 10 digits (10 with the check digit)"] },
    );
  });

  await t.step("cc is exactly 10 digits, as for a person; other document types are refused", () => {
    assert.equal(
      accepted(colombia({ owner_document_type: "cc", owner_document_number: "1.234.567.890" })).owner_document_number,
      "1234567890",
    );
    for (const short of ["1234567", "123456789", "12345678901"]) {
      assert.deepEqual(refused(colombia({ owner_document_type: "cc", owner_document_number: short })).errors, {
        owner_document_number: ["must have 10 digits"],
      }, short);
    }
    assert.deepEqual(refused(colombia({ owner_document_type: "cpf", owner_document_number: CPF })).errors, {
      owner_document_type: ["must be one of: cc, nit"],
    });
  });

  await t.step("account, branch, owner and bank are required", () => {
    const none = refused({ currency: "COP" });
    assert.equal(none.status, 400);
    assert.deepEqual(Object.keys(none.errors).sort(), ["account_number", "bank", "branch_number", "owner_name"]);
  });
});

Deno.test("international (USD, EUR): BIC, IBAN and ABA routing number checked", async (t) => {
  await t.step("the BIC gives the bank's country, stored alpha-3", () => {
    const a = accepted(international({ bank: { name: "Deutsche Bank", swift: "deut de ff 500" } }), "international");
    assert.deepEqual(a.bank, { country: "DEU", code: null, ispb: null, swift: "DEUTDEFF500", name: "Deutsche Bank" });
    assert.equal(accepted(international({ bank: { name: "BofA", swift: "BOFAUS3N" } }), "any").bank?.country, "USA");
    for (
      const [swift, message] of [
        ["DEUTZZFF", "has an unknown country code"],
        ["DEUTDEF", "must have 8 or 11 characters"],
        ["DEUTDEFF5", "must have 8 or 11 characters"],
        ["1EUTDEFF", "has invalid format, expected four letters first (the bank)"],
        ["DEUT1EFF", "has invalid format, expected a country code in characters 5 and 6"],
        ["DEUT-DE-FF", "must contain only letters and digits"],
      ]
    ) {
      assert.deepEqual(refused(international({ bank: { name: "X", swift } }), "international").errors, {
        bank: { swift: [message] },
      }, swift);
    }
  });

  await t.step("an IBAN with ISO 13616 check digits is stored in electronic form", () => {
    for (
      const [country, bban] of [["DE", "370400440532013000"], ["GB", "NWBK60161331926819"], [
        "FR",
        "20041010050500013M02606",
      ]]
    ) {
      const iban = check.iban(country, bban);
      const printed = iban.toLowerCase().replace(/(.{4})/g, "$1 ").trim();
      assert.equal(accepted(international({ iban: printed }), "international").iban, iban);
      const wrong = `${iban.slice(0, 2)}${String((Number(iban.slice(2, 4)) + 1) % 100).padStart(2, "0")}${bban}`;
      assert.deepEqual(refused(international({ iban: wrong }), "international").errors, {
        iban: ["has invalid check digits"],
      });
      assert.deepEqual(refused(international({ iban: iban.slice(0, -1) }), "international").errors, {
        iban: [`must have ${iban.length} characters (an IBAN of ${country})`],
      });
    }
    assert.deepEqual(refused(international({ iban: "ZZ89370400440532013000" }), "international").errors, {
      iban: ["has an unknown country code"],
    });
  });

  await t.step("routing_number and aba: 9 digits with the ABA checksum", () => {
    for (const first8 of ["02100002", "12100035", "01100001", "32227162"]) {
      const routing = check.aba(first8);
      assert.equal(isValidAba(routing), true, routing);
      assert.equal(isValidAba(check.wrongLastDigit(routing)), false, routing);
      const a = accepted(international({ routing_number: routing, aba: routing }), "international");
      assert.deepEqual([a.routing_number, a.aba], [routing, routing]);
    }
    assert.deepEqual(refused(international({ routing_number: "12345678" }), "international").errors, {
      routing_number: ["must have 9 digits"],
    });
    assert.deepEqual(refused(international({ aba: check.wrongLastDigit(check.aba("02100002")) }), "international"), {
      status: 422,
      errors: { aba: ["has an invalid check digit"] },
    });
  });

  await t.step("account number, owner name, owner document and bank are required", () => {
    const none = refused({ currency: "USD" }, "international");
    assert.equal(none.status, 400);
    assert.deepEqual(Object.keys(none.errors).sort(), [
      "account_number",
      "bank",
      "owner_document_number",
      "owner_name",
    ]);
  });
});

Deno.test("branch_country: alpha-2 or alpha-3 in, alpha-3 stored; anything else refused", () => {
  assert.equal(accepted(brazil({ branch_country: "br" })).branch_country, "BRA");
  assert.equal(accepted(colombia({ branch_country: "COL" })).branch_country, "COL");
  assert.deepEqual(refused(brazil({ branch_country: "XX" })).errors, {
    branch_country: ["is invalid: expected a known country, e.g. BRA or BR (no country has the code XX)"],
  });
});

Deno.test("every problem of an account is reported at once; missing ones make it a 400", () => {
  const both = refused(mexico({ account_number: check.wrongLastDigit(CLABE), account_type: null }));
  assert.deepEqual(both, {
    status: 400,
    errors: { account_number: ["has an invalid check digit"], account_type: ["can't be blank"] },
  });
});

Deno.test("account and branch numbers say what is wrong: a character, the format or the length", async (t) => {
  const problem = (input: BankAccountInput, field: "account_number" | "branch_number") =>
    (refused(input).errors[field] as string[])[0];

  await t.step("Brazil: digits, then the check digit (a digit or X) with or without a dash", () => {
    for (const [account, branch] of [["123456-7", "0001-X"], ["1234567", "00019"], ["1".repeat(20) + "-x", "12345"]]) {
      const a = accepted(brazil({ account_number: account, branch_number: branch }));
      assert.deepEqual([a.account_number, a.branch_number], [account, branch]);
    }
    const cases: [string, "account_number" | "branch_number", string][] = [
      ["12,345-6", "account_number", "must contain only digits, and a dash or X for the check digit"],
      ["12345-67", "account_number", "has invalid format, expected digits, then the check digit after a dash"],
      ["-1", "account_number", "has invalid format, expected digits, then the check digit after a dash"],
      ["1".repeat(22), "account_number", "is too long (maximum is 20 digits and the check digit)"],
      ["0001 X", "branch_number", "must contain only digits, and a dash or X for the check digit"],
      ["123456-7", "branch_number", "is too long (maximum is 5 digits and the check digit)"],
    ];
    for (const [number, field, message] of cases) {
      assert.equal(problem(brazil({ [field]: number }), field), message, number);
    }
  });

  await t.step("Colombia: digits and dashes from a digit on; a branch of letters, digits and dashes", () => {
    assert.equal(
      problem(colombia({ account_number: "123/456" }), "account_number"),
      "must contain only digits and dashes",
    );
    assert.equal(
      problem(colombia({ account_number: "-123" }), "account_number"),
      "has invalid format, expected a digit first",
    );
    assert.equal(
      problem(colombia({ account_number: "1".repeat(26) }), "account_number"),
      "is too long (maximum is 25 characters)",
    );
    assert.equal(
      problem(colombia({ branch_number: "00 12" }), "branch_number"),
      "must contain only letters, digits and dashes",
    );
    assert.deepEqual(refused(colombia({ bank: { code: "10A7", name: "X" } })).errors, {
      bank: { code: ["must contain only digits"] },
    });
  });

  await t.step("abroad: letters, digits, spaces and dashes", () => {
    assert.deepEqual(refused(international({ account_number: "0001/23" }), "international").errors, {
      account_number: ["must contain only letters, digits, spaces and dashes"],
    });
  });

  await t.step("the bank codes and the ISPB keep the messages the interface shows", () => {
    assert.deepEqual(refused(brazil({ bank: { code: "1", ispb: "0000000A", name: "X" } })).errors, {
      bank: {
        code: ["has invalid format, expected three digits"],
        ispb: ["has invalid format, expected eight digits"],
      },
    });
  });
});

Deno.test("account numbers copied from a bank statement: its spacing is dropped, the number stored bare", async (t) => {
  await t.step("what each country drops, and what it keeps", () => {
    const cases: [Parameters<typeof bareAccountNumber>[0], string, string][] = [
      ["MEX", "002 180 01234567890 6", "002180012345678906"],
      ["MEX", "002-180-01234567890-6", "002180012345678906"],
      ["MEX", "0021 8001 2345 6789 06", "002180012345678906"],
      // a no-break space, as a statement copied from a PDF or a web page gives
      ["MEX", "002\u00a0180\u00a001234567890\u00a06", "002180012345678906"],
      ["BRA", "12.345-6", "12345-6"],
      ["BRA", "1 234 567-X", "1234567-X"],
      ["BRA", "123456-7", "123456-7"],
      ["COL", "123 456789 01", "12345678901"],
      ["COL", "123-456789-01", "123-456789-01"],
      ["INT", "DE89 3704 0044", "DE89 3704 0044"],
      [null, "12 34", "12 34"],
    ];
    for (const [country, raw, bare] of cases) assert.equal(bareAccountNumber(country, raw), bare, `${country} ${raw}`);
  });

  await t.step("Brazil: a number with thousands dots is the number without them", () => {
    const a = accepted(brazil({ account_number: "12.345-6" }));
    assert.equal(a.account_number, "12345-6");
  });

  await t.step("Colombia: spaces go, dashes stay as written", () => {
    assert.equal(accepted(colombia({ account_number: "123 456789 01" })).account_number, "12345678901");
    assert.equal(accepted(colombia({ account_number: "123-456789-01" })).account_number, "123-456789-01");
  });

  await t.step("a number of spacing alone is blank", () => {
    assert.deepEqual(refused(mexico({ account_number: " - " })).errors, { account_number: ["can't be blank"] });
  });
});
