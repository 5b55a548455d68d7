import { createRoute, z } from "@hono/zod-openapi";
import { registerPayer } from "../../domain/rails/bank_transactions.ts";
import {
  checkPersonPatch,
  checkRegistration,
  getPerson,
  listPeople,
  presentPerson,
  updatePerson,
} from "../../domain/subjects/people.ts";
import type { Deps } from "../../domain/infra/deps.ts";
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
import { Person, PERSON_CREATE_EXAMPLE, PERSON_UPDATE_EXAMPLE, PersonCreateBody, PersonUpdateBody } from "./schemas.ts";

const tags = ["People"];
const PersonEnvelope = z.object({ data: Person });

const create = createRoute({
  operationId: "registerPerson",
  method: "post",
  path: "/api/v1/subject/people",
  tags,
  summary: "Register a person, or update the one with the same document number",
  request: { body: jsonBody(PersonCreateBody, PERSON_CREATE_EXAMPLE) },
  responses: {
    201: jsonResponse("Person created", PersonEnvelope),
    200: jsonResponse("Existing person (same document) updated", PersonEnvelope),
    ...bodyErrorResponses,
  },
});

const list = createRoute({
  operationId: "listPeople",
  method: "get",
  path: "/api/v1/subject/people",
  tags,
  summary: "List persons, 100 per page, ascending",
  request: { query: LastIdQuery },
  responses: { 200: jsonResponse("A page of persons", z.object({ data: z.array(Person) })), ...errorResponses },
});

const update = createRoute({
  operationId: "updatePerson",
  method: "put",
  path: "/api/v1/subject/people/{id}",
  tags,
  summary: "Update a person; omitted fields are left unchanged",
  request: { params: IdParam, body: jsonBody(PersonUpdateBody, PERSON_UPDATE_EXAMPLE) },
  responses: { 200: jsonResponse("Person updated", PersonEnvelope), ...bodyErrorResponses },
});

const detail = createRoute({
  operationId: "getPerson",
  method: "get",
  path: "/api/v1/subject/people/{id}",
  tags,
  summary: "Person detail, with status_reason",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The person", PersonEnvelope), ...errorResponses },
});

export function peopleRoutes({ sql, config }: Deps) {
  return newRouter()
    .openapi(create, async (c) => {
      const { person, created } = await registerPayer(
        sql,
        c.get("companyId"),
        c.req.valid("json").person,
        config.limits,
      );
      return c.json({ data: presentPerson(person) }, created ? 201 : 200);
    }, alsoCheck(PersonCreateBody, (body) => checkRegistration(body.person ?? {})))
    .openapi(list, async (c) => {
      const people = await listPeople(sql, c.get("companyId"), c.req.valid("query").last_id);
      return c.json({ data: people.map((p) => presentPerson(p)) }, 200);
    })
    .openapi(
      update,
      async (c) => {
        const { id } = c.req.valid("param");
        const person = await updatePerson(sql, c.get("companyId"), id, c.req.valid("json").person);
        return c.json({ data: presentPerson(person) }, 200);
      },
      alsoCheck(
        PersonUpdateBody,
        (body, c) => checkPersonPatch(sql, c.get("companyId"), c.req.param("id")!, body.person ?? {}),
      ),
    )
    .openapi(detail, async (c) => {
      const person = await getPerson(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentPerson(person, { detail: true }) }, 200);
    });
}
