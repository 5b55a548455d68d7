import type { Tx } from "../infra/db.ts";
import { notFound } from "../basics/errors.ts";
import { type CompanyRow, presentCompany } from "./companies.ts";
import { type PersonRow, presentPerson, selectSubjects } from "./people.ts";

/** A subject of either kind, as the rails and the back office see it: the person or the company customer. */
export type SubjectRow = (PersonRow & { kind: "person" }) | (CompanyRow & { kind: "company" });

export async function getSubject(sql: Tx, companyId: string, id: string): Promise<SubjectRow> {
  const [row] = await sql<SubjectRow[]>`${selectSubjects(sql)} where p.company_id = ${companyId} and p.id = ${id}`;
  if (!row) throw notFound();
  return row;
}

/** The person object, or the company-customer object, as its own routes show it. */
export function presentSubject(s: SubjectRow, opts: { detail?: boolean } = {}) {
  return s.kind === "company" ? presentCompany(s, opts) : presentPerson(s, opts);
}
