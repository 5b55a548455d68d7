/**
 * What the service itself says of a test document of each type (docs/sandbox.md, "Test documents"): the tax id rules a
 * registration applies, and the bank account rules an account registration applies (PIX keys, CLABE, IBAN, BIC, ABA
 * inside an account that is otherwise valid). Shared by the generators' unit test and the docs table's test, so both
 * judge a value by the same production code and neither by the generators' own arithmetic.
 */
import { checkTaxId, rfcPfProblem, type TaxIdType } from "../../domain/basics/tax_ids.ts";
import { type BankAccountInput, validateBankAccountInput } from "../../domain/bank_accounts/rules.ts";
import { ApiError } from "../../domain/basics/errors.ts";
import type { TestDocumentType } from "../../domain/rails/test_documents.ts";

/** A bank account registration that is valid but for the field under test, and where its value is stored. */
function account(input: BankAccountInput, stored: (a: ReturnType<typeof validateBankAccountInput>) => string | null) {
  try {
    const checked = validateBankAccountInput(input, { scope: "any" });
    return { stored: stored(checked) };
  } catch (e) {
    if (e instanceof ApiError) return { error: JSON.stringify(e.errors) };
    throw e;
  }
}

const pix = (type: string) => (key: string) =>
  account({ currency: "BRL", owner_name: "Ana Souza", pix_info: { type, key } }, (a) => a.pix_key);

const international = (fields: BankAccountInput) => ({
  currency: "EUR",
  account_number: "12345678",
  owner_name: "Ana Souza",
  owner_document_number: "X1234567",
  bank: { name: "Test Bank", swift: "DEUTDEFF" },
  ...fields,
});

const taxId = (type: TaxIdType) => (value: string) => {
  const checked = checkTaxId(type, value);
  return "error" in checked ? { error: checked.error } : { stored: checked.value };
};

const CHECKS: Record<TestDocumentType, (value: string) => { stored: string | null } | { error: string }> = {
  cpf: taxId("cpf"),
  cnpj: taxId("cnpj"),
  pix_email: pix("EMAIL"),
  pix_phone: pix("PHONE"),
  pix_evp: pix("EVP"),
  curp: taxId("curp"),
  rfc: taxId("rfc"),
  rfc_pf: (value) => {
    const problem = rfcPfProblem(value);
    return problem ? { error: problem } : { stored: value };
  },
  clabe: (value) =>
    account({
      currency: "MXN",
      account_number: value,
      account_type: "conta-corrente",
      bank: { code: value.slice(0, 3), name: "Test Bank" },
    }, (a) => a.account_number),
  cc: taxId("cc"),
  ce: taxId("ce"),
  nit: taxId("nit"),
  rut: taxId("rut"),
  passport: taxId("passport"),
  tax_id: taxId("tax_id"),
  iban: (value) => account(international({ iban: value }), (a) => a.iban),
  swift: (value) => account(international({ bank: { name: "Test Bank", swift: value } }), (a) => a.bank?.swift ?? null),
  aba: (value) => account(international({ currency: "USD", aba: value }), (a) => a.aba),
};

/**
 * Why the service refuses `value` as a `type`, or null when it accepts it and stores it exactly as given (a value
 * handed out is already in its stored form, so an integrator who compares what it sent with what it reads back finds
 * them equal).
 */
export function documentProblem(type: TestDocumentType, value: string): string | null {
  const result = CHECKS[type](value);
  if ("error" in result) return result.error;
  return result.stored === value ? null : `stored as ${result.stored}`;
}
