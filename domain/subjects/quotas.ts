/**
 * What one company may store (docs/limits.md, "Stored objects"): subjects (people and company customers together),
 * bank accounts, documents and the bytes of their files. Counted in `company_usage`, up to 64 rows per company (stripes,
 * each with a share of every quota) that every create updates in its own transaction (`take_company_usage`,
 * sql/0022_company_usage.sql): no create counts the company's history, and two creates at once, on any instances,
 * cannot both take the last place.
 */
import type postgres from "postgres";
import type { Limits } from "../infra/config.ts";
import type { SqlOrTransaction } from "../infra/db.ts";
import { unprocessable } from "../basics/errors.ts";
import type { PreparedDocument } from "./documents.ts";

export type StoredQuotas = Pick<
  Limits,
  "peoplePerCompany" | "bankAccountsPerCompany" | "documentsPerCompany" | "documentBytesPerCompany"
>;

/** What a create adds to the company's counters. */
export type Usage = { people?: number; bankAccounts?: number; documents?: number; documentBytes?: number };

type Quota = "people" | "bank_accounts" | "documents" | "document_bytes";

/** How each quota is named to the integrator, with the variable that sets it. */
const NAMES: Record<Quota, { what: string; variable: string; max: (q: StoredQuotas) => number; used: keyof Usage }> = {
  people: {
    what: "people and company customers",
    variable: "QUOTA_PEOPLE_PER_COMPANY",
    max: (q) => q.peoplePerCompany,
    used: "people",
  },
  bank_accounts: {
    what: "bank accounts",
    variable: "QUOTA_BANK_ACCOUNTS_PER_COMPANY",
    max: (q) => q.bankAccountsPerCompany,
    used: "bankAccounts",
  },
  documents: {
    what: "documents",
    variable: "QUOTA_DOCUMENTS_PER_COMPANY",
    max: (q) => q.documentsPerCompany,
    used: "documents",
  },
  document_bytes: {
    what: "bytes of document files",
    variable: "QUOTA_DOCUMENT_BYTES_PER_COMPANY",
    max: (q) => q.documentBytesPerCompany,
    used: "documentBytes",
  },
};

/**
 * 422, not 429: waiting does not make room, and nothing here goes away on its own. The body names the quota and the
 * variable an operator raises.
 */
export function quotaExceeded(quotas: StoredQuotas, quota: Quota) {
  const { what, variable, max } = NAMES[quota];
  return unprocessable(`quota exceeded: at most ${max(quotas)} ${what} per company (${variable})`);
}

/** The documents a create stores, as usage: files given by URL count as documents, with no bytes. */
export function documentsUsage(documents: readonly PreparedDocument[]): Usage {
  return {
    documents: documents.length,
    documentBytes: documents.reduce((sum, doc) => sum + (doc.bytes?.length ?? 0), 0),
  };
}

/**
 * A boolean SQL expression that takes room for `use` in the company's counters and, when that passes a quota, fails
 * the statement it is part of (and so the create, which the caller makes in the same statement or transaction).
 * For a create of one statement, which must stay one round trip: evaluate it only when the row is new.
 */
export function takeRoom(
  sql: SqlOrTransaction,
  companyId: string,
  quotas: StoredQuotas,
  use: Usage,
): postgres.Fragment {
  return sql`take_company_usage(
    ${companyId}::uuid, ${use.people ?? 0}::int, ${use.bankAccounts ?? 0}::int, ${use.documents ?? 0}::int,
    ${use.documentBytes ?? 0}::bigint, ${quotas.peoplePerCompany}::int, ${quotas.bankAccountsPerCompany}::int,
    ${quotas.documentsPerCompany}::int, ${quotas.documentBytesPerCompany}::bigint)`;
}

/**
 * Takes room for `use` inside the caller's transaction, or fails it. The counter row it takes stays locked until the
 * commit (near the quota, every row of the company), so this is the last statement before the commit.
 */
export async function claimRoom(tx: postgres.TransactionSql, companyId: string, quotas: StoredQuotas, use: Usage) {
  await tx`select ${takeRoom(tx, companyId, quotas, use)}`;
}

/**
 * Refuses at once, before anything is written, what already cannot fit: a 15 MB file is not stored only to be rolled
 * back at the end. Reads without locking; `claimRoom` still decides.
 */
export async function refuseEarly(sql: SqlOrTransaction, companyId: string, quotas: StoredQuotas, use: Usage) {
  const [used] = await sql<Record<Quota, string | null>[]>`
    select sum(people) as people, sum(bank_accounts) as bank_accounts, sum(documents) as documents,
           sum(document_bytes) as document_bytes
    from company_usage where company_id = ${companyId}`;
  const now = (quota: Quota) => Number(used?.[quota] ?? 0);
  for (const quota of Object.keys(NAMES) as Quota[]) {
    const { max, used: key } = NAMES[quota];
    const adds = use[key] ?? 0;
    if (adds > 0 && now(quota) + adds > max(quotas)) throw quotaExceeded(quotas, quota);
  }
}

/** Runs a create, turning the failure `takeRoom` raises in Postgres into the 422 that names the quota. */
export async function withinQuotas<T>(quotas: StoredQuotas, create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    const { code, detail } = (error ?? {}) as { code?: unknown; detail?: unknown };
    if (code === "QUOTA" && typeof detail === "string" && detail in NAMES) {
      throw quotaExceeded(quotas, detail as Quota);
    }
    throw error;
  }
}
