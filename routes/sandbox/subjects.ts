/** Sandbox routes that play the back office on a subject: approve, reprove, ask for documents (docs/sandbox.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { getSubject, presentSubject } from "../../domain/subjects/subjects.ts";
import { approveAndRelease } from "../../domain/rails/transactions.ts";
import { reproveSubject, requestDocuments } from "../../domain/subjects/status.ts";
import type { TransactionSql } from "../../domain/infra/db.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import { CompanyCustomer, Person } from "../subjects/schemas.ts";
import { ReproveBody, RequestDocumentsBody, SANDBOX_EXAMPLES } from "./schemas.ts";

const tags = ["Sandbox"];
const responses = {
  201: jsonResponse(
    "The subject (person or company) after the decision",
    z.object({ data: z.union([Person, CompanyCustomer]) }),
  ),
  ...bodyErrorResponses,
};

const approve = createRoute({
  operationId: "approveSandboxSubject",
  method: "post",
  path: "/api/sandbox/subjects/{id}/approve",
  tags,
  summary: "Back office approves the subject: subject_approved; held money moves on",
  request: { params: IdParam },
  responses,
});

const reprove = createRoute({
  operationId: "reproveSandboxSubject",
  method: "post",
  path: "/api/sandbox/subjects/{id}/reprove",
  tags,
  summary: "Back office rejects documents: subject_reproved",
  request: { params: IdParam, body: jsonBody(ReproveBody, SANDBOX_EXAMPLES.reprove) },
  responses,
});

const askDocuments = createRoute({
  operationId: "requestSandboxSubjectDocuments",
  method: "post",
  path: "/api/sandbox/subjects/{id}/request_documents",
  tags,
  summary: "Back office asks for documents, status unchanged: document_required",
  request: { params: IdParam, body: jsonBody(RequestDocumentsBody, SANDBOX_EXAMPLES.requestDocuments) },
  responses,
});

export function sandboxSubjectRoutes({ sql }: Deps) {
  /** Runs the decision and answers the person as the detail endpoint shows it. */
  const decide = async (companyId: string, id: string, change: (tx: TransactionSql) => Promise<unknown>) => {
    const person = await sql.begin(async (tx) => {
      await change(tx);
      return await getSubject(tx, companyId, id);
    });
    return { data: presentSubject(person, { detail: true }) };
  };
  return newRouter()
    .openapi(approve, async (c) => {
      const { id } = c.req.valid("param");
      const companyId = c.get("companyId");
      return c.json(await decide(companyId, id, (tx) => approveAndRelease(tx, companyId, id)), 201);
    })
    .openapi(reprove, async (c) => {
      const { id } = c.req.valid("param");
      const companyId = c.get("companyId");
      const body = c.req.valid("json");
      return c.json(await decide(companyId, id, (tx) => reproveSubject(tx, companyId, id, body)), 201);
    })
    .openapi(askDocuments, async (c) => {
      const { id } = c.req.valid("param");
      const companyId = c.get("companyId");
      const { required_documents } = c.req.valid("json");
      return c.json(await decide(companyId, id, (tx) => requestDocuments(tx, companyId, id, required_documents)), 201);
    });
}
