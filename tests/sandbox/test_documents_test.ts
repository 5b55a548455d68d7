/**
 * The test documents without a database: every generator, fed any random sequence (fast-check picks the seeds), gives
 * values the service's own validators accept as they are; and every value of docs/sandbox.md's table passes the same
 * validators, read from the page itself so the page cannot drift from the rules.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  generateTestDocuments,
  MAX_TEST_DOCUMENTS,
  TEST_DOCUMENT_GENERATORS,
  TEST_DOCUMENT_TYPES,
  type TestDocumentType,
} from "../../domain/rails/test_documents.ts";
import { documentProblem } from "../support/document_checks.ts";

/** mulberry32: a small seeded generator, so a failing seed fast-check reports gives the same values again. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

Deno.test("every generated test document passes the service's own validator, as it is", async (t) => {
  for (const type of TEST_DOCUMENT_TYPES) {
    await t.step(type, () => {
      fc.assert(
        fc.property(fc.integer(), (seed) => {
          const random = seeded(seed);
          for (let i = 0; i < 5; i++) {
            const value = TEST_DOCUMENT_GENERATORS[type](random);
            const problem = documentProblem(type, value);
            if (problem !== null) throw new Error(`${type} ${value}: ${problem}`);
          }
        }),
        { numRuns: 200 },
      );
    });
  }
});

Deno.test("a batch is the count asked for, of distinct values of the type asked for", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...TEST_DOCUMENT_TYPES),
      fc.integer({ min: 1, max: MAX_TEST_DOCUMENTS }),
      fc.integer(),
      (type, count, seed) => {
        const batch = generateTestDocuments(type, count, seeded(seed));
        assert.equal(batch.length, count);
        assert.equal(new Set(batch.map((d) => d.value)).size, count);
        for (const d of batch) assert.equal(d.type, type);
      },
    ),
    { numRuns: 100 },
  );
});

Deno.test("the random source decides the values: two sources, two different CPFs", () => {
  const [a] = generateTestDocuments("cpf", 1, seeded(1));
  const [b] = generateTestDocuments("cpf", 1, seeded(2));
  assert.notEqual(a.value, b.value);
  assert.deepEqual(generateTestDocuments("cpf", 3, seeded(7)), generateTestDocuments("cpf", 3, seeded(7)));
});

/** The rows of the table under "## Test documents" in docs/sandbox.md: the `type=` cell and the values cell. */
async function docsTable(): Promise<{ type: string; values: string[] }[]> {
  const page = await Deno.readTextFile(new URL("../../docs/sandbox.md", import.meta.url));
  const start = page.indexOf("\n## Test documents\n");
  assert.ok(start >= 0, "docs/sandbox.md has a Test documents section");
  const section = page.slice(start + 1).split(/\n## /)[0];
  const lines = section.split("\n").filter((l) => l.startsWith("|"));
  const header = lines[0].split("|").map((c) => c.trim());
  const typeColumn = header.indexOf("`type`");
  const valuesColumn = header.indexOf("Valid test values");
  assert.ok(typeColumn > 0 && valuesColumn > 0, `columns found in ${lines[0]}`);
  return lines.slice(2).map((line) => {
    const cells = line.split("|").map((c) => c.trim());
    return {
      type: cells[typeColumn].replaceAll("`", ""),
      values: [...cells[valuesColumn].matchAll(/`([^`]+)`/g)].map((m) => m[1]),
    };
  });
}

Deno.test("docs/sandbox.md's table of test documents: every value valid, every type there", async (t) => {
  const rows = await docsTable();

  await t.step("one row per type the route hands out, in the route's order", () => {
    assert.deepEqual(rows.map((r) => r.type), [...TEST_DOCUMENT_TYPES]);
  });

  await t.step("every value of the table passes the service's own validator, as it is written", () => {
    const refused: string[] = [];
    for (const { type, values } of rows) {
      assert.ok(values.length > 0, `${type} has values`);
      for (const value of values) {
        const problem = documentProblem(type as TestDocumentType, value);
        if (problem !== null) refused.push(`${type} ${value}: ${problem}`);
      }
    }
    assert.deepEqual(refused, []);
  });
});
