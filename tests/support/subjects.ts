/**
 * A subject as an integrator registers one, for the tests whose story starts with a person already there, and a
 * document of a given size to register with it or upload.
 */
import assert from "node:assert/strict";
import type { Company } from "./helpers.ts";

/** Registers Ana Souza under `documentNumber` (201, or 200 when she is there already) and answers her id. */
export async function newPerson(company: Company, documentNumber = "52998224725"): Promise<string> {
  const res = await company.post("/api/v1/subject/people", {
    person: { document_number: documentNumber, document_type: "cpf", social_name: "Ana Souza", fiscal_country: "BRA" },
  });
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
  return res.body.data.id;
}

/** A plain-text document of exactly `bytes` bytes, as sent in a person's `documents` or uploaded. */
export const textDocument = (bytes: number) => ({
  labels: ["address-proof"],
  file_type: "text/plain",
  file_name: "proof.txt",
  file_data: new TextEncoder().encode("a".repeat(bytes)).toBase64(),
});
