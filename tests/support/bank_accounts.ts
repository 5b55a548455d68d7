/** Valid bank account bodies as an integrator sends them (Brazil, Mexico, Colombia, and a USD one abroad); `overrides` change fields. */
import { clabe } from "./check_digits.ts";

export const brazil = (overrides: Record<string, unknown> = {}) => ({
  currency: "BRL",
  owner_name: "Ana Souza",
  account_number: "123456-7",
  branch_number: "0001",
  account_type: "conta-corrente",
  bank: { code: "341", ispb: "60701190", name: "itau" },
  ...overrides,
});

export const mexico = (overrides: Record<string, unknown> = {}) => ({
  currency: "MXN",
  account_number: clabe("01218000123456789"),
  account_type: "conta-corrente",
  bank: { code: "012", name: "bbva" },
  ...overrides,
});

export const colombia = (overrides: Record<string, unknown> = {}) => ({
  currency: "COP",
  account_number: "12345678901",
  branch_number: "123",
  owner_name: "Carlos Pérez",
  bank: { code: "007", name: "bancolombia sa" },
  ...overrides,
});

export const international = (overrides: Record<string, unknown> = {}) => ({
  currency: "USD",
  account_number: "000123456789",
  owner_name: "Acme Inc",
  owner_document_number: "12-3456789",
  owner_document_type: "tax_id",
  routing_number: "021000021",
  bank: { swift: "CHASUS33", name: "JPMorgan Chase" },
  ...overrides,
});
