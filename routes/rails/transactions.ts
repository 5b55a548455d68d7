/** A subject's transactions, 100 a page, and what it transacted this calendar year in each currency. */

import { createRoute, z } from "@hono/zod-openapi";
import {
  listSubjectTransactions,
  presentTransaction,
  subjectTransactionValues,
} from "../../domain/rails/transactions.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { errorResponses, IdParam, jsonResponse, LastIdQuery } from "../openapi/schemas.ts";
import { KIND_FILTER, kindOf, sameKind, Transaction, TransactionValue } from "./schemas.ts";

const tags = ["Transactions"];

/** The page cursor and the kind filter, `kind` by its name here and `transaction_kind` as its alias. */
const ListQuery = LastIdQuery.extend(KIND_FILTER).superRefine(sameKind("transaction_kind"));

const list = createRoute({
  operationId: "listSubjectTransactions",
  method: "get",
  path: "/api/v1/subject/{id}/transactions",
  tags,
  summary: "Transactions of a subject in local currency, oldest first, 100 per page",
  request: { params: IdParam, query: ListQuery },
  responses: {
    200: jsonResponse("The subject's transactions", z.object({ data: z.array(Transaction) })),
    ...errorResponses,
  },
});

const values = createRoute({
  operationId: "getSubjectTransactionValues",
  method: "get",
  path: "/api/v1/subject/{id}/transaction_values",
  tags,
  summary: "Value transacted by a subject this calendar year (UTC), one row per currency",
  request: { params: IdParam },
  responses: {
    200: jsonResponse("Totals per currency", z.object({ data: z.array(TransactionValue) })),
    ...errorResponses,
  },
});

export function transactionRoutes({ sql }: Deps) {
  return newRouter()
    .openapi(list, async (c) => {
      const query = c.req.valid("query");
      const rows = await listSubjectTransactions(sql, c.get("companyId"), c.req.valid("param").id, {
        lastId: query.last_id,
        kind: kindOf(query),
      });
      return c.json({ data: rows.map(presentTransaction) }, 200);
    })
    .openapi(values, async (c) => {
      const rows = await subjectTransactionValues(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: rows }, 200);
    });
}
