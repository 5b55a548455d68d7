/**
 * `deno task check` runs this: every source file (`main.ts` and the `.ts`/`.tsx` files under `domain/`, `routes/`,
 * `jobs/` and `commands/`) is named in docs/architecture.md, so the map stays whole as files come, go and move. Exits 1
 * naming every file the document does not name.
 *
 * A file is named by its path from the repository root (`domain/infra/tasks.ts`), or by any shorter end of it that
 * no other source file shares (`tasks.ts`, `infra/tasks.ts`). Inside a folder's section (under a heading that is the
 * folder alone: ### `domain/subjects/`) or paragraph (one that opens with the folder in bold: **`routes/policy/`**), a
 * name is also read from that folder: there `people.ts` is `domain/subjects/people.ts`, although
 * `routes/subjects/people.ts` has the same name. A name two files share names neither anywhere else: `schemas.ts` alone
 * says nothing.
 */

/** Where the source files are: a file, or a folder (ending in `/`) read to the bottom. */
export const SOURCE_ROOTS = ["main.ts", "domain/", "routes/", "jobs/", "commands/"];

export const DOCUMENT = "docs/architecture.md";

/** `….ts` and `….tsx` as prose writes them: a path, or a bare file name. */
const FILE_NAME = /[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.tsx?(?![A-Za-z0-9_])/g;
/** A heading that is a folder alone makes its section that folder's: ### `domain/webhooks/`. */
const FOLDER_HEADING = /^#{1,6}\s+`([A-Za-z0-9_.\/-]+\/)`\s*$/;
/** A paragraph that opens with a folder in bold is that folder's: **`routes/policy/`**. */
const FOLDER_PARAGRAPH = /^\*\*`([A-Za-z0-9_.\/-]+\/)`\*\*/;

/**
 * Every file name the document writes, as written and also joined to the folder of its section or paragraph. A section
 * ends at the next heading, a paragraph at a blank line.
 */
export function mentions(doc: string): string[] {
  const found = new Set<string>();
  for (const section of doc.split(/\n(?=#{1,6}\s)/)) {
    const sectionFolder = FOLDER_HEADING.exec(section.split("\n", 1)[0])?.[1];
    for (const paragraph of section.split(/\n\s*\n/)) {
      const paragraphFolder = FOLDER_PARAGRAPH.exec(paragraph.trimStart())?.[1];
      for (const [name] of paragraph.matchAll(FILE_NAME)) {
        const bare = name.replace(/^(\.\/)+/, "");
        found.add(bare);
        for (const folder of [sectionFolder, paragraphFolder]) if (folder) found.add(folder + bare);
      }
    }
  }
  return [...found];
}

/** The files a mention can stand for: the file of that path, or every file whose path ends with `/<mention>`. */
function filesNamedBy(mention: string, files: readonly string[]): string[] {
  return files.filter((f) => f === mention || f.endsWith(`/${mention}`));
}

/** The files of `files` (repository-relative paths) that `doc` does not name, in the order given. */
export function unnamed(files: readonly string[], doc: string): string[] {
  const named = new Set<string>();
  for (const mention of mentions(doc)) {
    const candidates = filesNamedBy(mention, files);
    if (candidates.length === 1) named.add(candidates[0]);
  }
  return files.filter((f) => !named.has(f));
}

/** The source files under `root` (a folder URL), repository-relative and sorted. */
export function sourceFiles(root: URL): string[] {
  const out: string[] = [];
  const walk = (path: string) => {
    for (const entry of Deno.readDirSync(new URL(path, root))) {
      const child = path + entry.name;
      if (entry.isDirectory) walk(`${child}/`);
      else if (entry.isFile && /\.tsx?$/.test(entry.name)) out.push(child);
    }
  };
  for (const r of SOURCE_ROOTS) {
    if (r.endsWith("/")) walk(r);
    else out.push(r);
  }
  return out.sort();
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url);
  const files = sourceFiles(root);
  const missing = unnamed(files, Deno.readTextFileSync(new URL(DOCUMENT, root)));
  if (missing.length) {
    console.error(
      `${DOCUMENT} does not name ${missing.length} source file(s): say in the folder's paragraph what each holds\n` +
        missing.map((f) => `  ${f}`).join("\n"),
    );
    Deno.exit(1);
  }
  console.log(`architecture: ${files.length} source files, each named in ${DOCUMENT}`);
}
