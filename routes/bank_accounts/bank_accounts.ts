/**
 * The bank account routes: a customer's accounts under `/api/v1/subject/{id}` and the company's international ones;
 * the shape is checked by schemas.ts, each country's rules by the domain.
 */

import { createRoute, z } from "@hono/zod-openapi";
import {
  checkSubjectBankAccountPatch,
  createBankAccount,
  getSubjectBankAccount,
  listSubjectBankAccounts,
  presentBankAccount,
  updateSubjectBankAccount,
  validateBankAccountInput,
} from "../../domain/bank_accounts/bank_accounts.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import {
  BANK_ACCOUNT_UPDATE_EXAMPLE,
  BankAccount,
  BankAccountBody,
  INTERNATIONAL_BANK_ACCOUNT_EXAMPLE,
  SUBJECT_BANK_ACCOUNT_EXAMPLE,
  SubjectBankAccountParams,
} from "./schemas.ts";
import { bodyErrorResponses, errorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";

const tags = ["Bank accounts"];
const Envelope = z.object({ data: BankAccount });

const create = createRoute({
  operationId: "createSubjectBankAccount",
  method: "post",
  path: "/api/v1/subject/{id}/bank_accounts",
  tags,
  summary: "Register a customer bank account (BRL Brazil, MXN Mexico, COP Colombia)",
  request: { params: IdParam, body: jsonBody(BankAccountBody, SUBJECT_BANK_ACCOUNT_EXAMPLE) },
  responses: { 201: jsonResponse("Bank account registered", Envelope), ...bodyErrorResponses },
});

const list = createRoute({
  operationId: "listSubjectBankAccounts",
  method: "get",
  path: "/api/v1/subject/{id}/bank_accounts",
  tags,
  summary: "A customer's bank accounts",
  request: { params: IdParam },
  responses: {
    200: jsonResponse("The accounts, oldest first", z.object({ data: z.array(BankAccount) })),
    ...errorResponses,
  },
});

const update = createRoute({
  operationId: "updateSubjectBankAccount",
  method: "put",
  path: "/api/v1/subject/{id}/bank_accounts/{bank_account_id}",
  tags,
  summary: "Update a bank account; omitted fields are left unchanged",
  request: { params: SubjectBankAccountParams, body: jsonBody(BankAccountBody, BANK_ACCOUNT_UPDATE_EXAMPLE) },
  responses: { 200: jsonResponse("Bank account updated", Envelope), ...bodyErrorResponses },
});

const detail = createRoute({
  operationId: "getSubjectBankAccount",
  method: "get",
  path: "/api/v1/subject/{id}/bank_accounts/{bank_account_id}",
  tags,
  summary: "Bank account detail",
  request: { params: SubjectBankAccountParams },
  responses: { 200: jsonResponse("The account", Envelope), ...errorResponses },
});

const createInternational = createRoute({
  operationId: "createInternationalBankAccount",
  method: "post",
  path: "/api/v1/bank_accounts",
  tags,
  summary: "Register an international account of the company (USD or EUR)",
  request: { body: jsonBody(BankAccountBody, INTERNATIONAL_BANK_ACCOUNT_EXAMPLE) },
  responses: { 201: jsonResponse("Bank account registered", Envelope), ...bodyErrorResponses },
});

export function bankAccountRoutes({ sql, config }: Deps) {
  // which fields a country requires and their formats are the domain's: a body refused for its shape hears of them
  const countryRules = (scope: "subject" | "international") =>
    alsoCheck(BankAccountBody, (body) => validateBankAccountInput(body.bank_account ?? {}, { scope }));
  const updateRules = alsoCheck(BankAccountBody, (body, c) =>
    checkSubjectBankAccountPatch(
      sql,
      c.get("companyId"),
      c.req.param("id")!,
      c.req.param("bank_account_id")!,
      body.bank_account ?? {},
    ));
  return newRouter()
    .openapi(create, async (c) => {
      const { id } = c.req.valid("param");
      const row = await createBankAccount(sql, c.get("companyId"), id, c.req.valid("json").bank_account, config.limits);
      return c.json({ data: presentBankAccount(row, { onCreate: true }) }, 201);
    }, countryRules("subject"))
    .openapi(list, async (c) => {
      const rows = await listSubjectBankAccounts(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: rows.map((r) => presentBankAccount(r)) }, 200);
    })
    .openapi(update, async (c) => {
      const { id, bank_account_id } = c.req.valid("param");
      const patch = c.req.valid("json").bank_account;
      const row = await updateSubjectBankAccount(sql, c.get("companyId"), id, bank_account_id, patch);
      return c.json({ data: presentBankAccount(row) }, 200);
    }, updateRules)
    .openapi(detail, async (c) => {
      const { id, bank_account_id } = c.req.valid("param");
      const row = await getSubjectBankAccount(sql, c.get("companyId"), id, bank_account_id);
      return c.json({ data: presentBankAccount(row) }, 200);
    })
    .openapi(createInternational, async (c) => {
      const row = await createBankAccount(
        sql,
        c.get("companyId"),
        null,
        c.req.valid("json").bank_account,
        config.limits,
      );
      return c.json({ data: presentBankAccount(row, { onCreate: true }) }, 201);
    }, countryRules("international"));
}
