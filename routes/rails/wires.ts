/** The wire correction: a new destination account for a wire waiting for correction, which is then retried. */

import { createRoute, type z } from "@hono/zod-openapi";
import { checkWireCorrection, correctWire, presentWire } from "../../domain/rails/wires.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { newRouter } from "../openapi/router.ts";
import { alsoCheck } from "../openapi/validation.ts";
import { BankAccountBody, SUBJECT_BANK_ACCOUNT_EXAMPLE } from "../bank_accounts/schemas.ts";
import { bodyErrorResponses, IdParam, jsonBody, jsonResponse } from "../openapi/schemas.ts";
import { Wire } from "./wire_schemas.ts";

const correct = createRoute({
  operationId: "correctWireBankAccount",
  method: "put",
  path: "/api/v1/wires/{id}/update_bank_account",
  tags: ["Wires"],
  summary: "Correct the destination account of a wire waiting for correction; the wire is then retried",
  request: { params: IdParam, body: jsonBody(BankAccountBody, SUBJECT_BANK_ACCOUNT_EXAMPLE) },
  responses: { 200: jsonResponse("The wire record (bare, no data wrapper)", Wire), ...bodyErrorResponses },
});

export function wireRoutes({ sql }: Deps) {
  return newRouter().openapi(
    correct,
    async (c) => {
      const { id } = c.req.valid("param");
      const body = c.req.valid("json");
      const wire = await sql.begin((tx) => correctWire(tx, c.get("companyId"), id, body.bank_account));
      return c.json(presentWire(wire) as z.infer<typeof Wire>, 200);
    },
    alsoCheck(
      BankAccountBody,
      (body, c) => checkWireCorrection(sql, c.get("companyId"), c.req.param("id")!, body.bank_account ?? {}),
    ),
  );
}
