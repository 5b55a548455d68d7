/**
 * The import rules of `deno task check` (tests/import_rules.ts) on small graphs written for the purpose: circles of any
 * length, and imports that run up a layer.
 */
import assert from "node:assert/strict";
import { circles, layerOf, upwardImports } from "../import_rules.ts";

Deno.test("the import rules deno task check applies", async (t) => {
  await t.step("a circle is found, whatever its length, and a chain is not one", () => {
    assert.deepEqual(circles([["a.ts", "b.ts"], ["b.ts", "c.ts"]]), []);
    assert.deepEqual(circles([["a.ts", "b.ts"], ["b.ts", "c.ts"], ["c.ts", "a.ts"], ["c.ts", "d.ts"]]), [[
      "a.ts",
      "b.ts",
      "c.ts",
    ]]);
    assert.equal(circles([["x.ts", "y.ts"], ["y.ts", "x.ts"], ["p.ts", "q.ts"], ["q.ts", "p.ts"]]).length, 2);
  });

  await t.step(
    "the layers run infra, webhooks and integrators, subjects, bank accounts, rails, routes and jobs, then main",
    () => {
      const order = [
        "domain/infra/db.ts",
        "domain/webhooks/outbox/events.ts",
        "domain/subjects/people.ts",
        "domain/bank_accounts/rules.ts",
        "domain/rails/transactions.ts",
        "routes/app.ts",
        "main.ts",
      ].map(layerOf);
      assert.deepEqual(order, [...order].sort((a, b) => a! - b!));
      assert.equal(layerOf("jobs/index.ts"), layerOf("routes/app.ts"));
      assert.equal(layerOf("tests/support/helpers.ts"), null, "tests may import anything");
    },
  );

  await t.step("an import of a higher layer is reported, one along or down is not", () => {
    const edges: [string, string][] = [
      ["domain/subjects/status.ts", "domain/rails/transactions.ts"],
      ["domain/rails/transactions.ts", "domain/subjects/status.ts"],
      ["domain/rails/payins.ts", "domain/rails/transactions.ts"],
      ["domain/infra/config.ts", "routes/app.ts"],
      ["tests/support/helpers.ts", "main.ts"],
    ];
    assert.deepEqual(upwardImports(edges), [
      ["domain/subjects/status.ts", "domain/rails/transactions.ts"],
      ["domain/infra/config.ts", "routes/app.ts"],
    ]);
  });
});
