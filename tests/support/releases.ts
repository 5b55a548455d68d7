/**
 * The release this one upgrades from and rolls back to, as a tree the tests can run: the commit that
 * `previous-release.json` names, taken out of git history with `git archive`, its packages installed, kept in the
 * user's cache (outside the checkout, so no tool reading the repository reads another release's files as its own) so a
 * second run starts at once (docs/production.md, "Upgrading").
 */

const root = new URL("../..", import.meta.url).pathname;

export type Release = { version: string; commit: string; dir: string };

type Named = { version: string; commit: string };

async function run(cmd: string, args: string[], cwd: string) {
  const out = await new Deno.Command(cmd, { args, cwd, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  return { ok: out.success, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** `$XDG_CACHE_HOME/payments-api/releases`, else `~/.cache/...`, else the system's temporary folder. */
function releasesDir(): string {
  const home = Deno.env.get("HOME");
  const cache = Deno.env.get("XDG_CACHE_HOME") ?? (home ? `${home}/.cache` : Deno.env.get("TMPDIR") ?? "/tmp");
  return `${cache}/payments-api/releases`;
}

let previous: Promise<Release | string> | null = null;

/** The previous release ready to run, or why it cannot be here (no git, or history without that commit). */
export function previousRelease(): Promise<Release | string> {
  previous ??= prepare(JSON.parse(Deno.readTextFileSync(`${root}previous-release.json`)));
  return previous;
}

async function prepare({ version, commit }: Named): Promise<Release | string> {
  const dir = `${releasesDir()}/${commit}/`;
  const done = `${dir}.installed`;
  if (await Deno.stat(done).then(() => true, () => false)) return { version, commit, dir };
  const known = await run("git", ["cat-file", "-e", `${commit}^{commit}`], root).catch((err) => ({
    ok: false,
    stderr: String(err),
  }));
  if (!known.ok) {
    return `the previous release's commit ${commit.slice(0, 12)} is not in this checkout's git history ` +
      `(a shallow clone, or no git): ${known.stderr.split("\n")[0] || "not found"}`;
  }
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  // `git archive | tar -x`, without a shell: the archive is written to a file first
  const tarball = `${dir}.tree.tar`;
  const archived = await run("git", ["archive", "--format=tar", `--output=${tarball}`, commit], root);
  if (!archived.ok) throw new Error(`git archive ${commit}: ${archived.stderr}`);
  const extracted = await run("tar", ["-xf", tarball, "-C", dir], root);
  if (!extracted.ok) throw new Error(`tar: ${extracted.stderr}`);
  await Deno.remove(tarball);
  const installed = await run(Deno.execPath(), ["install", "--quiet"], dir);
  if (!installed.ok) throw new Error(`deno install in release ${version}: ${installed.stderr}`);
  await Deno.writeTextFile(done, `${new Date().toISOString()}\n`);
  return { version, commit, dir };
}
