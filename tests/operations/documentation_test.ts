/**
 * What a newcomer reads (issue 46): a README of at most 300 lines whose every topic is one link away, links in the
 * README and docs/ that all lead somewhere, shell blocks that are safe to paste whole, and ids each called by what they
 * are. Read from the files themselves, with no service: the quickstart itself runs in quickstart_test.ts and the filter
 * examples in tests/webhooks/filter_examples_test.ts.
 */
import assert from "node:assert/strict";

const root = new URL("../..", import.meta.url).pathname;

/** README.md and every page of docs/, by their path from the repository's root. */
function documents(): string[] {
  const docs = [...Deno.readDirSync(`${root}docs`)].filter((e) => e.isFile && e.name.endsWith(".md"));
  return ["README.md", ...docs.map((e) => `docs/${e.name}`).sort()];
}

/** The file's lines outside fenced code blocks, with their numbers, and its fenced blocks with their first line. */
export function split(
  text: string,
): { prose: [number, string][]; blocks: { line: number; lang: string; body: string }[] } {
  const prose: [number, string][] = [];
  const blocks: { line: number; lang: string; body: string }[] = [];
  let open: { line: number; lang: string; lines: string[] } | null = null;
  text.split("\n").forEach((line, i) => {
    const fence = /^\s*```(\w*)/.exec(line);
    if (fence) {
      if (open === null) open = { line: i + 1, lang: fence[1], lines: [] };
      else {
        blocks.push({ line: open.line, lang: open.lang, body: open.lines.join("\n") });
        open = null;
      }
    } else if (open !== null) open.lines.push(line);
    else prose.push([i + 1, line]);
  });
  return { prose, blocks };
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens; a repeated one gets -1, -2... */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, line] of split(text).prose) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const words = heading[1].replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = words.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** The relative targets of a file's Markdown links and images (`[text](target)`, `src="target"`), outside code. */
export function links(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  for (const [line, raw] of split(text).prose) {
    const bare = raw.replace(/`[^`]*`/g, "");
    const found = [
      ...[...bare.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]),
      ...[...bare.matchAll(/\ssrc="([^"]+)"/g)].map((m) => m[1]),
    ];
    for (const target of found) if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) out.push({ line, target });
  }
  return out;
}

/** The commands of a shell block: its lines that are not blank, not comments and not the rest of a command. */
function commands(body: string): string[] {
  const out: string[] = [];
  let continued = false;
  for (const line of body.split("\n")) {
    const starts = !continued && !/^\s/.test(line) && line.trim() !== "" && !line.trim().startsWith("#");
    if (starts) out.push(line);
    continued = /\\\s*$/.test(line);
  }
  return out;
}

Deno.test("the README and docs/: short, linked, safe to paste, each id called by what it is", async (t) => {
  const files = new Map(documents().map((f) => [f, Deno.readTextFileSync(root + f)]));

  await t.step("README.md is at most 300 lines and links every page of docs/", () => {
    const readme = files.get("README.md")!;
    const lines = readme.trimEnd().split("\n").length;
    assert.ok(lines <= 300, `README.md has ${lines} lines`);
    const linked = new Set(links(readme).map((l) => l.target.split("#")[0]));
    const missing = documents().filter((f) => f.startsWith("docs/") && !linked.has(f));
    assert.deepEqual(missing, [], "pages of docs/ the README does not link");
  });

  await t.step("every relative link of README.md and docs/ leads to a file, and its #anchor to a heading", () => {
    const broken: string[] = [];
    for (const [file, text] of files) {
      const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/") + 1) : "";
      for (const { line, target } of links(text)) {
        const [path, anchor] = target.split("#");
        const to = path === "" ? file : new URL(dir + path, `file://${root}`).pathname.slice(root.length);
        let content: string | null = null;
        try {
          const stat = Deno.statSync(root + to);
          content = stat.isFile ? Deno.readTextFileSync(root + to) : "";
        } catch {
          broken.push(`${file}:${line}: ${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && to.endsWith(".md") && !anchors(content).has(anchor)) {
          broken.push(`${file}:${line}: ${target}: no heading #${anchor} in ${to}`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  await t.step("a shell block that disables or deletes holds that one command, apart from the others", () => {
    const mixed: string[] = [];
    for (const [file, text] of files) {
      for (const block of split(text).blocks.filter((b) => ["sh", "bash", "shell"].includes(b.lang))) {
        const all = commands(block.body);
        const destructive = all.filter((c) => /-X\s*DELETE\b|\bdeno task (--quiet )?token:revoke\b/.test(c));
        if (destructive.length > 0 && all.length > 1) mixed.push(`${file}:${block.line}: ${all.join(" ; ")}`);
      }
    }
    assert.deepEqual(mixed, []);
  });

  await t.step("a task whose output is read (in $(...) or a pipe) runs with --quiet: only its value is printed", () => {
    const noisy: string[] = [];
    for (const [file, text] of files) {
      for (const block of split(text).blocks) {
        for (const line of block.body.split("\n")) {
          const read = /\$\(\s*deno task (?!--quiet)|deno task (?!--quiet)[^#&;]*\|/.test(line);
          if (read) noisy.push(`${file}:${block.line}: ${line.trim()}`);
        }
      }
    }
    assert.deepEqual(noisy, []);
  });

  await t.step("a webhook body's id is called the delivery record's, and the event's id is named apart", () => {
    const wrong: string[] = [];
    for (const [file, text] of files) {
      text.split("\n").forEach((line, i) => {
        // the words: an event id (or event_id) explained as the `id` of a webhook body
        if (/event(_id| id)[^.]{0,40}\(the `id` of a webhook body/.test(line)) wrong.push(`${file}:${i + 1}: ${line}`);
      });
    }
    assert.deepEqual(wrong, []);
    const webhooks = files.get("docs/webhooks.md")!;
    assert.ok(anchors(webhooks).has("which-id-is-which"), 'docs/webhooks.md has no "Which id is which"');
    const section = webhooks.split(/\n(?=## )/).find((s) => s.startsWith("## Which id is which"))!;
    for (const word of ["record id", "event id", "transaction id", "`webhook-id`", "?event_id="]) {
      assert.ok(section.includes(word), `"Which id is which" does not say ${word}`);
    }
    assert.match(section, /`GET \/api\/v2\/notifications\/events\?event_id=<a body's id>` answers `\{"data": \[\]\}`/);
    assert.match(files.get("README.md")!, /\]\(docs\/webhooks\.md#which-id-is-which\)/);
  });
});
