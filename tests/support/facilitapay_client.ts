/**
 * What Facilitapay's public client (the Hyperswitch connector) requires of each answer, written from its serde
 * structs as the contract lists them: a required field must be there and not null, an `Option` may be absent or
 * null, and a value of the wrong JSON type (a number where a string is due) fails the whole parse. `check*` return
 * the paths that would fail the connector's parse, an empty list when it would succeed.
 */
type Check = (value: unknown, path: string, problems: string[]) => void;

const isStr = (v: unknown): v is string => typeof v === "string";

function required(inner: Check): Check {
  return (v, path, problems) => {
    if (v === undefined || v === null) problems.push(`${path}: required`);
    else inner(v, path, problems);
  };
}
function optional(inner: Check): Check {
  return (v, path, problems) => {
    if (v !== undefined && v !== null) inner(v, path, problems);
  };
}
const str: Check = (v, path, problems) => void (isStr(v) || problems.push(`${path}: not a string`));
const bool: Check = (v, path, problems) => void (typeof v === "boolean" || problems.push(`${path}: not a boolean`));
const int: Check = (v, path, problems) => void (Number.isInteger(v) || problems.push(`${path}: not an integer`));
const oneOf = (...values: string[]): Check => (v, path, problems) =>
  void (isStr(v) && values.includes(v) || problems.push(`${path}: ${JSON.stringify(v)} not one of ${values}`));
const array: Check = (v, path, problems) => void (Array.isArray(v) || problems.push(`${path}: not an array`));
// hyperswitch's Currency enum: uppercase ISO 4217 codes (all of ours are in it)
const currency = oneOf("BRL", "MXN", "COP", "CLP", "USD", "EUR");
const date: Check = (v, path, problems) =>
  void (isStr(v) && /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)) ||
    problems.push(`${path}: not a YYYY-MM-DD date`));
// Hyperswitch's email check: ASCII, a dot in the domain, at most 319 characters ("Redacted" passes too)
const email: Check = (v, path, problems) =>
  void (isStr(v) &&
      (v === "Redacted" || (/^[\x21-\x7e]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/.test(v) && v.length <= 319)) ||
    problems.push(`${path}: not an email the connector accepts`));
const DOCUMENT_TYPE = oneOf("cc", "cnpj", "cpf", "curp", "nit", "passport", "rfc", "rut", "tax_id");

function object(fields: Record<string, Check>): Check {
  return (v, path, problems) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return void problems.push(`${path}: not an object`);
    for (const [key, check] of Object.entries(fields)) {
      check((v as Record<string, unknown>)[key], `${path}.${key}`, problems);
    }
  };
}

const Subject = object({
  social_name: required(str),
  document_type: required(DOCUMENT_TYPE),
  document_number: required(str),
  fiscal_country: required(str),
  updated_at: optional(str),
  status: required(oneOf("approved", "reproved", "waiting_approval")),
  id: required(str),
  birth_date: optional(date),
  email: optional(email),
  phone_country_code: optional(str),
  phone_area_code: optional(str),
  phone_number: optional(str),
  address_street: optional(str),
  address_number: optional(str),
  address_complement: optional(str),
  address_postal_code: optional(str),
  address_neighborhood: optional(str),
  address_city: optional(str),
  address_state: optional(str),
  address_country: optional(str),
  net_monthly_average_income: optional(str),
  clearance_level: optional(int),
  required_clearance_level: optional(int),
  inserted_at: optional(str),
  references: optional(array),
  documents: optional(array),
  rfc_pf: optional(str),
});

const BankAccountDetail = object({
  id: required(str),
  currency: required(currency),
  routing_number: optional(str),
  owner_name: optional(str),
  owner_document_number: optional(str),
  intermediary_bank_account: optional(str),
  intermediary_bank_account_id: optional(str),
  iban: optional(str),
  branch_number: optional(str),
  account_number: optional(str),
  owner_document_type: optional(str),
  flow_type: optional(str),
  branch_country: optional(str),
  account_type: optional(str),
  aba: optional(str),
  internal: optional(bool),
  pix_info: optional(object({ type: required(str), key: required(str) })),
  owner_company: optional(object({
    social_name: optional(str),
    id: optional(str),
    document_type: required(DOCUMENT_TYPE),
    document_number: required(str),
  })),
  bank: optional(object({ swift: optional(str), name: optional(str), id: required(str), code: optional(str) })),
});

const STATUS = oneOf("pending", "identified", "exchanged", "wired", "canceled");

const TransactionData = object({
  id: required(str),
  value: required(str),
  status: required(STATUS),
  currency: required(currency),
  exchange_currency: required(currency),
  to_bank_account: required(BankAccountDetail),
  subject_id: required(str),
  source_document_type: required(DOCUMENT_TYPE),
  source_document_number: required(str),
  from_bank_account: optional(BankAccountDetail),
  subject: optional(Subject),
  subject_is_receiver: optional(bool),
  source_name: optional(str),
  inserted_at: optional(str),
  for_exchange: optional(bool),
  exchange_under_request: optional(bool),
  estimated_value_until_exchange: optional(bool),
  cleared: optional(bool),
  dynamic_pix_code: optional(str),
  exchanged_value: optional(str),
  canceled_reason: optional(str),
  canceled_at: optional(str),
});

const VoidData = object({
  id: required(str),
  reason: optional(str),
  inserted_at: required(str),
  status: required(STATUS),
  transaction_kind: required(str),
  bank_transaction: required(object({
    id: required(str),
    value: required(str),
    currency: required(currency),
    iof_value: optional(str),
    fx_value: optional(str),
    exchange_rate: optional(str),
    exchange_currency: required(currency),
    exchanged_value: required(str),
    exchange_approved: required(bool),
    wire_id: optional(str),
    exchange_id: optional(str),
    movement_date: required(str),
    source_name: required(str),
    source_document_number: required(str),
    source_document_type: required(str),
    source_id: required(str),
    source_type: required(str),
    source_description: required(str),
    source_bank: optional(str),
    source_branch: optional(str),
    source_account: optional(str),
    source_bank_ispb: optional(str),
    company_id: required(str),
    company_name: required(str),
  })),
});

/** The notification types the connector parses: those its endpoint subscribes to. */
export const WEBHOOK_TYPES = [
  "exchange_created",
  "identified",
  "payment_approved",
  "payment_expired",
  "payment_failed",
  "payment_refunded",
  "wire_created",
  "wire_waiting_correction",
];

const run = (check: Check, value: unknown) => {
  const problems: string[] = [];
  check(value, "$", problems);
  return problems;
};

export const checkAuthResponse = (v: unknown) =>
  run(object({ username: required(str), name: required(str), jwt: required(str) }), v);
export const checkCustomerResponse = (v: unknown) => run(object({ data: required(Subject) }), v);
export const checkPaymentsResponse = (v: unknown) => run(object({ data: required(TransactionData) }), v);
export const checkVoidResponse = (v: unknown) => run(object({ data: required(VoidData) }), v);

/**
 * FacilitapayWebhookNotification: `{notification: {type, secret, ...data}}`, the data matched untagged in the
 * connector's order (CardPayment and Transaction need `transaction_id`; Exchange and Wire `transaction_ids`).
 * Answers the problems and the reference id the connector would take.
 */
export function checkWebhookNotification(v: unknown): { problems: string[]; referenceId: string | null } {
  const problems = run(
    object({ notification: required(object({ type: required(oneOf(...WEBHOOK_TYPES)), secret: required(str) })) }),
    v,
  );
  const n = (v as { notification?: Record<string, unknown> })?.notification ?? {};
  let referenceId: string | null = null;
  if (isStr(n.transaction_id)) referenceId = n.transaction_id;
  else if (Array.isArray(n.transaction_ids) && n.transaction_ids.every(isStr) && isStr(n.exchange_id ?? n.wire_id)) {
    referenceId = (n.transaction_ids as string[])[0] ?? null;
  } else problems.push("$.notification: matches no data variant");
  return { problems, referenceId };
}
