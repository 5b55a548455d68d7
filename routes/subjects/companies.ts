import { createRoute, z } from "@hono/zod-openapi";
import {
  checkCompanyRegistration,
  getCompany,
  listCompanies,
  presentCompany,
  registerCompany,
  updateCompany,
} from "../../domain/subjects/companies.ts";
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
import {
  COMPANY_CREATE_EXAMPLE,
  COMPANY_UPDATE_EXAMPLE,
  CompanyCreateBody,
  CompanyCustomer,
  CompanyUpdateBody,
} from "./company_schemas.ts";

const tags = ["Company customers"];
const Envelope = z.object({ data: CompanyCustomer });

const create = createRoute({
  operationId: "registerCompanyCustomer",
  method: "post",
  path: "/api/v1/subject/companies",
  tags,
  summary: "Register a company customer, or update the one with the same tax id",
  request: { body: jsonBody(CompanyCreateBody, COMPANY_CREATE_EXAMPLE) },
  responses: {
    201: jsonResponse("Company customer created", Envelope),
    200: jsonResponse("Existing company customer (same tax id) updated", Envelope),
    ...bodyErrorResponses,
  },
});

const list = createRoute({
  operationId: "listCompanyCustomers",
  method: "get",
  path: "/api/v1/subject/companies",
  tags,
  summary: "List company customers, 100 per page, ascending",
  request: { query: LastIdQuery },
  responses: { 200: jsonResponse("A page", z.object({ data: z.array(CompanyCustomer) })), ...errorResponses },
});

const update = createRoute({
  operationId: "updateCompanyCustomer",
  method: "put",
  path: "/api/v1/subject/companies/{id}",
  tags,
  summary: "Update a company customer; omitted fields are left unchanged",
  request: { params: IdParam, body: jsonBody(CompanyUpdateBody, COMPANY_UPDATE_EXAMPLE) },
  responses: { 200: jsonResponse("Company customer updated", Envelope), ...bodyErrorResponses },
});

const detail = createRoute({
  operationId: "getCompanyCustomer",
  method: "get",
  path: "/api/v1/subject/companies/{id}",
  tags,
  summary: "Company customer detail, with status_reason",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The company customer", Envelope), ...errorResponses },
});

export function companyRoutes({ sql, config }: Deps) {
  return newRouter()
    .openapi(create, async (c) => {
      const { company, created } = await registerCompany(
        sql,
        c.get("companyId"),
        c.req.valid("json").company,
        config.limits,
      );
      return c.json({ data: presentCompany(company) }, created ? 201 : 200);
    }, alsoCheck(CompanyCreateBody, (body) => checkCompanyRegistration(body.company ?? {})))
    .openapi(list, async (c) => {
      const rows = await listCompanies(sql, c.get("companyId"), c.req.valid("query").last_id);
      return c.json({ data: rows.map((r) => presentCompany(r)) }, 200);
    })
    .openapi(update, async (c) => {
      const { id } = c.req.valid("param");
      const row = await updateCompany(sql, c.get("companyId"), id, c.req.valid("json").company);
      return c.json({ data: presentCompany(row) }, 200);
    })
    .openapi(detail, async (c) => {
      const row = await getCompany(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: presentCompany(row, { detail: true }) }, 200);
    });
}
