import assert from "node:assert/strict";
import { mentions, unnamed } from "../architecture_names.ts";

Deno.test("the check that docs/architecture.md names every source file", async (t) => {
  const files = [
    "domain/subjects/people.ts",
    "domain/webhooks/queue.ts",
    "routes/console/page.tsx",
    "routes/subjects/people.ts",
    "routes/subjects/schemas.ts",
    "routes/rails/schemas.ts",
    "main.ts",
  ];

  await t.step("a file the document never writes is reported, and only that one", () => {
    const doc = "`main.ts` starts it; `domain/subjects/people.ts`, `routes/subjects/people.ts`, `page.tsx`,\n" +
      "`subjects/schemas.ts` and `rails/schemas.ts` are the rest.";
    assert.deepEqual(unnamed(files, doc), ["domain/webhooks/queue.ts"]);
  });

  await t.step("a file name no other source file has names it anywhere; a path names its file", () => {
    assert.deepEqual(unnamed(["domain/webhooks/queue.ts"], "the queue (`queue.ts`)"), []);
    assert.deepEqual(unnamed(["domain/webhooks/queue.ts"], "see domain/webhooks/queue.ts."), []);
    assert.deepEqual(unnamed(["domain/webhooks/queue.ts"], "`webhooks/queue.ts`"), []);
  });

  await t.step("a name two files share names neither, outside their folder's paragraph", () => {
    const doc = "Each folder's `schemas.ts` holds its schemas; `people.ts` registers people.";
    assert.deepEqual(unnamed(files, doc), files);
  });

  await t.step("in a folder's paragraph, a name is read from that folder, and not past the paragraph", () => {
    const doc = [
      "**`domain/subjects/`** is the customers: `people.ts` registers them.",
      "**`routes/`** is the HTTP API: `subjects/people.ts` and `subjects/schemas.ts`.",
      "Elsewhere `queue.ts`; `page.tsx` and `rails/schemas.ts`; and `main.ts`.",
    ].join("\n\n");
    assert.deepEqual(unnamed(files, doc), []);
    const cut = "**`domain/subjects/`** is the customers.\n\nThere, `people.ts` registers them.";
    assert.ok(unnamed(files, cut).includes("domain/subjects/people.ts"));
  });

  await t.step("under a heading that is a folder alone, a name is read from it up to the next heading", () => {
    const doc = [
      "### `domain/subjects/`",
      "People: `people.ts`.",
      "",
      "And again, a paragraph later: `people.ts`.",
      "### `routes/`",
      "- `subjects/people.ts`, `subjects/schemas.ts`, `rails/schemas.ts`",
      "- `console/page.tsx`",
      "## Elsewhere",
      "`people.ts`, `queue.ts` and `main.ts`.",
    ].join("\n");
    assert.deepEqual(unnamed(files, doc), []);
    const later = "### `domain/subjects/`\n\nPeople.\n\n## Rules\n\n`people.ts` registers them.";
    assert.ok(unnamed(files, later).includes("domain/subjects/people.ts"));
    const notAFolder = "### The `domain/subjects/` folder\n\n`people.ts` registers them.";
    assert.ok(unnamed(files, notAFolder).includes("domain/subjects/people.ts"));
  });

  await t.step("a file named only in part, or only by a longer name, is not named", () => {
    assert.deepEqual(unnamed(["domain/webhooks/queue.ts"], "`queue` and `dispatch_queue.ts`"), [
      "domain/webhooks/queue.ts",
    ]);
    assert.deepEqual(unnamed(["main.ts"], "`main.tsx` and `domain.ts`"), ["main.ts"]);
  });

  await t.step("mentions are what the prose writes, joined to the folder of the paragraph", () => {
    assert.deepEqual(mentions("**`jobs/`** `./index.ts` (`taskList`), see tests/x_test.ts."), [
      "index.ts",
      "jobs/index.ts",
      "tests/x_test.ts",
      "jobs/tests/x_test.ts",
    ]);
  });
});
