/**
 * The routes of both kinds of subject, people and company customers: register, list, update and detail, written once
 * and built per kind from what sets the kind apart.
 */

import { createRoute, z } from "@hono/zod-openapi";
import { registerPayer } from "../../domain/rails/bank_transactions.ts";
import { checkRegistration, personUpdates } from "../../domain/subjects/people.ts";
import { checkCompanyRegistration, companyUpdates, registerCompany } from "../../domain/subjects/companies.ts";
import { getSubjectOf, type Kind, listSubjects, present, type SubjectRow } from "../../domain/subjects/subjects.ts";
import type { Sql } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import type { StoredQuotas } from "../../domain/subjects/quotas.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import {
  bodyErrorResponses,
  errorResponses,
  IdParam,
  jsonBody,
  jsonResponse,
  LastIdQuery,
} from "../openapi/schemas.ts";
import {
  COMPANY_CREATE_EXAMPLE,
  COMPANY_UPDATE_EXAMPLE,
  CompanyCreateBody,
  CompanyCustomer,
  CompanyUpdateBody,
  Person,
  PERSON_CREATE_EXAMPLE,
  PERSON_UPDATE_EXAMPLE,
  PersonCreateBody,
  PersonUpdateBody,
} from "./schemas.ts";

/** What a body holds under its key (`{person: {...}}`), as the domain takes it. */
type Inner<B extends z.ZodType, Key extends string> = z.output<B> extends Record<Key, infer I> ? I : never;

/**
 * The four routes of a kind of subject (register, list, update, detail), built once from what sets the kind apart:
 * its path and names in the OpenAPI document, its schemas, and the domain calls that register, read, update and
 * present it. Written per kind, each call is type-checked against that kind's schemas.
 */
type KindRoutes<K extends Kind, Key extends string, C extends z.ZodType, U extends z.ZodType, S extends z.ZodType> = {
  kind: K;
  path: string;
  tag: string;
  /** What the document calls one, several, and the identity a second registration is matched on. */
  noun: string;
  plural: string;
  identity: string;
  operationIds: { create: string; list: string; update: string; detail: string };
  /** The key that wraps a body: `{person: {...}}`. */
  key: Key;
  shown: S;
  create: { body: C; example: z.input<C> };
  update: { body: U; example: z.input<U> };
  register: (sql: Sql, companyId: string, input: Inner<C, Key>, quotas: StoredQuotas) => Promise<
    { subject: SubjectRow<K>; created: boolean }
  >;
  checkRegistration: (input: Partial<Inner<C, Key>>) => unknown;
  updates: {
    update: (sql: Sql, companyId: string, id: string, patch: Inner<U, Key>) => Promise<SubjectRow<K>>;
    check: (sql: Sql, companyId: string, id: string, patch: Partial<Inner<U, Key>>) => Promise<unknown>;
  };
  /** `present`, typed against the kind's object schema, so the two cannot drift apart. */
  present: (row: SubjectRow<K>, opts?: { detail?: boolean }) => z.output<S>;
};

/** The routes of one kind; the handlers only parse, call the domain and shape the answer. */
function kindRoutes<K extends Kind, Key extends string, C extends z.ZodType, U extends z.ZodType, S extends z.ZodType>(
  kind: KindRoutes<K, Key, C, U, S>,
) {
  const { noun, tag } = kind;
  const Noun = noun[0].toUpperCase() + noun.slice(1);
  const Envelope = z.object({ data: kind.shown });
  const item = `${kind.path}/{id}`;
  const create = createRoute({
    operationId: kind.operationIds.create,
    method: "post",
    path: kind.path,
    tags: [tag],
    summary: `Register a ${noun}, or update the one with the same ${kind.identity}`,
    request: { body: jsonBody(kind.create.body, kind.create.example) },
    responses: {
      201: jsonResponse(`${Noun} created`, Envelope),
      200: jsonResponse(`Existing ${noun} (same ${kind.identity}) updated`, Envelope),
      ...bodyErrorResponses,
    },
  });
  const list = createRoute({
    operationId: kind.operationIds.list,
    method: "get",
    path: kind.path,
    tags: [tag],
    summary: `List ${kind.plural}, 100 per page, ascending`,
    request: { query: LastIdQuery },
    responses: {
      200: jsonResponse(`A page of ${kind.plural}`, z.object({ data: z.array(kind.shown) })),
      ...errorResponses,
    },
  });
  const update = createRoute({
    operationId: kind.operationIds.update,
    method: "put",
    path: item,
    tags: [tag],
    summary: `Update a ${noun}; omitted fields are left unchanged`,
    request: { params: IdParam, body: jsonBody(kind.update.body, kind.update.example) },
    responses: { 200: jsonResponse(`${Noun} updated`, Envelope), ...bodyErrorResponses },
  });
  const detail = createRoute({
    operationId: kind.operationIds.detail,
    method: "get",
    path: item,
    tags: [tag],
    summary: `${Noun} detail, with status_reason`,
    request: { params: IdParam },
    responses: { 200: jsonResponse(`The ${noun}`, Envelope), ...errorResponses },
  });
  // what a validated body holds under the kind's key ({} when a failed shape left nothing there)
  const inner = <B extends z.ZodType>(body: unknown) =>
    ((body as Record<string, unknown>)[kind.key] ?? {}) as Inner<B, Key>;
  // Hono cannot relate a generic schema to its answer's type; the answers are checked per kind through `present`
  const answer = (data: unknown) => ({ data }) as never;

  return ({ sql, config }: Deps) =>
    newRouter()
      .openapi(create, async (c) => {
        const body = inner<C>(c.req.valid("json"));
        const { subject, created } = await kind.register(sql, c.get("companyId"), body, config.limits);
        return c.json(answer(kind.present(subject)), created ? 201 : 200);
      }, alsoCheck(kind.create.body, (body) => kind.checkRegistration(inner<C>(body))))
      .openapi(list, async (c) => {
        const rows = await listSubjects(sql, kind.kind, c.get("companyId"), c.req.valid("query").last_id);
        return c.json(answer(rows.map((r) => kind.present(r))), 200);
      })
      .openapi(
        update,
        async (c) => {
          const { id } = c.req.valid("param");
          const row = await kind.updates.update(sql, c.get("companyId"), id, inner<U>(c.req.valid("json")));
          return c.json(answer(kind.present(row)), 200);
        },
        alsoCheck(
          kind.update.body,
          (body, c) => kind.updates.check(sql, c.get("companyId"), c.req.param("id")!, inner<U>(body)),
        ),
      )
      .openapi(detail, async (c) => {
        const row = await getSubjectOf(sql, kind.kind, c.get("companyId"), c.req.valid("param").id);
        return c.json(answer(kind.present(row, { detail: true })), 200);
      });
}

export const peopleRoutes = kindRoutes({
  kind: "person",
  path: "/api/v1/subject/people",
  tag: "People",
  noun: "person",
  plural: "persons",
  identity: "document number",
  operationIds: { create: "registerPerson", list: "listPeople", update: "updatePerson", detail: "getPerson" },
  key: "person",
  shown: Person,
  create: { body: PersonCreateBody, example: PERSON_CREATE_EXAMPLE },
  update: { body: PersonUpdateBody, example: PERSON_UPDATE_EXAMPLE },
  // a payer's money may be waiting for this person: registerPayer identifies it
  register: registerPayer,
  checkRegistration,
  updates: personUpdates,
  present,
});

export const companyRoutes = kindRoutes({
  kind: "company",
  path: "/api/v1/subject/companies",
  tag: "Company customers",
  noun: "company customer",
  plural: "company customers",
  identity: "tax id",
  operationIds: {
    create: "registerCompanyCustomer",
    list: "listCompanyCustomers",
    update: "updateCompanyCustomer",
    detail: "getCompanyCustomer",
  },
  key: "company",
  shown: CompanyCustomer,
  create: { body: CompanyCreateBody, example: COMPANY_CREATE_EXAMPLE },
  update: { body: CompanyUpdateBody, example: COMPANY_UPDATE_EXAMPLE },
  register: registerCompany,
  checkRegistration: checkCompanyRegistration,
  updates: companyUpdates,
  present,
});
