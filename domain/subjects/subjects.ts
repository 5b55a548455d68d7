/**
 * What people and company customers share: one `people` table told apart by `kind` (so every foreign key to a
 * subject takes either; docs/architecture.md, "Layers"), one row type, one presenter, the same
 * register/update/get/list SQL. What sets a kind apart is declared in `KINDS`; its own rules (a person's documents
 * and cross-field checks, a company's fiscal country) stay in `people.ts` and `companies.ts`.
 */

import type postgres from "postgres";
import type { Sql, SqlOrTransaction } from "../infra/db.ts";
import { ErrorBag, notFound } from "../basics/errors.ts";
import { newId } from "../basics/ids.ts";
import { naiveUtc } from "../basics/time.ts";
import type { DocumentSummary } from "./documents.ts";
import type { DocumentType } from "./person_rules.ts";
import type { CompanyDocumentType } from "./company_rules.ts";
import { type StoredQuotas, takeRoom } from "./quotas.ts";

export const PAGE_SIZE = 100;

const PHONE = ["phone_country_code", "phone_area_code", "phone_number"] as const;
const ADDRESS = [
  "address_street",
  "address_number",
  "address_complement",
  "address_neighborhood",
  "address_postal_code",
  "address_city",
  "address_state",
  "address_country",
] as const;

/**
 * Per kind: `editable`, the columns a client may set besides the identity pair (document type and number);
 * `shown`, the fields of the subject's object between its clearance levels and its references, in the order the
 * interface shows them (a person's object has no `website`, although a person may set one).
 */
export const KINDS = {
  person: {
    editable: [
      "social_name",
      "fiscal_country",
      "rfc_pf",
      "email",
      "website",
      ...PHONE,
      "birth_date",
      "net_monthly_average_income",
      ...ADDRESS,
    ],
    shown: [
      "social_name",
      "document_type",
      "document_number",
      "fiscal_country",
      "rfc_pf",
      "email",
      ...PHONE,
      "birth_date",
      "net_monthly_average_income",
      ...ADDRESS,
    ],
  },
  company: {
    editable: ["social_name", "trade_name", "fiscal_country", "email", "website", ...PHONE, ...ADDRESS],
    shown: [
      "social_name",
      "trade_name",
      "document_type",
      "document_number",
      "fiscal_country",
      "email",
      "website",
      ...PHONE,
      ...ADDRESS,
    ],
  },
} as const;

export type Kind = keyof typeof KINDS;
type DocumentTypeOf = { person: DocumentType; company: CompanyDocumentType };
export type Editable<K extends Kind> = typeof KINDS[K]["editable"][number];
type Shown<K extends Kind> = typeof KINDS[K]["shown"][number];

/** A subject's row with its documents, as `selectSubjects` reads it. */
export type SubjectRow<K extends Kind> =
  & {
    id: string;
    company_id: string;
    kind: K;
    status: "approved" | "reproved" | "waiting_approval";
    status_reason: string;
    clearance_level: number;
    required_clearance_level: number;
    document_type: DocumentTypeOf[K];
    document_number: string;
    inserted_at: Date;
    updated_at: Date;
    documents: DocumentSummary[];
  }
  & { [F in Editable<K>]: string | null }
  & { social_name: string; fiscal_country: string };

/** A subject of either kind, as the rails and the back office see it: the person or the company customer. */
export type AnySubjectRow = SubjectRow<"person"> | SubjectRow<"company">;

/** A registration as a client sends it, already shaped: the identity pair, the name, the country, the rest optional. */
export type SubjectCreateInput<K extends Kind> =
  & { document_type: DocumentTypeOf[K]; document_number: string; social_name: string; fiscal_country: string }
  & { [F in Exclude<Editable<K>, "social_name" | "fiscal_country">]?: string | null };

/** An update: omitted fields stay, `null` clears. The identity pair is refused by the request schema. */
export type SubjectUpdateInput<K extends Kind> = { [F in Editable<K>]?: string | null };

/** The given editable fields of one kind (omitted ones left out; `null` kept only when it clears). */
export type EditableValues<K extends Kind> = Partial<Record<Editable<K>, string | null>>;

export type PresentedSubject<K extends Kind> =
  & { id: string; status: SubjectRow<K>["status"]; status_reason?: string }
  & { clearance_level: number; required_clearance_level: number }
  & { [F in Shown<K>]: SubjectRow<K>[F] }
  & { references: unknown[]; documents: DocumentSummary[]; inserted_at: string; updated_at: string };

/** The person or company-customer object of every answer; `status_reason` only on the detail endpoint. */
export function present<K extends Kind>(row: SubjectRow<K>, opts: { detail?: boolean } = {}): PresentedSubject<K> {
  const fields = row as unknown as Record<string, unknown>;
  const shown: readonly string[] = KINDS[row.kind].shown;
  return {
    id: row.id,
    status: row.status,
    ...(opts.detail ? { status_reason: row.status === "reproved" ? row.status_reason : "" } : {}),
    clearance_level: row.clearance_level,
    required_clearance_level: row.required_clearance_level,
    ...Object.fromEntries(shown.map((f) => [f, fields[f]])),
    references: [],
    documents: row.documents,
    inserted_at: naiveUtc(row.inserted_at),
    updated_at: naiveUtc(row.updated_at),
  } as unknown as PresentedSubject<K>;
}

/** A subject of either kind as its own routes show it. */
export function presentSubject(s: AnySubjectRow, opts: { detail?: boolean } = {}) {
  return s.kind === "company" ? present(s, opts) : present(s, opts);
}

/** A subject (person or company) with its documents (newest last) in one round trip. */
export function selectSubjects(sql: SqlOrTransaction) {
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

/**
 * A subject of the company; with a kind, only of that kind (a person's id is not found on the company routes, nor a
 * company's on the people routes).
 */
export async function getSubject(
  sql: SqlOrTransaction,
  companyId: string,
  id: string,
  kind?: Kind,
): Promise<AnySubjectRow> {
  const [row] = await sql<AnySubjectRow[]>`
    ${selectSubjects(sql)}
    where p.company_id = ${companyId} and p.id = ${id} ${kind ? sql`and p.kind = ${kind}` : sql``}`;
  if (!row) throw notFound();
  return row;
}

/** A row its query read with `kind = K`, typed as such (the types cannot follow the SQL). */
const ofKind = <K extends Kind>(row: AnySubjectRow) => row as unknown as SubjectRow<K>;

/** `getSubject` of one kind, typed as such. */
export const getSubjectOf = async <K extends Kind>(sql: SqlOrTransaction, kind: K, companyId: string, id: string) =>
  ofKind<K>(await getSubject(sql, companyId, id, kind));

/** A page of the company's subjects of one kind, by id after the cursor. */
export async function listSubjects<K extends Kind>(
  sql: Sql,
  kind: K,
  companyId: string,
  lastId: string | undefined,
): Promise<SubjectRow<K>[]> {
  const rows = await sql<AnySubjectRow[]>`
    ${selectSubjects(sql)}
    where p.company_id = ${companyId} and p.kind = ${kind} ${lastId ? sql`and p.id > ${lastId}` : sql``}
    order by p.id
    limit ${PAGE_SIZE}`;
  return rows.map((row) => ofKind<K>(row));
}

/** The editable fields of `kind` that an update gives, a `null` among them (it clears the field). */
function editableValues<K extends Kind>(kind: K, input: SubjectUpdateInput<K>): EditableValues<K> {
  const given = input as Partial<Record<string, string | null>>;
  const out: Partial<Record<string, string | null>> = {};
  for (const key of KINDS[kind].editable) {
    const v = given[key];
    if (v !== undefined) out[key] = v;
  }
  return out as EditableValues<K>;
}

/**
 * Every column a registration writes besides the identity: both kinds' editable ones (a kind's own are null for the
 * other), so every registration sends the same statement text, prepared once, and postgres.js builds no column list
 * from the given fields (docs/performance.md, "What changed").
 */
const WRITTEN: readonly string[] = [...new Set<string>([...KINDS.person.editable, ...KINDS.company.editable])];
const EDITABLE = { person: new Set<string>(KINDS.person.editable), company: new Set<string>(KINDS.company.editable) };
/**
 * A second registration of the same document pair: a given field replaces the stored one, an absent or null one
 * stays (only PUT clears). Made of the constant column names above only; the values are the insert's parameters.
 */
const UPDATE_GIVEN = WRITTEN.map((c) => `${c} = coalesce(excluded.${c}, people.${c})`).join(", ");

/**
 * The upsert of a registration: a new subject, or the given fields of the one with the same document pair (same
 * id), its number as the kind's rules normalised it. With `quotas`, a new subject takes its room in the company's
 * subjects quota in this same statement (`quotas.ts`), so a registration stays one round trip; an update is never
 * refused for it. `ask` is a boolean SQL expression over the saved `people` row that a caller wants answered in the
 * same statement, returned as `asked`. The row comes back without its documents.
 */
export async function saveSubject<K extends Kind>(
  tx: SqlOrTransaction,
  kind: K,
  companyId: string,
  input: SubjectCreateInput<K>,
  documentNumber: string,
  opts: { quotas?: StoredQuotas; ask?: (tx: SqlOrTransaction) => postgres.Fragment } = {},
) {
  const given = input as Partial<Record<string, string | null>>;
  const editable = EDITABLE[kind];
  const row: Record<string, string | null> = {
    id: newId(),
    company_id: companyId,
    kind,
    document_type: input.document_type,
    document_number: documentNumber,
  };
  for (const column of WRITTEN) row[column] = editable.has(column) ? given[column] ?? null : null;
  const takeIfNew = opts.quotas
    ? tx`where case when saved.created then ${takeRoom(tx, companyId, opts.quotas, { people: 1 })} else true end`
    : tx``;
  const [saved] = await tx<(Omit<AnySubjectRow, "documents"> & { created: boolean; asked: boolean })[]>`
    with saved as (
      insert into people ${tx(row)}
      on conflict (company_id, document_type, document_number)
      do update set ${tx.unsafe(UPDATE_GIVEN)}, updated_at = now()
      returning *, (xmax = 0) as created, ${opts.ask ? opts.ask(tx) : tx`false`} as asked
    )
    select * from saved ${takeIfNew}`;
  return saved as unknown as Omit<SubjectRow<K>, "documents"> & { created: boolean; asked: boolean };
}

/**
 * The PUT of one kind with its own rules (`check`): given fields change, omitted ones stay, null clears; the
 * identity pair cannot change; every error is thrown at once. `update` writes, under a lock on the row so two
 * updates judge each other's result; `check` judges without writing, for the errors of a body whose shape failed.
 * An unknown subject of that kind is 404.
 */
export function subjectUpdates<K extends Kind>(kind: K, check: PatchCheck<K>) {
  const judge = (current: SubjectRow<K>, patch: SubjectUpdateInput<K>) => {
    const fields = editableValues(kind, patch);
    const bag = new ErrorBag();
    check(current, fields, bag);
    bag.throwIfAny();
    return fields as Record<string, string | null>;
  };
  return {
    async update(sql: Sql, companyId: string, id: string, patch: SubjectUpdateInput<K>): Promise<SubjectRow<K>> {
      const updated = await sql.begin(async (tx) => {
        const fields = judge(await currentRow(tx, kind, companyId, id, true), patch);
        const keys = Object.keys(fields);
        if (keys.length) {
          await tx`update people set ${tx(fields, keys)}, updated_at = now()
                   where company_id = ${companyId} and id = ${id} and kind = ${kind}`;
        }
        return await getSubject(tx, companyId, id, kind);
      });
      return ofKind<K>(updated);
    },
    async check(sql: Sql, companyId: string, id: string, patch: SubjectUpdateInput<K>) {
      judge(await currentRow(sql, kind, companyId, id, false), patch);
    },
  };
}

/** What a kind's own rules say of the subject an update would leave: errors go into the bag. */
export type PatchCheck<K extends Kind> = (current: SubjectRow<K>, fields: EditableValues<K>, bag: ErrorBag) => void;

/** The stored row an update starts from (without documents), locked for the update itself. */
async function currentRow<K extends Kind>(
  sql: SqlOrTransaction,
  kind: K,
  companyId: string,
  id: string,
  lock: boolean,
) {
  const [row] = await sql<AnySubjectRow[]>`
    select * from people where company_id = ${companyId} and id = ${id} and kind = ${kind}
    ${lock ? sql`for update` : sql``}`;
  if (!row) throw notFound();
  return ofKind<K>(row);
}
