/**
 * The migration rules of `deno task check` (tests/migration_rules.ts, docs/migrations.md) on migrations written for the
 * purpose: each bad one is refused naming its file, the line of the offending statement and the rule; the good ones
 * pass. No database, no git, no squawk: the script around these rules is run by `deno task check` itself.
 */

import assert from "node:assert/strict";
import {
  contractFindings,
  expandFindings,
  formatFinding,
  isLintedExpand,
  liveFunctionBodies,
  type PreviousRelease,
  type Source,
  squawkExcludedRules,
} from "../migration_rules.ts";

const FILE = "sql/0099_example.sql";
const CONTRACT = "sql/contract/0099_example.sql";
const BOUND = "set local lock_timeout = '2s';\n";

/** The 1-based line on which `needle` starts in `text` (found by the test, not by the rules). */
function lineOf(text: string, needle: string): number {
  const at = text.indexOf(needle);
  assert.notEqual(at, -1, `the fixture holds ${needle}`);
  return text.slice(0, at).split("\n").length;
}

/** The findings as the check prints them, the file, line and rule first. */
function lines(findings: ReturnType<typeof expandFindings>): string[] {
  return findings.map(formatFinding);
}

Deno.test("the migration rules deno task check applies", async (t) => {
  await t.step("an expand file is refused, naming file, line and rule, for each thing it may not do", () => {
    const cases: [rule: string, offending: string][] = [
      ["expand-drop", "drop table webhook_attempts;"],
      ["expand-drop", "drop table if exists old_things cascade;"],
      ["expand-drop", "alter table people drop column social_name;"],
      ["expand-drop", "alter table people drop social_name;"],
      ["expand-drop", "alter table people drop constraint people_pkey;"],
      ["expand-drop", "drop function add_drain_jobs(graphile_worker.job_spec[], boolean);"],
      ["expand-drop", "drop view superseded_drain_jobs;"],
      ["expand-drop", "drop type delivery_state;"],
      ["expand-drop", "drop trigger endpoint_status_periods on webhook_endpoints;"],
      ["expand-drop", "drop index people_company_id_idx;"],
      ["expand-rename", "alter table people rename column social_name to name;"],
      ["expand-rename", "alter table people rename to persons;"],
      ["expand-rename", "alter function reserve_sign_in(text) rename to reserve;"],
      ["expand-rename", "alter table people rename constraint people_pkey to people_key;"],
      ["expand-column-type", "alter table people alter column social_name type varchar(200);"],
      ["expand-column-type", "alter table people alter social_name set data type text;"],
      ["expand-set-not-null", "alter table people alter column fiscal_country set not null;"],
      ["expand-not-null-without-default", "alter table people add column tier text not null;"],
      ["expand-not-null-without-default", "alter table people add tier text not null references tiers (id);"],
      ["expand-blocking-index", "create index people_name_idx on people (social_name);"],
      ["expand-blocking-index", "create unique index if not exists people_doc_idx on only people (document_number);"],
    ];
    for (const [rule, offending] of cases) {
      const sql = `${BOUND}-- a migration\ncreate table notes (id uuid primary key);\n\n${offending}\n`;
      const found = lines(expandFindings(FILE, sql));
      assert.deepEqual(
        found.map((l) => l.split(": ")[0] + ": " + l.split(": ")[1]),
        [`${FILE}:${lineOf(sql, offending)}: ${rule}`],
        `${offending} → ${found.join("\n")}`,
      );
    }
  });

  await t.step("a statement spread over lines is named at the line of its offending clause", () => {
    const sql = `${BOUND}alter table people\n  add column tier text,\n  drop column social_name;\n`;
    assert.deepEqual(lines(expandFindings(FILE, sql)).map((l) => l.split(": ").slice(0, 2).join(": ")), [
      `${FILE}:${lineOf(sql, "drop column")}: expand-drop`,
    ]);
  });

  await t.step("a drop or rename inside a DO block is refused too; words in comments and literals are not", () => {
    const sql = `${BOUND}do $$\nbegin\n  if true then\n    drop table old_things;\n  end if;\nend\n$$;\n` +
      "-- drop table people; rename in a comment\ncomment on table notes is 'drop table people';\n" +
      "create function f() returns text language sql as $body$ select 'alter table x rename to y' $body$;\n";
    assert.deepEqual(lines(expandFindings(FILE, sql)).map((l) => l.split(": ").slice(0, 2).join(": ")), [
      `${FILE}:${lineOf(sql, "drop table old_things")}: expand-drop`,
    ]);
  });

  await t.step("sql/0023, which broke the running release by dropping add_drain_jobs, is refused as an expand", () => {
    const path = "sql/0023_drain_from_deliveries.sql";
    const sql = Deno.readTextFileSync(new URL(`../../${path}`, import.meta.url));
    const found = lines(expandFindings(path, sql));
    assert.ok(
      found.includes(
        `${path}:${lineOf(sql, "drop function add_drain_jobs")}: expand-drop: drops function ` +
          "add_drain_jobs: an expand migration removes nothing the previous release may still use; it may go in " +
          "sql/contract/ one release later, once no code of this release or of the previous one names it " +
          "(docs/migrations.md)",
      ),
      found.join("\n"),
    );
    assert.ok(found.some((l) => l.startsWith(`${path}:${lineOf(sql, "drop function")}: lock-timeout: `)));
  });

  await t.step("every file bounds its lock waits with set local lock_timeout before its first statement", () => {
    const create = "create table notes (id uuid primary key);";
    const cases: [sql: string, line: string][] = [
      [`-- nothing set\n${create}\n`, create],
      [`${create}\n${BOUND}`, create],
      [`set lock_timeout = '2s';\n${create}\n`, "set lock_timeout"],
      [`set session lock_timeout to '2s';\n${create}\n`, "set session"],
      [`set local lock_timeout = 0;\n${create}\n`, "set local"],
      [`set local lock_timeout = '0ms';\n${create}\n`, "set local"],
    ];
    for (const [sql, offending] of cases) {
      const found = lines(expandFindings(FILE, sql));
      assert.equal(found.length, 1, found.join("\n"));
      assert.ok(found[0].startsWith(`${FILE}:${lineOf(sql, offending)}: lock-timeout: `), found[0]);
    }
    const fine = ["set local lock_timeout to '5s';", "set local statement_timeout = '1min';\n" + BOUND];
    for (const head of fine) assert.deepEqual(expandFindings(FILE, `-- why\n${head}\n${create}\n`), []);
    assert.deepEqual(expandFindings(FILE, "-- only words\n"), [], "a file of comments takes no lock");
  });

  await t.step("an expand file that only adds passes", () => {
    const sql = `-- What it adds and why.\n${BOUND}
create table notes (
  id uuid primary key,
  body text not null,
  created_at timestamptz not null default now()
);
create index notes_created_idx on notes (created_at);
alter table notes alter column body type varchar(100), alter column body set not null, add column n int not null;
alter table people add column tier text;
alter table people add column rank bigint not null default 0;
create index concurrently people_tier_idx on people (tier);
create or replace function notes_count() returns bigint language sql as $$ select count(*) from notes $$;
do $$ begin
  for k in 0..3 loop
    execute format('alter table notes add column %I integer not null default 0', 'd' || k);
  end loop;
end $$;
insert into notes (id, body) values (gen_random_uuid(), 'it''s; fine -- really');
`;
    assert.deepEqual(lines(expandFindings(FILE, sql)), []);
  });

  await t.step("an unterminated literal is refused rather than read wrongly", () => {
    const found = lines(expandFindings(FILE, `${BOUND}insert into notes values ('x);\n`));
    assert.deepEqual(found.map((l) => l.split(": ").slice(0, 2).join(": ")), [`${FILE}:1: unparsable`]);
  });

  await t.step("only the expand files after sql/0031 are linted", () => {
    assert.equal(isLintedExpand("sql/0031_people_without_company_id_index.sql"), false);
    assert.equal(isLintedExpand("sql/0032_endpoint_stats_hours.sql"), true);
    assert.equal(isLintedExpand("sql/README.md"), false);
  });

  const previous: PreviousRelease = {
    version: "1.0.0",
    commit: "e0108b95ab37609f5fc60a38931eb1b04db6a971",
    sources: [{
      path: "domain/webhooks/queue.ts",
      text: "// the queue\n\nreturn sql`add_drain_jobs(${x})`;\n",
      line: 1,
    }],
  };
  const current: Source[] = [
    { path: "domain/people.ts", text: "export const q = sql`select\n  social_name from people`;\n", line: 1 },
  ];

  await t.step("a contract file may not drop what this release or the previous one names", () => {
    const cases: [offending: string, where: string][] = [
      ["alter table people drop column social_name;", "this release names it in domain/people.ts:2"],
      [
        "drop function add_drain_jobs(graphile_worker.job_spec[], boolean);",
        "the previous release (1.0.0, e0108b9) names it in domain/webhooks/queue.ts:3",
      ],
      ["alter table webhook_endpoints rename column add_drain_jobs to jobs;", "the previous release (1.0.0"],
    ];
    for (const [offending, where] of cases) {
      const sql = `${BOUND}-- removes what went out of use\n${offending}\n`;
      const found = lines(contractFindings(CONTRACT, sql, current, previous));
      assert.equal(found.length, 1, found.join("\n"));
      assert.ok(found[0].startsWith(`${CONTRACT}:${lineOf(sql, offending)}: contract-drop-in-use: `), found[0]);
      assert.ok(found[0].includes(where), found[0]);
    }
  });

  await t.step("a contract file may drop what no code names, by name, without CASCADE", () => {
    const sql = `${BOUND}alter table people drop column legacy_flag;\ndrop table if exists old_things;\n`;
    assert.deepEqual(lines(contractFindings(CONTRACT, sql, current, previous)), []);
    const cascade = `${BOUND}drop table old_things cascade;\n`;
    assert.deepEqual(lines(contractFindings(CONTRACT, cascade, current, previous)).map((l) => l.split(": ")[1]), [
      "contract-cascade",
    ]);
  });

  await t.step("function bodies of sql/ count as uses while the function is defined, its own aside", () => {
    const files = [
      { path: "sql/0040_a.sql", text: `${BOUND}create function uses_flag() returns boolean language sql as $$\n` },
      { path: "sql/0041_b.sql", text: `${BOUND}create function keeps() returns int language sql as $$ select 1 $$;\n` },
    ];
    files[0].text += "  select legacy_flag from people limit 1\n$$;\n";
    const bodies = liveFunctionBodies(files);
    const drop = `${BOUND}alter table people drop column legacy_flag;\n`;
    const found = lines(contractFindings(CONTRACT, drop, [...current, ...bodies], previous));
    assert.equal(found.length, 1, found.join("\n"));
    assert.ok(found[0].includes(`this release names it in sql/0040_a.sql:${lineOf(files[0].text, "legacy_flag")}`));

    const dropped = {
      path: CONTRACT,
      text: `${BOUND}drop function uses_flag();\nalter table people drop legacy_flag;\n`,
    };
    const after = liveFunctionBodies([...files, dropped]);
    assert.deepEqual(lines(contractFindings(CONTRACT, dropped.text, [...current, ...after], previous)), []);
  });

  await t.step("without the previous release's history a contract file is refused, saying so", () => {
    const sql = `${BOUND}drop table old_things;\n`;
    const missing = "commit e0108b9 of the previous release (1.0.0) is not in this clone's git history";
    const found = lines(contractFindings(CONTRACT, sql, current, { missing }));
    assert.deepEqual(found, [
      `${CONTRACT}:1: previous-release: cannot tell what the previous release names, so nothing may be dropped: ` +
      missing,
    ]);
  });

  await t.step("squawk's turned-off rules are read back from .squawk.toml", () => {
    const toml = Deno.readTextFileSync(new URL("../../.squawk.toml", import.meta.url));
    assert.deepEqual(squawkExcludedRules(toml), ["require-statement-timeout"]);
    assert.deepEqual(squawkExcludedRules('# excluded_rules = ["x"]\nexcluded_rules = [\n  "a", # why\n  "b",\n]\n'), [
      "a",
      "b",
    ]);
  });
});
