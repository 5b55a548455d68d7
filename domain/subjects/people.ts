import type postgres from "postgres";
import type { Sql, TransactionSql, Tx } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import {
  type DocumentInput,
  type DocumentSummary,
  insertDocument,
  missingMandatoryDocuments,
  type PreparedDocument,
  prepareDocument,
} from "./documents.ts";
import { checkPerson, type DocumentType } from "./person_rules.ts";
import { claimRoom, documentsUsage, refuseEarly, type StoredQuotas, takeRoom, withinQuotas } from "./quotas.ts";
import { setStatus } from "./status.ts";

export const PAGE_SIZE = 100;

/** Columns a client may set besides the identity pair; the order is the response order. */
const EDITABLE = [
  "social_name",
  "fiscal_country",
  "rfc_pf",
  "email",
  "website",
  "phone_country_code",
  "phone_area_code",
  "phone_number",
  "birth_date",
  "net_monthly_average_income",
  "address_street",
  "address_number",
  "address_complement",
  "address_neighborhood",
  "address_postal_code",
  "address_city",
  "address_state",
  "address_country",
] as const;
type Editable = typeof EDITABLE[number];

/** A registration as a client sends it, already shaped: the identity pair, the name, the country, the rest optional. */
export type PersonCreateInput =
  & { document_number: string; document_type: DocumentType; social_name: string; fiscal_country: string }
  & { [K in Exclude<Editable, "social_name" | "fiscal_country">]?: string | null }
  & { documents?: DocumentInput[] | null };

/** An update: omitted fields stay, `null` clears. The identity pair is refused by the request schema. */
export type PersonUpdateInput = { [K in Editable]?: string | null };

export type PersonRow =
  & {
    id: string;
    company_id: string;
    status: "approved" | "reproved" | "waiting_approval";
    status_reason: string;
    clearance_level: number;
    required_clearance_level: number;
    document_type: DocumentType;
    document_number: string;
    inserted_at: Date;
    updated_at: Date;
    documents: DocumentSummary[];
  }
  & { [K in Editable]: string | null }
  & { social_name: string; fiscal_country: string };

/** The person object of every answer; `status_reason` only on the detail endpoint. */
export function presentPerson(p: PersonRow, opts: { detail?: boolean } = {}) {
  return {
    id: p.id,
    status: p.status,
    ...(opts.detail ? { status_reason: p.status === "reproved" ? p.status_reason : "" } : {}),
    clearance_level: p.clearance_level,
    required_clearance_level: p.required_clearance_level,
    social_name: p.social_name,
    document_type: p.document_type,
    document_number: p.document_number,
    fiscal_country: p.fiscal_country,
    rfc_pf: p.rfc_pf,
    email: p.email,
    phone_country_code: p.phone_country_code,
    phone_area_code: p.phone_area_code,
    phone_number: p.phone_number,
    birth_date: p.birth_date,
    net_monthly_average_income: p.net_monthly_average_income,
    address_street: p.address_street,
    address_number: p.address_number,
    address_complement: p.address_complement,
    address_neighborhood: p.address_neighborhood,
    address_postal_code: p.address_postal_code,
    address_city: p.address_city,
    address_state: p.address_state,
    address_country: p.address_country,
    references: [] as unknown[],
    documents: p.documents,
    inserted_at: naiveUtc(p.inserted_at),
    updated_at: naiveUtc(p.updated_at),
  };
}

/** A subject (person or company) with its documents (newest last) in one round trip. */
export function selectSubjects(sql: Tx) {
  return sql`
    select p.*, coalesce((
      select json_agg(json_build_object(
        'id', d.id, 'labels', d.labels, 'file_type', d.file_type, 'file_name', d.file_name,
        'file_url', d.file_url, 'size', d.size,
        'inserted_at', to_char(d.inserted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
      ) order by d.id)
      from documents d where d.person_id = p.id
    ), '[]'::json) as documents
    from people p`;
}

/** A person of the company; a company customer's id is not found here (it has its own routes). */
export async function getPerson(sql: Tx, companyId: string, id: string): Promise<PersonRow> {
  const [row] = await sql<PersonRow[]>`
    ${selectSubjects(sql)} where p.company_id = ${companyId} and p.id = ${id} and p.kind = 'person'`;
  if (!row) throw notFound();
  return row;
}

/** 404 unless the person exists and is the company's: every subject route starts here. */
export async function assertPerson(sql: Tx, companyId: string, id: string): Promise<void> {
  const [found] = await sql`select 1 from people where company_id = ${companyId} and id = ${id}`;
  if (!found) throw notFound();
}

export function listPeople(sql: Sql, companyId: string, lastId: string | undefined): Promise<PersonRow[]> {
  return sql<PersonRow[]>`
    ${selectSubjects(sql)}
    where p.company_id = ${companyId} and p.kind = 'person' ${lastId ? sql`and p.id > ${lastId}` : sql``}
    order by p.id
    limit ${PAGE_SIZE}`;
}

function editableValues(input: Partial<Record<Editable, string | null | undefined>>, keepNull: boolean) {
  const out: Partial<Record<Editable, string | null>> = {};
  for (const key of EDITABLE) {
    const v = input[key];
    if (v !== undefined && (keepNull || v !== null)) out[key] = v;
  }
  return out;
}

/**
 * Everything a registration must satisfy besides its shape: the rules across fields and the content of each
 * document, all reported at once (a bad CPF and a bad file in one answer). Fields left out are not judged, so a
 * body whose shape failed can still be checked on the rest. Answers the normalised document number and the
 * documents ready to store.
 */
export async function checkRegistration(input: Partial<PersonCreateInput>) {
  const bag = new ErrorBag();
  const absent = (["document_type", "document_number", "fiscal_country"] as const).filter((k) => input[k] == null);
  const documentNumber = checkPerson(
    {
      ...input,
      document_type: input.document_type ?? "cpf",
      document_number: input.document_number ?? "",
      fiscal_country: input.fiscal_country ?? "",
    },
    bag,
    new Set(absent),
  );
  const documents: PreparedDocument[] = [];
  for (const [i, doc] of (input.documents ?? []).entries()) {
    if (!doc) continue; // refused for its shape: already reported
    const prepared = await bag.collect(() => prepareDocument(doc, ["documents", i]));
    if (prepared) documents.push(prepared);
  }
  bag.throwIfAny();
  return { documentNumber, documents };
}

/**
 * POST /subject/people: registers a person, or updates the one with the same document pair (same id).
 * Null fields count as absent here; only PUT clears fields. `ask` is a boolean SQL expression over the saved
 * `people` row that a caller above wants answered in the same statement, returned as `asked` (the rails ask whether
 * money waits for this payer: one round trip instead of two on the busiest write of the API). A new person, and
 * the documents that come with anyone, take room in the company's quotas (`quotas.ts`); an update of a person
 * already registered is no new subject and is never refused for the subjects quota.
 */
export async function registerPerson(
  sql: Sql,
  companyId: string,
  input: PersonCreateInput,
  quotas: StoredQuotas,
  opts: { ask?: (tx: Tx) => postgres.Fragment } = {},
) {
  const { documentNumber, documents } = await checkRegistration(input);
  const fields = editableValues(input, false);
  const row = {
    id: newId(),
    company_id: companyId,
    document_type: input.document_type,
    document_number: documentNumber,
    ...fields,
  };
  const updates = Object.keys(fields) as Editable[];
  // `count`: a new person takes its room in this same statement, so a registration stays one round trip (with
  // documents, the transaction takes the room of everything at its end instead)
  const upsert = async (tx: Tx, count: boolean) => {
    const takeIfNew = count
      ? tx`where case when saved.created then ${takeRoom(tx, companyId, quotas, { people: 1 })} else true end`
      : tx``;
    const [saved] = await tx<(PersonRow & { created: boolean; asked: boolean })[]>`
      with saved as (
        insert into people ${tx(row)}
        on conflict (company_id, document_type, document_number)
        do update set ${tx(fields, updates)}, updated_at = now()
        returning *, (xmax = 0) as created, ${opts.ask ? opts.ask(tx) : tx`false`} as asked
      )
      select * from saved ${takeIfNew}`;
    return saved;
  };
  const use = documentsUsage(documents);
  // one statement needs no transaction; documents and the status change they may bring go with the person
  const saved = await withinQuotas(quotas, async () => {
    if (!documents.length) return await upsert(sql, true);
    if (use.documentBytes) await refuseEarly(sql, companyId, quotas, use);
    return await sql.begin(async (tx) => {
      const saved = await upsert(tx, false);
      for (const doc of documents) await insertDocument(tx, companyId, saved.id, doc);
      await reviewAfterDocuments(tx, companyId, saved.id);
      await claimRoom(tx, companyId, quotas, { ...use, people: saved.created ? 1 : 0 });
      return saved;
    });
  });
  // a new person without documents is complete as returned; otherwise read it back with its documents
  const person = saved.created && !documents.length
    ? { ...saved, documents: [] }
    : await getPerson(sql, companyId, saved.id);
  return { person, created: saved.created, asked: saved.asked };
}

/** The rules across fields, on the person an update would leave; throws every error at once. */
function checkPatch(current: PersonRow, patch: PersonUpdateInput) {
  const fields = editableValues(patch, true);
  const bag = new ErrorBag();
  checkPerson({ ...current, ...fields, fiscal_country: fields.fiscal_country ?? current.fiscal_country }, bag);
  bag.throwIfAny();
  return fields;
}

/** PUT /subject/people/:id: given fields change, omitted ones stay, null clears. */
export async function updatePerson(sql: Sql, companyId: string, id: string, patch: PersonUpdateInput) {
  return await sql.begin(async (tx) => {
    const [current] = await tx<PersonRow[]>`
      select * from people where company_id = ${companyId} and id = ${id} and kind = 'person' for update`;
    if (!current) throw notFound();
    const fields = checkPatch(current, patch);
    const keys = Object.keys(fields) as Editable[];
    if (keys.length) {
      await tx`update people set ${tx(fields, keys)}, updated_at = now()
               where company_id = ${companyId} and id = ${id}`;
    }
    return await getPerson(tx, companyId, id);
  });
}

/** The rules PUT /subject/people/:id applies, without writing (an unknown person is 404). */
export async function checkPersonPatch(sql: Sql, companyId: string, id: string, patch: PersonUpdateInput) {
  const [current] = await sql<PersonRow[]>`
    select * from people where company_id = ${companyId} and id = ${id} and kind = 'person'`;
  if (!current) throw notFound();
  checkPatch(current, patch);
}

/**
 * A reproved person whose documents now cover the mandatory set goes to back-office review
 * (docs/clearance.md, Documents arrive). Returns the new status when it changed.
 */
export async function reviewAfterDocuments(tx: TransactionSql, companyId: string, personId: string) {
  // Two uploads that together complete the set must not each miss the other's document: the row lock makes
  // them take turns, and the next statement sees what the first one committed. NO KEY UPDATE, not UPDATE,
  // because each upload already holds the KEY SHARE lock its document's foreign key took on this row.
  await tx`select 1 from people where company_id = ${companyId} and id = ${personId} for no key update`;
  const [person] = await tx<{ status: string; labels: string[] }[]>`
    select p.status, coalesce(array_agg(l) filter (where l is not null), '{}') as labels
    from people p
    left join documents d on d.person_id = p.id
    left join lateral unnest(d.labels) as l on true
    where p.company_id = ${companyId} and p.id = ${personId}
    group by p.status`;
  if (person?.status !== "reproved" || missingMandatoryDocuments(person.labels).length) return null;
  await setStatus(tx, companyId, personId, { status: "waiting_approval", reason: "" });
  return "waiting_approval" as const;
}
