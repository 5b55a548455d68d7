/**
 * The bank directory: the stored row of the bank an account names by code or SWIFT. Kept apart from rules.ts, which
 * is pure and checks an account's shape; this is the database half that runs after it.
 */
import type { SqlOrTransaction } from "../infra/db.ts";
import { newId } from "../basics/ids.ts";
import type { BankRef } from "./rules.ts";

export type Bank = {
  id: string;
  country: string;
  code: string | null;
  ispb: string | null;
  swift: string | null;
  name: string;
};

/**
 * The directory row for a checked bank reference: a known code (per country) or SWIFT keeps its stored name and
 * ISPB, whatever the client sent, so one bank reads the same in every account; an unknown one is learned for this
 * company with what was sent.
 * Seeded rows are shared; learned rows belong to one company, so a name one tenant typed never reaches another.
 */
export async function resolveBank(tx: SqlOrTransaction, companyId: string, ref: BankRef): Promise<Bank> {
  const bySwift = ref.swift != null;
  const [known] = bySwift
    ? await tx<Bank[]>`
        select id, country, code, ispb, swift, name from banks
        where swift = ${ref.swift} and (company_id is null or company_id = ${companyId})
        order by company_id nulls first limit 1`
    : await tx<Bank[]>`
        select id, country, code, ispb, swift, name from banks
        where country = ${ref.country} and code = ${ref.code} and (company_id is null or company_id = ${companyId})
        order by company_id nulls first limit 1`;
  if (known) return known;

  const row = {
    id: newId(),
    company_id: companyId,
    country: ref.country,
    code: bySwift ? null : ref.code,
    ispb: bySwift ? null : ref.ispb,
    swift: ref.swift,
    name: ref.name ?? ref.swift ?? ref.code ?? "",
  };
  // two requests naming the same new bank at once: the loser's no-op update returns the winner's row
  const [saved] = bySwift
    ? await tx<Bank[]>`
        insert into banks ${tx(row)}
        on conflict (company_id, swift) where company_id is not null and swift is not null
        do update set swift = excluded.swift
        returning id, country, code, ispb, swift, name`
    : await tx<Bank[]>`
        insert into banks ${tx(row)}
        on conflict (company_id, country, code) where company_id is not null and code is not null
        do update set code = excluded.code
        returning id, country, code, ispb, swift, name`;
  return saved;
}

/** The ISPB the directory holds for a Brazilian COMPE code, or null when the code is unknown. */
export async function directoryIspb(tx: SqlOrTransaction, companyId: string, code: string): Promise<string | null> {
  const [row] = await tx<{ ispb: string | null }[]>`
    select ispb from banks
    where country = 'BRA' and code = ${code} and (company_id is null or company_id = ${companyId})
    order by company_id nulls first limit 1`;
  return row?.ispb ?? null;
}
