/**
 * `deno task check` runs this: every expand migration after sql/0031 and every contract migration of `sql/contract/`
 * passes the project's rules (`tests/migration_rules.ts`) and squawk (configured by `.squawk.toml`), so a release
 * neither breaks the previous one running beside it nor blocks traffic while it migrates (docs/migrations.md). A
 * contract file's drops are checked against this release's code and the previous release's (`previous-release.json`,
 * read from git history). Exits 1 naming the file, line and rule of every refusal.
 *
 * squawk runs from the npm package of this platform's binary, pinned in `SQUAWK_VERSION` and locked in deno.lock:
 * `npm:squawk-cli` itself cannot be resolved where the registry lacks another platform's binary of that version (Deno
 * resolves every platform's optional dependency), so the script finds the binary the way squawk-cli's own launcher does.
 * The check task runs it with `--node-modules-dir=none` so that package comes from Deno's cache, not node_modules.
 */

import {
  CONTRACT_SQUAWK_EXCLUDED,
  contractFindings,
  expandFindings,
  type Finding,
  formatFinding,
  isLintedExpand,
  liveFunctionBodies,
  type PreviousRelease,
  type Source,
  SQUAWK_VERSION,
  squawkExcludedRules,
} from "./migration_rules.ts";

/** Where the code that may name a database object lives, in this release and the previous one. */
const CODE_ROOTS = ["main.ts", "routes/", "domain/", "jobs/", "commands/"];
const CODE_FILE = /\.(?:tsx?|sql)$/;
const SQUAWK_CONFIG = ".squawk.toml";

const root = new URL("..", import.meta.url);

/** The numbered `.sql` files of a folder, repository-relative and in order; none when the folder does not exist. */
function migrationsIn(folder: string): { path: string; text: string }[] {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(new URL(folder, root))];
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
  return entries
    .filter((e) => e.isFile && /^\d{4}_.+\.sql$/.test(e.name))
    .map((e) => e.name)
    .sort()
    .map((name) => ({ path: folder + name, text: Deno.readTextFileSync(new URL(folder + name, root)) }));
}

/** This release's code under `CODE_ROOTS`, from the working tree. */
function currentCode(): Source[] {
  const sources: Source[] = [];
  const walk = (path: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(new URL(path, root))];
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return;
      throw err;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const child = path + entry.name;
      if (entry.isDirectory) walk(`${child}/`);
      else if (entry.isFile && CODE_FILE.test(entry.name)) {
        sources.push({ path: child, text: Deno.readTextFileSync(new URL(child, root)), line: 1 });
      }
    }
  };
  for (const r of CODE_ROOTS) {
    if (r.endsWith("/")) walk(r);
    else sources.push({ path: r, text: Deno.readTextFileSync(new URL(r, root)), line: 1 });
  }
  return sources;
}

async function git(args: string[], stdin?: Uint8Array): Promise<{ ok: boolean; out: Uint8Array; err: string }> {
  const child = new Deno.Command("git", {
    args,
    cwd: root,
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin) {
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    await writer.close();
  }
  const out = await child.output();
  return { ok: out.success, out: out.stdout, err: new TextDecoder().decode(out.stderr).trim() };
}

/** The previous release named by `previous-release.json`, its code read from git history; or why it cannot be read. */
async function previousRelease(): Promise<PreviousRelease> {
  let named: { version?: unknown; commit?: unknown };
  try {
    named = JSON.parse(Deno.readTextFileSync(new URL("previous-release.json", root)));
  } catch (err) {
    return { missing: `previous-release.json cannot be read (${(err as Error).message})` };
  }
  const { version, commit } = named;
  if (typeof version !== "string" || typeof commit !== "string" || !/^[0-9a-f]{40}$/.test(commit)) {
    return { missing: 'previous-release.json does not hold {"version": "...", "commit": "<40 hex digits>"}' };
  }
  const known = await git(["cat-file", "-e", `${commit}^{commit}`]);
  if (!known.ok) {
    return {
      missing: `commit ${commit} of the previous release (${version}) is not in this clone's git history ` +
        "(a shallow clone? fetch it, e.g. git fetch --unshallow)",
    };
  }
  const listed = await git(["ls-tree", "-r", "-z", "--name-only", commit, "--", ...CODE_ROOTS.map((r) => r)]);
  if (!listed.ok) return { missing: `git ls-tree ${commit} failed: ${listed.err}` };
  const paths = new TextDecoder().decode(listed.out).split("\0").filter((p) => CODE_FILE.test(p));
  const batch = await git(
    ["cat-file", "--batch"],
    new TextEncoder().encode(paths.map((p) => `${commit}:${p}\n`).join("")),
  );
  if (!batch.ok) return { missing: `git cat-file ${commit} failed: ${batch.err}` };
  // each answer is "<object> blob <size>\n" then <size> bytes then "\n"
  const sources: Source[] = [];
  let at = 0;
  for (const path of paths) {
    const headerEnd = batch.out.indexOf(10, at);
    const header = new TextDecoder().decode(batch.out.subarray(at, headerEnd));
    const size = Number(header.split(" ")[2]);
    if (!/ blob \d+$/.test(header)) return { missing: `git cat-file could not read ${commit}:${path} (${header})` };
    sources.push({
      path,
      text: new TextDecoder().decode(batch.out.subarray(headerEnd + 1, headerEnd + 1 + size)),
      line: 1,
    });
    at = headerEnd + 1 + size + 1;
  }
  return { version, commit, sources };
}

/** The squawk binary of this platform, from its pinned npm package (the path squawk-cli's launcher would take). */
async function squawkBinary(): Promise<string> {
  const platform = { windows: "win32" }[Deno.build.os as string] ?? Deno.build.os;
  const arch = { x86_64: "x64", aarch64: "arm64" }[Deno.build.arch as string] ?? Deno.build.arch;
  const manifest = `npm:@squawk-cli/${platform}-${arch}@${SQUAWK_VERSION}/package.json`;
  await import(manifest, { with: { type: "json" } });
  return new URL(platform === "win32" ? "bin/squawk.exe" : "bin/squawk", import.meta.resolve(manifest)).pathname;
}

/** squawk's findings on `paths` (repository-relative), with `exclude` replacing the config's excluded rules if given. */
async function squawk(binary: string, paths: string[], exclude?: string[]): Promise<Finding[]> {
  if (!paths.length) return [];
  const args = ["--config", SQUAWK_CONFIG, "--reporter", "json"];
  if (exclude) args.push(`--exclude=${exclude.join(",")}`);
  const out = await new Deno.Command(binary, { args: [...args, ...paths], cwd: root, stdout: "piped", stderr: "piped" })
    .output();
  const stdout = new TextDecoder().decode(out.stdout).trim();
  if (out.code !== 0 && out.code !== 1 || !stdout.startsWith("[")) {
    throw new Error(`squawk exited ${out.code}: ${new TextDecoder().decode(out.stderr).trim() || stdout}`);
  }
  const reported: { file: string; line: number; rule_name: string; message: string; help?: string | null }[] = JSON
    .parse(stdout);
  return reported.map((r) => ({
    path: r.file,
    line: r.line + 1, // squawk's JSON counts lines from 0
    rule: `squawk/${r.rule_name}`,
    message: r.help ? `${r.message} ${r.help}` : r.message,
  }));
}

if (import.meta.main) {
  const expand = migrationsIn("sql/");
  const contract = migrationsIn("sql/contract/");
  const linted = expand.filter((f) => isLintedExpand(f.path));
  const findings: Finding[] = linted.flatMap((f) => expandFindings(f.path, f.text));

  if (contract.length) {
    const code = currentCode();
    const previous = await previousRelease();
    for (const [i, file] of contract.entries()) {
      // the bodies defined once the expand files and the contract files up to this one have run, this one's aside
      const bodies = liveFunctionBodies([...expand, ...contract.slice(0, i + 1)]);
      findings.push(...contractFindings(file.path, file.text, [...code, ...bodies], previous));
    }
  }

  try {
    const binary = await squawkBinary();
    findings.push(...await squawk(binary, linted.map((f) => f.path)));
    const excluded = squawkExcludedRules(Deno.readTextFileSync(new URL(SQUAWK_CONFIG, root)));
    findings.push(...await squawk(binary, contract.map((f) => f.path), [...excluded, ...CONTRACT_SQUAWK_EXCLUDED]));
  } catch (err) {
    findings.push({
      path: SQUAWK_CONFIG,
      line: 1,
      rule: "squawk",
      message: `squawk ${SQUAWK_VERSION} could not run, so the migrations are not known to pass it: ` +
        (err as Error).message,
    });
  }

  if (findings.length) {
    findings.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
    console.error(findings.map(formatFinding).join("\n"));
    console.error(`${findings.length} refusal(s): docs/migrations.md says what a migration may do`);
    Deno.exit(1);
  }
  console.log(
    `migrations: ${linted.length} expand file(s) after sql/0031 and ${contract.length} contract file(s) pass the ` +
      `project's rules and squawk ${SQUAWK_VERSION}`,
  );
}
