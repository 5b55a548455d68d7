/** Shared by the rails tests: subjects, accounts and a look at the events a receiver would get. */
import assert from "node:assert/strict";
import type { Company, TestContext } from "./helpers.ts";
import { randomCpf } from "./check_digits.ts";

export async function registerPerson(company: Company, overrides: Record<string, unknown> = {}) {
  const res = await company.post("/api/v1/subject/people", {
    person: {
      document_number: randomCpf(),
      document_type: "cpf",
      social_name: "Ana Pagadora",
      fiscal_country: "BRA",
      ...overrides,
    },
  });
  assert.ok([200, 201].includes(res.status), JSON.stringify(res.body));
  return res.body.data as { id: string; status: string; document_number: string };
}

/** A BRL account at Itaú for the subject (201, or the assertion names the body), in `ownerName`'s name. */
export async function registerBrlAccount(company: Company, subjectId: string, ownerName = "Ana Pagadora") {
  const res = await company.post(`/api/v1/subject/${subjectId}/bank_accounts`, {
    bank_account: {
      owner_name: ownerName,
      currency: "BRL",
      account_number: "123456",
      branch_number: "0001",
      account_type: "conta-corrente",
      bank: { code: "341", ispb: "60701190", name: "Itau" },
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.data as { id: string };
}

/** A SPEI transfer in from a payer no subject matches (a CURP, a BBVA account, a concepto): money left unidentified. */
export const UNKNOWN_MXN_PAYER_TRANSFER = {
  value: "750.50",
  currency: "MXN",
  spei_concepto_de_pago: "Factura 17",
  payer: {
    document_number: "HEGG560427MVZRRL04",
    document_type: "curp",
    name: "Pagador Desconocido",
    bank_account: { bank: "BBVA MEXICO", branch_number: null, account_number: "012180001234567891" },
  },
};

export type StoredEvent = { id: string; type: string; data: Record<string, unknown> };

/** The events the company has been sent so far, oldest first (optionally of one type). */
export async function eventsOf(ctx: TestContext, company: Company, type?: string): Promise<StoredEvent[]> {
  return await ctx.sql<StoredEvent[]>`
    select id, type, data from events
    where company_id = ${company.id} ${type ? ctx.sql`and type = ${type}` : ctx.sql``}
    order by id`;
}

/** Types of the events emitted after `since` (an event id, or null for all). */
export async function typesSince(ctx: TestContext, company: Company, since: string | null) {
  const events = await eventsOf(ctx, company);
  return events.filter((e) => since === null || e.id > since).map((e) => e.type);
}

export async function lastEventId(ctx: TestContext, company: Company): Promise<string | null> {
  const events = await eventsOf(ctx, company);
  return events.at(-1)?.id ?? null;
}

export const keys = (o: unknown) => Object.keys(o as object).sort();

export function assertCreated(res: { status: number; body: unknown }) {
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return (res.body as { data: Record<string, unknown> }).data;
}

/**
 * A non-identified bank transaction's data as the catalogue shapes it (`non_identified_bank_transaction`), with the
 * two fields payload filters usually read given.
 */
export const bankTransactionData = (value: string, currency: string) => ({
  bank_transaction: {
    id: crypto.randomUUID(),
    value,
    currency,
    movement_date: "2026-11-25",
    bank_account_id: crypto.randomUUID(),
    paid_at: "2026-11-25T22:00:00.000Z",
    subject: {
      document_number: "52998224725",
      document_type: "cpf",
      name: "Payer",
      bank_account: { bank: "341", branch_number: "1", account_number: "2", account_type: "checking" },
    },
  },
});
