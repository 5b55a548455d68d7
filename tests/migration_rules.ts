/**
 * The project's own migration rules, as pure functions over file texts (docs/migrations.md, "What a migration may do"):
 * what an expand file of `sql/` may not do while the previous release still runs beside it, what a contract file of
 * `sql/contract/` may drop, and the `lock_timeout` every file sets first. `tests/migration_lint.ts` feeds them the
 * files, the code of this release and of the previous one, and runs squawk beside them; the unit tests feed them
 * migrations written for the purpose. Kept apart from that script so the rules run with no git, no squawk and no disk.
 */

/** One refusal: the file, the 1-based line, the rule's name and why, in the project's words. */
export type Finding = { path: string; line: number; rule: string; message: string };

/** A statement of a SQL file: its text, the same text with comments and literal contents blanked, and where it starts. */
export type Statement = { text: string; code: string; offset: number; line: number };

/** Text searched for names: a file of code, or a function body of `sql/`, with the line its text starts on. */
export type Source = { path: string; text: string; line: number; defines?: string };

/** Expand files numbered up to this one predate the rules (issue 33) and are not linted. */
export const LAST_UNLINTED = 31;

/** squawk 2.66.0, pinned: its binary comes as the optional npm package of the platform (docs/migrations.md). */
export const SQUAWK_VERSION = "2.66.0";

/**
 * squawk rules turned off for contract files only, on top of those `.squawk.toml` turns off for every file: dropping is
 * what a contract file is for, and `contractFindings` checks that nothing still names what it drops.
 */
export const CONTRACT_SQUAWK_EXCLUDED = [
  "ban-drop-column",
  "ban-drop-table",
  "ban-drop-not-null",
  // the migrator runs each file in a transaction, where DROP INDEX CONCURRENTLY is refused; a plain DROP INDEX holds
  // its lock only for the catalog change, under the file's lock_timeout
  "require-concurrent-index-deletion",
];

/** `excluded_rules` of a `.squawk.toml` (the one key this project sets that the script needs to read back). */
export function squawkExcludedRules(toml: string): string[] {
  const match = /^\s*excluded_rules\s*=\s*\[([^\]]*)\]/m.exec(toml.replace(/#[^\n]*/g, ""));
  if (!match) return [];
  return [...match[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/** The version number of a migration file name (`0032_x.sql` → 32), or null when it is not one. */
export function migrationNumber(path: string): number | null {
  const match = /(?:^|\/)(\d{4})_[^/]+\.sql$/.exec(path);
  return match ? Number(match[1]) : null;
}

/** Whether `sql/<file>` is an expand file the rules apply to (numbered after `LAST_UNLINTED`). */
export function isLintedExpand(path: string): boolean {
  const n = migrationNumber(path);
  return n !== null && n > LAST_UNLINTED;
}

/** The 1-based line of `offset` in `text`. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/**
 * `sql` with comments, and the contents of string literals and dollar-quoted bodies, replaced by spaces (newlines kept),
 * so the result has the same length and lines and a rule never matches words inside a literal or a comment. Quoted
 * identifiers stay. Throws on an unterminated literal or comment.
 */
export function maskSql(sql: string): string {
  const out = sql.split("");
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (out[i] !== "\n") out[i] = " ";
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "-" && next === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end === -1 ? sql.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < sql.length && depth > 0) {
        if (sql[j] === "/" && sql[j + 1] === "*") (depth++, j += 2);
        else if (sql[j] === "*" && sql[j + 1] === "/") (depth--, j += 2);
        else j++;
      }
      if (depth > 0) throw new Error(`unterminated comment at line ${lineAt(sql, i)}`);
      blank(i, j);
      i = j;
    } else if (c === "'") {
      const escapes = /[eE]/.test(sql[i - 1] ?? "") && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? "");
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new Error(`unterminated string at line ${lineAt(sql, i)}`);
        if (escapes && sql[j] === "\\") j += 2;
        else if (sql[j] === "'" && sql[j + 1] === "'") j += 2;
        else if (sql[j] === "'") break;
        else j++;
      }
      blank(i + 1, j);
      i = j + 1;
    } else if (c === '"') {
      const end = sql.indexOf('"', i + 1);
      if (end === -1) throw new Error(`unterminated quoted name at line ${lineAt(sql, i)}`);
      i = end + 1;
    } else if (c === "$" && !/[A-Za-z0-9_]/.test(sql[i - 1] ?? "")) {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 64))?.[0];
      if (!tag) {
        i++;
        continue;
      }
      const end = sql.indexOf(tag, i + tag.length);
      if (end === -1) throw new Error(`unterminated ${tag} body at line ${lineAt(sql, i)}`);
      blank(i + tag.length, end);
      i = end + tag.length;
    } else i++;
  }
  return out.join("");
}

/** The statements of a SQL file, split on the semicolons outside literals and comments. */
export function splitStatements(sql: string): Statement[] {
  const code = maskSql(sql);
  const statements: Statement[] = [];
  let start = 0;
  for (let i = 0; i <= code.length; i++) {
    if (i < code.length && code[i] !== ";") continue;
    const lead = code.slice(start, i).search(/\S/);
    if (lead !== -1) {
      const offset = start + lead;
      statements.push({ text: sql.slice(offset, i), code: code.slice(offset, i), offset, line: lineAt(sql, offset) });
    }
    start = i + 1;
  }
  return statements;
}

const NAME = String.raw`(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_$]*)(?:\s*\.\s*(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_$]*))*`;

/** The unqualified, unquoted, lower-cased form of a name as SQL writes it (`public."Foo"` → `Foo`, `a.b` → `b`). */
export function bareName(name: string): string {
  const last = name.trim().split(/\s*\.\s*(?=(?:[^"]*"[^"]*")*[^"]*$)/).pop() ?? "";
  return last.startsWith('"') ? last.slice(1, -1) : last.toLowerCase();
}

/** The parts of `text` separated by commas outside parentheses, with their offsets in `text`. */
function topLevelParts(text: string): { part: string; offset: number }[] {
  const parts: { part: string; offset: number }[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (i === text.length || (c === "," && depth === 0)) {
      const lead = text.slice(start, i).search(/\S/);
      if (lead !== -1) parts.push({ part: text.slice(start + lead, i), offset: start + lead });
      start = i + 1;
    }
  }
  return parts;
}

/** What a statement removes or renames away: the kind, the name, the table a column or constraint belongs to. */
export type Removal = {
  kind: string;
  name: string;
  table?: string;
  renamed: boolean;
  cascade: boolean;
  offset: number;
};

const DROPPABLE =
  "table|view|materialized\\s+view|function|procedure|aggregate|type|domain|trigger|index|sequence|schema|extension|rule|policy";
const ALTERABLE =
  "view|materialized\\s+view|function|procedure|aggregate|type|domain|index|sequence|schema|trigger|policy|rule";

/** The objects a statement drops or renames away, read from its masked code (offsets within the statement). */
export function removals(statement: Statement): Removal[] {
  const code = statement.code;
  const found: Removal[] = [];
  const cascade = /\bcascade\s*$/i.test(code);
  const drop = new RegExp(
    String
      .raw`^drop\s+(${DROPPABLE})\s+(?:concurrently\s+)?(?:if\s+exists\s+)?([\s\S]*?)(?:\s+on\s+(${NAME}))?(?:\s+(?:cascade|restrict))?\s*$`,
    "id",
  ).exec(code);
  if (drop) {
    const kind = drop[1].toLowerCase().replace(/\s+/, " ");
    const namesStart = drop.indices![2]![0];
    for (const { part, offset } of topLevelParts(drop[2])) {
      const name = new RegExp(`^${NAME}`).exec(part)?.[0];
      if (!name) continue;
      found.push({
        kind,
        name: bareName(name),
        table: drop[3] ? bareName(drop[3]) : undefined,
        renamed: false,
        cascade,
        offset: namesStart + offset,
      });
    }
    return found;
  }
  const alterTable = new RegExp(
    String.raw`^alter\s+(?:foreign\s+)?table\s+(?:if\s+exists\s+)?(?:only\s+)?(${NAME})\s*\*?\s+([\s\S]*)$`,
    "i",
  ).exec(code);
  if (alterTable) {
    const table = bareName(alterTable[1]);
    const actionsStart = code.length - alterTable[2].length;
    for (const { part, offset } of topLevelParts(alterTable[2])) {
      const at = actionsStart + offset;
      const partCascade = /\bcascade\s*$/i.test(part);
      const dropConstraint = new RegExp(String.raw`^drop\s+constraint\s+(?:if\s+exists\s+)?(${NAME})`, "i").exec(part);
      const dropColumn = new RegExp(String.raw`^drop\s+(?:column\s+)?(?:if\s+exists\s+)?(${NAME})`, "i").exec(part);
      const renameColumn = new RegExp(String.raw`^rename\s+(?:column\s+)?(${NAME})\s+to\s+`, "i").exec(part);
      const renameConstraint = new RegExp(String.raw`^rename\s+constraint\s+(${NAME})\s+to\s+`, "i").exec(part);
      const renameTable = /^(?:rename\s+to|set\s+schema)\s/i.test(part);
      if (dropConstraint) {
        found.push({
          kind: "constraint",
          name: bareName(dropConstraint[1]),
          table,
          renamed: false,
          cascade: partCascade,
          offset: at,
        });
      } else if (dropColumn && !/^(?:default|not|identity|expression)$/i.test(dropColumn[1])) {
        found.push({
          kind: "column",
          name: bareName(dropColumn[1]),
          table,
          renamed: false,
          cascade: partCascade,
          offset: at,
        });
      } else if (renameConstraint) {
        found.push({
          kind: "constraint",
          name: bareName(renameConstraint[1]),
          table,
          renamed: true,
          cascade: false,
          offset: at,
        });
      } else if (renameTable) {
        found.push({ kind: "table", name: table, renamed: true, cascade: false, offset: at });
      } else if (renameColumn && !/^(?:to|constraint)$/i.test(renameColumn[1])) {
        found.push({
          kind: "column",
          name: bareName(renameColumn[1]),
          table,
          renamed: true,
          cascade: false,
          offset: at,
        });
      }
    }
    return found;
  }
  const alterOther = new RegExp(String.raw`^alter\s+(${ALTERABLE})\s+(?:if\s+exists\s+)?(${NAME})([\s\S]*)$`, "i").exec(
    code,
  );
  if (alterOther) {
    const kind = alterOther[1].toLowerCase().replace(/\s+/, " ");
    const rest = alterOther[3];
    const restAt = code.length - rest.length;
    const dropPart = new RegExp(String.raw`\bdrop\s+(attribute|constraint)\s+(?:if\s+exists\s+)?(${NAME})`, "i").exec(
      rest,
    );
    const renamePart = new RegExp(String.raw`\brename\s+(attribute|value|constraint)\s+(${NAME}|'[^']*')\s+to\b`, "i")
      .exec(rest);
    if (dropPart) {
      found.push({
        kind: dropPart[1].toLowerCase(),
        name: bareName(dropPart[2]),
        table: bareName(alterOther[2]),
        renamed: false,
        cascade,
        offset: restAt + dropPart.index,
      });
    } else if (renamePart) {
      found.push({
        kind: renamePart[1].toLowerCase(),
        name: bareName(renamePart[2]),
        table: bareName(alterOther[2]),
        renamed: true,
        cascade: false,
        offset: restAt + renamePart.index,
      });
    } else if (/\b(?:rename\s+to|set\s+schema)\s/i.test(rest)) {
      found.push({ kind, name: bareName(alterOther[2]), renamed: true, cascade: false, offset: 0 });
    }
  }
  return found;
}

/** `table t.c` as a message names a removed object. */
function describe(r: Removal): string {
  return r.table && (r.kind === "column" || r.kind === "constraint" || r.kind === "attribute")
    ? `${r.kind} ${r.table}.${r.name}`
    : r.table && r.kind === "trigger"
    ? `trigger ${r.name} on ${r.table}`
    : `${r.kind} ${r.name}`;
}

/** Tables a file creates (new tables: nothing of the previous release reads them, and they are empty). */
function createdTables(statements: Statement[]): Set<string> {
  const created = new Set<string>();
  for (const s of statements) {
    const m = new RegExp(
      String
        .raw`^create\s+(?:(?:global\s+|local\s+)?(?:temp|temporary)\s+|unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?(${NAME})`,
      "i",
    ).exec(s.code);
    if (m) created.add(bareName(m[1]));
  }
  return created;
}

/** A `lock_timeout` value that bounds nothing: 0, or the default (0 unless the server says otherwise). */
function unbounded(value: string): boolean {
  return /^(?:'\s*0+\s*(?:ms|s|min)?\s*'|0+|default)$/i.test(value.trim());
}

/**
 * The lock_timeout rule, for expand and contract files alike: `set local lock_timeout` to a bound comes before the first
 * statement other than a SET. A plain `set lock_timeout` is refused: inside the migration's transaction it outlives the
 * commit and stays on the pooled connection that ran the file, for every request it serves after.
 */
export function lockTimeoutFindings(path: string, statements: Statement[]): Finding[] {
  const findings: Finding[] = [];
  let bounded = false;
  for (const s of statements) {
    const set = /^set\s+(local\s+|session\s+)?lock_timeout\s*(?:=|\bto\b)\s*([\s\S]*)$/i.exec(s.code);
    if (set) {
      const value = s.text.slice(s.code.length - set[2].length);
      if (!/^local/i.test(set[1] ?? "")) {
        findings.push({
          path,
          line: s.line,
          rule: "lock-timeout",
          message: "sets lock_timeout for the session: write `set local lock_timeout = '2s'`, which ends with the " +
            "migration's transaction (a plain SET stays on the pooled connection that ran the file, for the requests " +
            "it serves after)",
        });
        bounded = true; // one finding for the file, not a second one at the next statement
      } else if (unbounded(value)) {
        findings.push({
          path,
          line: s.line,
          rule: "lock-timeout",
          message:
            `sets lock_timeout to ${value.trim()}, which bounds nothing: a statement waiting for a lock queues ` +
            "every request behind it for as long as it waits",
        });
        bounded = true;
      } else bounded = true;
      continue;
    }
    if (/^(?:set|reset)\s/i.test(s.code)) continue;
    if (!bounded) {
      findings.push({
        path,
        line: s.line,
        rule: "lock-timeout",
        message: "takes a lock before the file sets one: start the file with `set local lock_timeout = '2s'`, so a " +
          "statement waiting behind a long transaction fails (and the start retries) instead of queueing every " +
          "request on the table behind it",
      });
    }
    return findings;
  }
  return findings;
}

const CONTRACT_HINT = "it may go in sql/contract/ one release later, once no code of this release or of the previous " +
  "one names it (docs/migrations.md)";

/** The DO block's body as statements of their own (offsets and lines those of `sql`, the file), or none. */
function doBodyStatements(s: Statement, sql: string): Statement[] {
  const m = /^do\s+(?:language\s+\w+\s+)?(\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)/i.exec(s.code);
  if (!m) return [];
  const start = m[0].length;
  const end = s.code.lastIndexOf(m[1]);
  if (end <= start) return [];
  return splitStatements(s.text.slice(start, end)).flatMap((b) => {
    // plpgsql wraps statements in begin, if ... then, loop: read from the first word that starts a DDL statement
    const cut = b.code.search(/\b(?:drop|alter|create)\s/i);
    if (cut === -1) return [];
    const offset = s.offset + start + b.offset + cut;
    return [{ text: b.text.slice(cut), code: b.code.slice(cut), offset, line: lineAt(sql, offset) }];
  });
}

/**
 * The rules of an expand file (`sql/NNNN_*.sql` after 0031): it runs at the start of a new instance while instances of
 * the previous release serve, so it drops and renames nothing, changes no column's type, adds no NOT NULL the previous
 * release's inserts would break, builds no index that blocks writes to a table in use, and bounds its lock waits.
 */
export function expandFindings(path: string, sql: string): Finding[] {
  let statements: Statement[];
  try {
    statements = splitStatements(sql);
  } catch (err) {
    return [{ path, line: 1, rule: "unparsable", message: (err as Error).message }];
  }
  const findings = lockTimeoutFindings(path, statements);
  const created = createdTables(statements);
  const at = (s: Statement, offset: number) => lineAt(sql, s.offset + offset);
  for (const s of [...statements, ...statements.flatMap((s) => doBodyStatements(s, sql))]) {
    for (const r of removals(s)) {
      findings.push({
        path,
        line: at(s, r.offset),
        rule: r.renamed ? "expand-rename" : "expand-drop",
        message: r.renamed
          ? `renames ${describe(r)}: the previous release, still running beside this one, uses the old name; add ` +
            `the new one beside it instead, and ${CONTRACT_HINT.replace("it may go", "drop the old one")}`
          : `drops ${describe(r)}: an expand migration removes nothing the previous release may still use; ` +
            CONTRACT_HINT,
      });
    }
    const alterTable = new RegExp(
      String.raw`^alter\s+table\s+(?:if\s+exists\s+)?(?:only\s+)?(${NAME})\s*\*?\s+([\s\S]*)$`,
      "i",
    ).exec(s.code);
    if (alterTable) {
      const table = bareName(alterTable[1]);
      if (created.has(table)) continue; // a table of this file: empty, and unknown to the previous release
      const actionsStart = s.code.length - alterTable[2].length;
      for (const { part, offset } of topLevelParts(alterTable[2])) {
        const line = at(s, actionsStart + offset);
        const column = new RegExp(String.raw`^alter\s+(?:column\s+)?(${NAME})\s+`, "i").exec(part);
        if (column && new RegExp(String.raw`^(?:set\s+data\s+)?type\b`, "i").test(part.slice(column[0].length))) {
          findings.push({
            path,
            line,
            rule: "expand-column-type",
            message: `changes the type of ${table}.${bareName(column[1])}: the table is rewritten under an ACCESS ` +
              "EXCLUSIVE lock and the previous release reads and writes the old type; add a column of the new type " +
              "beside it",
          });
        } else if (column && /^set\s+not\s+null\b/i.test(part.slice(column[0].length))) {
          findings.push({
            path,
            line,
            rule: "expand-set-not-null",
            message: `makes ${table}.${bareName(column[1])} NOT NULL: the previous release may insert rows without ` +
              "it, and the check scans the table under an ACCESS EXCLUSIVE lock",
          });
        }
        const add = new RegExp(String.raw`^add\s+(?:column\s+)?(?:if\s+not\s+exists\s+)?(${NAME})\s+([\s\S]*)$`, "i")
          .exec(part);
        if (
          add && !/^(?:constraint|primary|unique|check|foreign|exclude)$/i.test(add[1]) &&
          /\bnot\s+null\b/i.test(add[2]) && !/\b(?:default|generated)\b/i.test(add[2])
        ) {
          findings.push({
            path,
            line,
            rule: "expand-not-null-without-default",
            message: `adds ${table}.${bareName(add[1])} NOT NULL without a DEFAULT: the previous release's inserts ` +
              "do not name it and would fail; give it a DEFAULT, or add it nullable",
          });
        }
      }
    }
    const index = new RegExp(
      String
        .raw`^create\s+(?:unique\s+)?index\s+(concurrently\s+)?(?:if\s+not\s+exists\s+)?(?:${NAME}\s+)?on\s+(?:only\s+)?(${NAME})`,
      "i",
    ).exec(s.code);
    if (index && !index[1] && !created.has(bareName(index[2]))) {
      findings.push({
        path,
        line: s.line,
        rule: "expand-blocking-index",
        message: `builds an index on ${bareName(index[2])} without CONCURRENTLY: writes to the table wait for the ` +
          "whole build; only a table created in the same file may have its indexes built plainly " +
          '(docs/migrations.md, "Indexes on tables in use")',
      });
    }
  }
  return findings.sort((a, b) => a.line - b.line);
}

/**
 * The function and procedure bodies of `sql/` still defined once `files` have run in order (a later CREATE OR REPLACE
 * replaces a body, a DROP removes it; overloads share a name and go together). These run at request time and name
 * tables and columns Postgres does not track as dependencies.
 */
export function liveFunctionBodies(files: { path: string; text: string }[]): Source[] {
  const live = new Map<string, Source>();
  for (const file of files) {
    let statements: Statement[];
    try {
      statements = splitStatements(file.text);
    } catch {
      continue; // the file's own lint reports it
    }
    for (const s of statements) {
      const create = new RegExp(String.raw`^create\s+(?:or\s+replace\s+)?(?:function|procedure)\s+(${NAME})`, "i")
        .exec(s.code);
      if (create) {
        const name = bareName(create[1]);
        live.set(name, { path: file.path, text: s.text, line: s.line, defines: name });
        continue;
      }
      for (const r of removals(s)) {
        if ((r.kind === "function" || r.kind === "procedure") && !r.renamed) live.delete(r.name);
      }
    }
  }
  return [...live.values()];
}

/** Where `name` appears as a whole word (case aside) in `sources`, skipping the definition of `name` itself. */
export function findUse(name: string, sources: Source[]): { path: string; line: number } | null {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const word = new RegExp(`(?<![A-Za-z0-9_$])${escaped}(?![A-Za-z0-9_$])`, "i");
  for (const source of sources) {
    if (source.defines === name.toLowerCase()) continue;
    const m = word.exec(source.text);
    if (m) return { path: source.path, line: source.line + lineAt(source.text, m.index) - 1 };
  }
  return null;
}

/** The previous release's code, or why it cannot be read (the contract rule then refuses: it fails closed). */
export type PreviousRelease = { version: string; commit: string; sources: Source[] } | { missing: string };

/**
 * The rules of a contract file (`sql/contract/NNNN_*.sql`): it runs once no instance of the previous release is left,
 * and may drop what neither this release's code nor the previous release's code names (main.ts, routes/, domain/,
 * jobs/, commands/ and the function bodies of `sql/` still defined, its own text aside). No CASCADE: it would drop
 * dependents the file does not name. It bounds its lock waits as every file does.
 */
export function contractFindings(
  path: string,
  sql: string,
  current: Source[],
  previous: PreviousRelease,
): Finding[] {
  let statements: Statement[];
  try {
    statements = splitStatements(sql);
  } catch (err) {
    return [{ path, line: 1, rule: "unparsable", message: (err as Error).message }];
  }
  const findings = lockTimeoutFindings(path, statements);
  if ("missing" in previous) {
    findings.push({
      path,
      line: 1,
      rule: "previous-release",
      message: `cannot tell what the previous release names, so nothing may be dropped: ${previous.missing}`,
    });
  }
  const own = current.filter((s) => s.path !== path);
  for (const s of statements) {
    for (const r of removals(s)) {
      const line = lineAt(sql, s.offset + r.offset);
      if (r.cascade) {
        findings.push({
          path,
          line,
          rule: "contract-cascade",
          message: `drops ${describe(r)} with CASCADE, which also drops whatever depends on it unnamed; drop each ` +
            "dependent by name",
        });
      }
      const uses: string[] = [];
      const here = findUse(r.name, own);
      if (here) uses.push(`this release names it in ${here.path}:${here.line}`);
      if (!("missing" in previous)) {
        const before = findUse(r.name, previous.sources);
        if (before) {
          uses.push(
            `the previous release (${previous.version}, ${previous.commit.slice(0, 7)}) names it in ` +
              `${before.path}:${before.line}`,
          );
        }
      }
      if (uses.length) {
        findings.push({
          path,
          line,
          rule: "contract-drop-in-use",
          message: `${r.renamed ? "renames" : "drops"} ${describe(r)}, but ${uses.join(", and ")}: a contract file ` +
            "removes only what no running code can reach",
        });
      }
    }
  }
  return findings.sort((a, b) => a.line - b.line);
}

/** One line per finding, as the check prints them: `path:line: rule: message`. */
export function formatFinding(f: Finding): string {
  return `${f.path}:${f.line}: ${f.rule}: ${f.message}`;
}
