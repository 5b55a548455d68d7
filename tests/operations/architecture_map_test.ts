/**
 * The rules of tests/architecture_map.ts on small documents and files written for the purpose, bad and good: a table
 * row's names are looked for in the file its row or its cell names, and a source file opens with its comment. No
 * repository read: `deno task check` runs the script on the real document and files.
 */
import assert from "node:assert/strict";
import {
  definesInCode,
  definesInSql,
  namesIn,
  opensWithComment,
  resolveFile,
  ruleRows,
  tableProblems,
} from "../architecture_map.ts";

const FILES = [
  "domain/infra/config.ts",
  "commands/cluster/config.ts",
  "domain/subjects/quotas.ts",
  "domain/webhooks/endpoints/quotas.ts",
  "domain/webhooks/endpoints/decisions.ts",
  "domain/webhooks/engine/statements/record.ts",
  "sql/0021_sessions_and_shared_limits.sql",
  "sql/0022_company_usage.sql",
];

const SOURCES: Record<string, string> = {
  "domain/infra/config.ts": [
    "const EnvSchema = z.object({",
    "  BODY_TIMEOUT_MS: z.coerce.number(),",
    "});",
    "export type Limits = { perCompany: number };",
  ].join("\n"),
  "commands/cluster/config.ts": "export function clusterLayout() {}",
  "domain/subjects/quotas.ts": [
    "export async function takeRoom(tx: SqlOrTransaction) {}",
    "export class Quotas {",
    "  withinQuotas(n: number) { return n < 3; }",
    "}",
  ].join("\n"),
  "domain/webhooks/endpoints/quotas.ts": "export const fitSlots = async () => {};",
  "domain/webhooks/endpoints/decisions.ts":
    "// takeRoom is not here, only its name in a comment\nexport enum Health {}",
  "domain/webhooks/engine/statements/record.ts": "async function recordAttempts() {}\nexport { recordAttempts };",
  "sql/0021_sessions_and_shared_limits.sql": "create or replace function take_rate_tokens(k text) returns int",
  "sql/0022_company_usage.sql": [
    "create table company_usage (company_id uuid, people bigint);",
    "create function public.take_company_usage(c uuid) returns void;",
    "alter table companies add column usage_checked boolean;",
  ].join("\n"),
};
const read = (path: string) => SOURCES[path];

/** A document holding the table with `rows` (rule, file, last cell). */
function docWith(...rows: [string, string, string][]): string {
  return [
    "# Map",
    "",
    "## Where each rule lives",
    "",
    "| Rule | File | Where in it |",
    "| ---- | ---- | ----------- |",
    ...rows.map(([rule, file, where]) => `| ${rule} | \`${file}\` | ${where} |`),
    "",
    "## Other pages",
    "",
    "| Not | A | Rule |",
    "| --- | - | ---- |",
    "| `nowhere` | `x.ts` | `ghost` |",
  ].join("\n");
}

Deno.test("the check that docs/architecture.md's table and every file's opening comment are true", async (t) => {
  await t.step("rows are read under their heading only, with their line in the document", () => {
    const rows = ruleRows(docWith(["Quotas", "domain/subjects/quotas.ts", "`takeRoom`"]));
    assert.deepEqual(rows, [{ line: 7, rule: "Quotas", file: "domain/subjects/quotas.ts", where: "`takeRoom`" }]);
  });

  await t.step("a table whose names are all defined where it says has nothing to report", () => {
    const doc = docWith(
      ["Quotas", "domain/subjects/quotas.ts", "`takeRoom`, `Quotas.withinQuotas`; `take_company_usage` in sql/0022"],
      ["Slots", "domain/subjects/quotas.ts", "`takeRoom`; the slots: `fitSlots` (webhooks/endpoints/quotas.ts)"],
      ["Retries", "domain/webhooks/endpoints/decisions.ts", "`Health`; applied by `recordAttempts` (record.ts)"],
      ["Bodies", "domain/infra/config.ts", "`BODY_TIMEOUT_MS`, `Limits` (digits by `@brazilian-utils`)"],
      ["Buckets", "domain/infra/config.ts", "`take_rate_tokens` of sql/0021; `companies.usage_checked` in sql/0022"],
      [
        "Files",
        "domain/infra/config.ts",
        "the middleware: `domain/subjects/quotas.ts`, `clusterLayout` of cluster/config.ts",
      ],
    );
    assert.deepEqual(tableProblems(doc, FILES, read), []);
  });

  await t.step("a name not defined in its row's file is reported with the row's line and rule", () => {
    const doc = docWith(["Slots", "domain/subjects/quotas.ts", "`takeRoom`, `fitSlots`"]);
    assert.deepEqual(tableProblems(doc, FILES, read), [
      "docs/architecture.md:7 (Slots): `fitSlots` is not defined in domain/subjects/quotas.ts",
    ]);
  });

  await t.step("a name in a comment, a member of an undeclared outer name, or a missing member is not defined", () => {
    const doc = docWith(
      ["Comment", "domain/webhooks/endpoints/decisions.ts", "`takeRoom`"],
      ["Member", "domain/subjects/quotas.ts", "`Quotas.refuseEarly`, `Room.withinQuotas`"],
    );
    assert.deepEqual(tableProblems(doc, FILES, read), [
      "docs/architecture.md:7 (Comment): `takeRoom` is not defined in domain/webhooks/endpoints/decisions.ts",
      "docs/architecture.md:8 (Member): `Quotas.refuseEarly` is not defined in domain/subjects/quotas.ts",
      "docs/architecture.md:8 (Member): `Room.withinQuotas` is not defined in domain/subjects/quotas.ts",
    ]);
  });

  await t.step("a file beside a name is where it is looked for, and beside the names listed before it", () => {
    const wrong = docWith(["Slots", "domain/subjects/quotas.ts", "`fitSlots` (quotas.ts)"]);
    assert.deepEqual(tableProblems(wrong, FILES, read), [
      "docs/architecture.md:7 (Slots): `fitSlots` is not defined in domain/subjects/quotas.ts",
    ]);
    const listed = docWith([
      "Usage",
      "domain/infra/config.ts",
      "`takeRoom`, `Quotas` and `Limits` of subjects/quotas.ts",
    ]);
    assert.deepEqual(tableProblems(listed, FILES, read), [
      "docs/architecture.md:7 (Usage): `Limits` is not defined in domain/subjects/quotas.ts",
    ]);
    assert.deepEqual(namesIn("`a` (x.ts), `b`, `c` of y.ts; `d`"), [
      { name: "a", beside: "x.ts" },
      { name: "b", beside: "y.ts" },
      { name: "c", beside: "y.ts" },
      { name: "d", beside: undefined },
    ]);
  });

  await t.step("a SQL name is a function, table or column the migration creates", () => {
    const doc = docWith(
      ["Usage", "domain/subjects/quotas.ts", "`take_company_usage` in sql/0021; `take_rate_tokens` in sql/0022"],
      ["Columns", "domain/subjects/quotas.ts", "`company_usage.people` in sql/0022, `companies.usage` in sql/0022"],
    );
    assert.deepEqual(tableProblems(doc, FILES, read), [
      "docs/architecture.md:7 (Usage): `take_company_usage` is not defined in sql/0021_sessions_and_shared_limits.sql",
      "docs/architecture.md:7 (Usage): `take_rate_tokens` is not defined in sql/0022_company_usage.sql",
      "docs/architecture.md:8 (Columns): `companies.usage` is not defined in sql/0022_company_usage.sql",
    ]);
    assert.equal(definesInSql("CREATE OR REPLACE FUNCTION take_x() returns int", "take_x"), true);
    assert.equal(definesInSql("select take_x()", "take_x"), false);
  });

  await t.step("a row's file, a file beside a name and a file alone must be there and be one file", () => {
    const doc = docWith(
      ["Gone", "domain/subjects/gone.ts", "`takeRoom`"],
      ["Beside", "domain/subjects/quotas.ts", "`takeRoom` of missing.ts; `fitSlots` in sql/0099"],
      ["Alone", "domain/subjects/quotas.ts", "the middleware: `routes/policy/nothing.ts`"],
      ["Two", "routes/limits.ts", "nothing"],
    );
    assert.deepEqual(tableProblems(doc, FILES, read), [
      "docs/architecture.md:7 (Gone): the row's file domain/subjects/gone.ts is not there",
      "docs/architecture.md:8 (Beside): `takeRoom`: no file missing.ts",
      "docs/architecture.md:8 (Beside): `fitSlots`: no file sql/0099",
      "docs/architecture.md:9 (Alone): no file routes/policy/nothing.ts",
      "docs/architecture.md:10 (Two): the row's file routes/limits.ts is not there",
    ]);
  });

  await t.step("a bare file name is the one nearest the row's file; two equally near are an error", () => {
    assert.equal(resolveFile("quotas.ts", "domain/subjects/status.ts", FILES), "domain/subjects/quotas.ts");
    assert.equal(
      resolveFile("quotas.ts", "domain/webhooks/outbox/events.ts", FILES),
      "domain/webhooks/endpoints/quotas.ts",
    );
    assert.equal(resolveFile("config.ts", "domain/rails/clearance.ts", FILES), "domain/infra/config.ts");
    assert.deepEqual(resolveFile("config.ts", "routes/app.ts", FILES), {
      error: "config.ts could be domain/infra/config.ts or commands/cluster/config.ts",
    });
    assert.equal(resolveFile("sql/0022", "main.ts", FILES), "sql/0022_company_usage.sql");
  });

  await t.step("a backticked word that is no name, file, package or header is reported as unreadable", () => {
    const doc = docWith(["Digits", "domain/subjects/quotas.ts", "`takeRoom`, `CHECK_DIGIT(S)`, `x-request-id`"]);
    assert.deepEqual(tableProblems(doc, FILES, read), [
      "docs/architecture.md:7 (Digits): `CHECK_DIGIT(S)` is not a name to look for",
    ]);
  });

  await t.step("declarations of every kind count; a use or an import does not", () => {
    for (
      const line of [
        "export async function f() {}",
        "function* f() {}",
        "export const f = 1;",
        "let f;",
        "export default class f {}",
        "export abstract class f {}",
        "interface f {}",
        "export type f = string;",
        "enum f { A }",
        "const g = 1; export { g as h, f };",
        "export const E = z.object({\n  f: z.string(),\n});",
      ]
    ) assert.equal(definesInCode(line, "f"), true, line);
    for (
      const line of [
        "f();",
        'import { f } from "./x.ts";',
        "const g = f;",
        "export const fx = 1;",
        "type T = { f: 1 };",
      ]
    ) assert.equal(definesInCode(line, "f"), false, line);
    assert.equal(definesInCode("const $f = 1;", "$f"), true);
  });

  await t.step("a file opens with a comment of words before its first import or statement", () => {
    for (
      const source of [
        "/**\n * The quotas of one company.\n */\nimport x from './x.ts';",
        "// The quotas of one company, and why they are a file.\nexport const a = 1;",
        "#!/usr/bin/env -S deno run\n/** The command line. */\nconsole.log(1);",
        "// deno-lint-ignore-file no-explicit-any\n\n/** The console's page. */\nexport const p = 1;",
        "\uFEFF\n\n/* A comment after a byte-order mark and blank lines. */\nexport {};",
      ]
    ) assert.equal(opensWithComment(source), true, source);
    for (
      const source of [
        "import x from './x.ts';\n/** The quotas. */\nexport const a = 1;",
        "export const a = 1; // the quotas",
        "// deno-lint-ignore-file no-explicit-any\nexport const a: any = 1;",
        "/** */\nexport const a = 1;",
        "//\nexport const a = 1;",
        "",
      ]
    ) assert.equal(opensWithComment(source), false, source);
  });
});
