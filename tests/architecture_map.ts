/**
 * `deno task check` runs this: it holds docs/architecture.md to the code where the two meet. Every name the table
 * "Where each rule lives" gives in its last column is defined in the file its row names (or in the file the cell names
 * beside it: "`fitSlots` (quotas.ts)", "`take_company_usage` in sql/0022"), and every source file opens with a comment
 * saying what it holds, so the map of each file is in the file. Exits 1 naming every offending row and file.
 */

export const DOCUMENT = "docs/architecture.md";

/** Where the source files are: a file, or a folder (ending in `/`) read to the bottom. */
export const SOURCE_ROOTS = ["main.ts", "domain/", "routes/", "jobs/", "commands/", "tests/"];

/** The heading of the table this check reads. */
const TABLE_HEADING = /^##\s+Where each rule lives\s*$/;

/** A row of the table: the rule, the file it names and the last cell, with its line in the document (1-based). */
export type RuleRow = { line: number; rule: string; file: string; where: string };

/** The rows of "Where each rule lives", header and rule line left out. */
export function ruleRows(doc: string): RuleRow[] {
  const lines = doc.split("\n");
  const start = lines.findIndex((l) => TABLE_HEADING.test(l));
  if (start < 0) return [];
  const rows: RuleRow[] = [];
  for (let i = start + 1; i < lines.length && !/^#{1,6}\s/.test(lines[i]); i++) {
    if (!lines[i].startsWith("|")) continue;
    const cells = lines[i].split("|").slice(1, -1).map((c) => c.trim());
    if (cells.length < 3 || /^-+$/.test(cells[0]) || cells[1] === "File") continue;
    rows.push({ line: i + 1, rule: cells[0], file: cells[1].replace(/^`|`$/g, ""), where: cells.slice(2).join(" | ") });
  }
  return rows;
}

/** A name the last cell gives, and the file written beside it, if any. */
export type NamedThing = { name: string; beside?: string };

const IDENTIFIER = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)?$/;
/** A file as a cell writes it: a path or a bare name of a `.ts`/`.tsx` file, or a migration (`sql/0022`). */
const FILE_REF = String.raw`(?:[\w./-]*[\w-]\.tsx?|sql/(?:contract/)?\d{4}[\w.]*)`;
/** What may follow a name to say where it is instead: ` (quotas.ts)`, ` of config.ts`, ` in sql/0022`. */
const BESIDE = new RegExp(String.raw`^\s*(?:\(|of\s+|in\s+)\s*\`?(${FILE_REF})\`?(?![\w./-])`);
/** A file or folder written alone (the middleware: `routes/policy/idempotency.ts`). */
const LONE_FILE = new RegExp(String.raw`^${FILE_REF}$`);
/** Packages, headers and other words that are not names of the code (`@brazilian-utils`, `x-request-id`). */
const NOT_CODE = /[@\-\/ *]/;

/**
 * The names in a last cell, each with the file written beside it. A file beside a name is also beside the names listed
 * just before it ("`A`, `B` and `C` of config.ts": all three), up to a name that has a file of its own. A backticked
 * file alone is returned as a name whose `beside` is itself, so the check sees that it exists; packages and headers
 * (`@brazilian-utils`, `x-request-id`) are left out.
 */
export function namesIn(where: string): NamedThing[] {
  const out: NamedThing[] = [];
  let listed: NamedThing[] = [];
  let end = 0;
  for (const m of where.matchAll(/`([^`]+)`/g)) {
    const word = m[1];
    const gap = where.slice(end, m.index);
    end = m.index! + m[0].length;
    if (LONE_FILE.test(word)) {
      out.push({ name: word, beside: word });
      listed = [];
      continue;
    }
    if (!IDENTIFIER.test(word) && NOT_CODE.test(word)) continue;
    if (!/^\s*(?:,|,?\s+and)\s*$/.test(gap)) listed = [];
    const named: NamedThing = { name: word, beside: BESIDE.exec(where.slice(end))?.[1] };
    out.push(named);
    if (named.beside) {
      for (const before of listed) before.beside = named.beside;
      listed = [];
    } else listed.push(named);
  }
  return out;
}

const escape = (s: string) => s.replace(/[$]/g, "\\$");

/**
 * Whether TypeScript `source` declares or exports `name`, or holds it as a key an object or type writes on a line of
 * its own (the environment variables of config.ts's schema); `A.b`: `A` declared and `b` a member written in it.
 */
export function definesInCode(source: string, name: string): boolean {
  const [outer, member] = name.split(".");
  const n = escape(outer);
  const declared = new RegExp(
    String.raw`(?:^|[^\w$.])(?:function\*?|class|interface|type|enum|const|let|var|namespace)\s+${n}(?![\w$])`,
  ).exec(source);
  const exported = new RegExp(String.raw`export\s+(?:type\s+)?\{[^}]*(?:^|[^\w$])${n}(?![\w$])[^}]*\}`).exec(source);
  const key = new RegExp(String.raw`^[ \t]*${n}\??:`, "m").exec(source);
  const at = declared ?? exported ?? (member ? null : key);
  if (!at) return false;
  if (!member) return true;
  const m = escape(member);
  const memberDeclared = new RegExp(
    String.raw`(?:^|[\s{;,])(?:(?:public|private|protected|readonly|static|async|get|set)\s+)*${m}\s*(?:\?\s*)?[:(<=]`,
    "m",
  );
  return memberDeclared.test(source.slice(at.index));
}

/** Whether SQL `source` creates `name` (a function, table, view, type...; `t.c`: column `c` added to or in `t`). */
export function definesInSql(source: string, name: string): boolean {
  const [outer, column] = name.split(".");
  if (!column) {
    return new RegExp(
      String
        .raw`create\s+(?:or\s+replace\s+)?(?:function|procedure|table|view|materialized\s+view|type|trigger|index|sequence)\s+(?:if\s+not\s+exists\s+)?(?:\w+\.)?"?${outer}"?(?!\w)`,
      "i",
    ).test(source);
  }
  const added = new RegExp(
    String
      .raw`alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?(?:\w+\.)?${outer}\s[^;]*add\s+column\s+(?:if\s+not\s+exists\s+)?${column}(?!\w)`,
    "i",
  );
  const created = new RegExp(
    String.raw`create\s+table\s+(?:if\s+not\s+exists\s+)?(?:\w+\.)?${outer}\s*\(([^;]*)\)\s*;`,
    "i",
  ).exec(source);
  return added.test(source) ||
    (created !== null && new RegExp(String.raw`(^|[\s(,])${column}\s`, "m").test(created[1]));
}

/** The folder of a path, with its trailing `/` (`""` at the top). */
const folderOf = (path: string) => path.slice(0, path.lastIndexOf("/") + 1);

/**
 * The file a reference written in the row of `rowFile` stands for: the file of that path, else the one file whose path
 * ends with `/<ref>`, else, among several, the one nearest `rowFile` (the longest folder they share). `sql/0022` is the
 * migration whose name starts with `0022_`. An error string when none or no single nearest one is found.
 */
export function resolveFile(ref: string, rowFile: string, files: readonly string[]): string | { error: string } {
  const sql = /^sql\/((?:contract\/)?\d{4})(?:_[\w.]*)?$/.exec(ref);
  const candidates = sql
    ? files.filter((f) => f.startsWith(`sql/${sql[1]}_`) && !f.slice(`sql/${sql[1]}_`.length).includes("/"))
    : files.filter((f) => f === ref || f.endsWith(`/${ref}`));
  if (candidates.length === 1) return candidates[0];
  if (candidates.length === 0) return { error: `no file ${ref}` };
  const exact = candidates.find((f) => f === ref);
  if (exact) return exact;
  const shared = (f: string) => {
    const a = folderOf(f), b = folderOf(rowFile);
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    return a.slice(0, i).lastIndexOf("/") + 1;
  };
  const best = Math.max(...candidates.map(shared));
  const nearest = candidates.filter((f) => shared(f) === best);
  return nearest.length === 1 ? nearest[0] : { error: `${ref} could be ${nearest.join(" or ")}` };
}

/**
 * What the table says that the code does not bear out, one line each naming the row: a file that is not there, a name
 * not defined in the file its row (or its cell) names, a backticked word that is no name.
 */
export function tableProblems(doc: string, files: readonly string[], read: (path: string) => string): string[] {
  const problems: string[] = [];
  const rows = ruleRows(doc);
  if (!rows.length) return [`${DOCUMENT} has no table under "## Where each rule lives"`];
  for (const row of rows) {
    const at = `${DOCUMENT}:${row.line} (${row.rule})`;
    if (!files.includes(row.file)) {
      problems.push(`${at}: the row's file ${row.file} is not there`);
      continue;
    }
    for (const { name, beside } of namesIn(row.where)) {
      if (name === beside) {
        const found = resolveFile(name, row.file, files);
        if (typeof found !== "string") problems.push(`${at}: ${found.error}`);
        continue;
      }
      if (!IDENTIFIER.test(name)) {
        problems.push(`${at}: \`${name}\` is not a name to look for`);
        continue;
      }
      const file = beside ? resolveFile(beside, row.file, files) : row.file;
      if (typeof file !== "string") {
        problems.push(`${at}: \`${name}\`: ${file.error}`);
        continue;
      }
      const defined = file.endsWith(".sql") ? definesInSql(read(file), name) : definesInCode(read(file), name);
      if (!defined) problems.push(`${at}: \`${name}\` is not defined in ${file}`);
    }
  }
  return problems;
}

/** Line comments that speak to a tool, not to a reader, and may come before the opening comment. */
const DIRECTIVE = /^\/\/\/?\s*(?:deno-lint-ignore|deno-fmt-ignore|@ts-|<reference)/;

/**
 * Whether a source file opens with a comment saying what it holds: before its first import or statement (a `#!` line
 * and tool directives aside) a `/* ... *\/` or `//` comment with words in it.
 */
export function opensWithComment(source: string): boolean {
  let rest = source.replace(/^\uFEFF/, "").replace(/^#!.*\n/, "");
  for (;;) {
    rest = rest.trimStart();
    const line = rest.split("\n", 1)[0];
    if (!DIRECTIVE.test(line)) break;
    rest = rest.slice(line.length);
  }
  const comment = rest.startsWith("/*")
    ? rest.slice(2, rest.indexOf("*/") < 0 ? undefined : rest.indexOf("*/"))
    : rest.startsWith("//")
    ? (/^(?:\/\/.*(?:\n|$))+/.exec(rest)?.[0] ?? "")
    : "";
  return /[A-Za-z]{3,}/.test(comment);
}

/** The files under `roots` of `root` (a folder URL) whose names match `pattern`, repository-relative and sorted. */
export function sourceFiles(root: URL, roots = SOURCE_ROOTS, pattern = /\.(tsx?|js)$/): string[] {
  const out: string[] = [];
  const walk = (path: string) => {
    for (const entry of Deno.readDirSync(new URL(path, root))) {
      const child = path + entry.name;
      if (entry.isDirectory && entry.name !== "node_modules" && !entry.name.startsWith(".")) walk(`${child}/`);
      else if (entry.isFile && pattern.test(entry.name)) out.push(child);
    }
  };
  for (const r of roots) {
    if (r.endsWith("/")) walk(r);
    else out.push(r);
  }
  return out.sort();
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url);
  const read = (path: string) => Deno.readTextFileSync(new URL(path, root));
  const files = sourceFiles(root);
  const known = [...files, ...sourceFiles(root, ["sql/"], /\.sql$/)];
  const table = tableProblems(read(DOCUMENT), known, read);
  const silent = files.filter((f) => !opensWithComment(read(f)));
  if (table.length) {
    console.error(`"Where each rule lives" names ${table.length} thing(s) the code does not hold where it says:`);
    console.error(table.map((p) => `  ${p}`).join("\n"));
  }
  if (silent.length) {
    console.error(`${silent.length} source file(s) do not open with a comment saying what they hold:`);
    console.error(silent.map((f) => `  ${f}`).join("\n"));
  }
  if (table.length || silent.length) Deno.exit(1);
  const rows = ruleRows(read(DOCUMENT)).length;
  console.log(`architecture: ${rows} rows of ${DOCUMENT} hold, and ${files.length} source files open with a comment`);
}
