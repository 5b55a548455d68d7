/**
 * Every filter the documentation and the console show an integrator must be one the service saves (issue 46): the
 * examples are read from README.md, docs/*.md and the console's page, checked by the rules a save applies
 * (`filterProblem`, then `filterTypeProblem` against the types the example subscribes to), and then saved through
 * the API. Kept apart from filters_test.ts, which tells the rules themselves.
 *
 * What counts as an example, so that the extraction is reliable (docs/webhooks.md, "Filters"):
 * - in a fenced code block, every `"filter": "<JSON string>"` outside a `#` comment line (an answer shown), with the
 *   block's `"enabled_events"` as its types (`["*"]`, the default, when it has none);
 * - in a Markdown table whose first header cell is `Filter (CEL)` (the console's label), the first cell of each row, with an
 *   `enabled_events: [...]` the row names as its types (`["*"]` otherwise);
 * - the console's filter placeholder, with the form's default event types.
 * A filter in a prose code span is not an example: prose also shows what is refused, and why (docs/webhooks.md). A
 * filter to copy goes in a code block or in a `Filter (CEL)` table.
 */
import assert from "node:assert/strict";
import { filterProblem } from "../../domain/webhooks/outbox/filters.ts";
import { filterTypeProblem } from "../../domain/webhooks/outbox/filter_types.ts";
import { newCompany, setup } from "../support/helpers.ts";
import { ENDPOINTS } from "../support/endpoints.ts";
import { startReceiver } from "../support/webhook_receiver.ts";

const root = new URL("../..", import.meta.url).pathname;

type Example = { where: string; filter: string; types: string[] };

/** The Markdown files an integrator reads: the README and every page of docs/. */
function markdownFiles(): string[] {
  const docs = [...Deno.readDirSync(`${root}docs`)].filter((e) => e.isFile && e.name.endsWith(".md"));
  return ["README.md", ...docs.map((e) => `docs/${e.name}`).sort()];
}

/** The examples of one Markdown file, by the rules above. */
export function markdownExamples(file: string, text: string): Example[] {
  const examples: Example[] = [];
  const lines = text.split("\n");
  let fence: string[] | null = null;
  let fenceStart = 0;
  let table: "filter" | "other" | null = null;
  lines.forEach((line, i) => {
    const at = `${file}:${i + 1}`;
    if (/^\s*```/.test(line)) {
      if (fence === null) {
        fence = [];
        fenceStart = i + 1;
      } else {
        examples.push(...blockExamples(`${file}:${fenceStart}`, fence));
        fence = null;
      }
      return;
    }
    if (fence !== null) {
      fence.push(line);
      return;
    }
    if (line.startsWith("|")) {
      if (table === null) table = /^\|\s*Filter \(CEL\)\s*\|/.test(line) ? "filter" : "other";
      else if (table === "filter" && !/^\|\s*-/.test(line)) {
        const filter = /^\|\s*`([^`]+)`/.exec(line)?.[1];
        const types = /enabled_events: (\[[^\]]*\])/.exec(line)?.[1];
        if (filter) examples.push({ where: at, filter, types: types ? JSON.parse(types) : ["*"] });
      }
      return;
    }
    table = null;
  });
  return examples;
}

/** The `"filter"` strings of one code block, typed against the block's `"enabled_events"`. */
function blockExamples(where: string, block: string[]): Example[] {
  const body = block.filter((l) => !/^\s*#/.test(l)).join("\n");
  const types = /"enabled_events":\s*(\[[^\]]*\])/.exec(body)?.[1];
  return [...body.matchAll(/"filter":\s*("(?:[^"\\]|\\.)*")/g)].map((m) => ({
    where,
    filter: JSON.parse(m[1]),
    types: types ? JSON.parse(types) : ["*"],
  }));
}

/** The console's filter placeholder, typed against the event types its form starts with. */
export function consoleExample(page: string): Example {
  const input = /id="endpoint-filter"[^>]*?placeholder=(?:'([^']*)'|"([^"]*)")/.exec(page);
  assert.ok(input, "the console's filter input has no placeholder");
  const events = /id="endpoint-events"[^>]*?value="([^"]*)"/.exec(page);
  assert.ok(events, "the console's event types input has no default");
  return {
    where: "routes/console/page.tsx",
    filter: input[1] ?? input[2],
    types: events[1].split(",").map((t) => t.trim()),
  };
}

Deno.test("every filter the docs and the console show is one the service saves", async (t) => {
  const examples: Example[] = [];
  for (const file of markdownFiles()) examples.push(...markdownExamples(file, Deno.readTextFileSync(root + file)));
  examples.push(consoleExample(Deno.readTextFileSync(`${root}routes/console/page.tsx`)));

  await t.step("the extraction finds the examples of each kind", () => {
    assert.ok(examples.some((e) => e.where.startsWith("docs/webhooks.md") && e.types[0] !== "*"), "no code block");
    assert.ok(examples.filter((e) => e.where.startsWith("docs/webhooks.md")).length >= 5, "no Filter (CEL) table");
    assert.ok(examples.some((e) => e.where === "routes/console/page.tsx"), "no console placeholder");
  });

  await t.step("each parses, stays within the limits and type-checks against the types it subscribes to", () => {
    const refused = examples.flatMap((e) => {
      const problem = filterProblem(e.filter) ?? filterTypeProblem(e.filter, e.types);
      return problem ? [`${e.where}: ${e.filter} (enabled_events ${JSON.stringify(e.types)}): ${problem}`] : [];
    });
    assert.deepEqual(refused, []);
  });

  await t.step("saved through the API with its types, each example answers 201", async () => {
    const ctx = await setup("webhook_filter_examples");
    const rx = startReceiver();
    try {
      const company = await newCompany(ctx);
      const answers: string[] = [];
      for (const [i, e] of examples.entries()) {
        const res = await company.post(ENDPOINTS, { url: `${rx.url}/${i}`, enabled_events: e.types, filter: e.filter });
        if (res.status !== 201) answers.push(`${e.where}: ${e.filter}: ${res.status} ${JSON.stringify(res.body)}`);
      }
      assert.deepEqual(answers, []);
    } finally {
      await rx.close();
      await ctx.close();
    }
  });
});
