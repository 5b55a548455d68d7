/**
 * The local HA cluster of `deno task cluster` (docs/operations.md, "A Postgres HA cluster"), for the tests that run on
 * one: whether it can run here, its commands as an operator types them, and its status.
 */
import assert from "node:assert/strict";
import { cannotInstall, ensurePackages, missingPackages } from "../../commands/cluster/packages.ts";
import { parseStatus, type Status } from "../../commands/cluster/status.ts";

const root = new URL("../..", import.meta.url).pathname;

let unavailable: Promise<string | null> | null = null;

/**
 * Why a cluster cannot run here, or null when it can. The Debian packages are installed now when they are missing and
 * can be (root, apt-get, an archive that answers), as `deno task cluster start` would; a machine where they cannot be
 * reports the cluster stories as ignored with the reason, never as failed.
 */
export function clusterUnavailable(): Promise<string | null> {
  unavailable ??= (async () => {
    const reason = await cannotInstall(await missingPackages());
    if (reason) return reason;
    try {
      await ensurePackages();
      return null;
    } catch (err) {
      return `the cluster's packages could not be installed: ${
        err instanceof Error ? err.message.split("\n")[0] : err
      }`;
    }
  })();
  return unavailable;
}

/**
 * `deno task cluster <command> --dir <dir> [options]` as an operator types it. A command that waits (start,
 * switchover, backup, a rehearsal) gives up after 40 s, within a test's budget, rather than its default 120 s.
 */
export async function clusterTask(
  command: string,
  dir: string,
  ...options: string[]
): Promise<{ code: number; stdout: string; stderr: string; lastLine: string }> {
  const waits = ["start", "switchover", "backup"].includes(command) ||
    command === "restore-rehearsal" && !options.includes("--stop");
  const timeout = waits ? ["--timeout", "40"] : [];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cluster", command, "--dir", dir, ...options, ...timeout],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  const stdout = text(out.stdout);
  return { code: out.code, stdout, stderr: text(out.stderr), lastLine: stdout.trim().split("\n").at(-1) ?? "" };
}

/**
 * The processes still working in `dir` or naming a path inside it (`processesOf`), listed by a child with every
 * permission: Deno lets only such a process read /proc, and the test runner grants the tests less.
 */
export async function processesIn(dir: string): Promise<string[]> {
  const module = new URL("../../commands/cluster/processes.ts", import.meta.url).href;
  const code = `import { processesOf } from ${JSON.stringify(module)};
    for (const p of await processesOf(${JSON.stringify(dir)})) console.log(p.pid, p.name, p.args.join(" "));`;
  const out = await new Deno.Command(Deno.execPath(), { args: ["eval", code], cwd: root, stdout: "piped" }).output();
  assert.ok(out.success, "listing the processes of the cluster");
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => line !== "");
}

export async function clusterStatus(dir: string): Promise<Status> {
  const out = await clusterTask("status", dir);
  assert.equal(out.code, 0, out.stderr);
  return parseStatus(out.stdout);
}

/** A folder for a cluster's files that the `postgres` user can enter (tests/run.ts does the same). */
export async function clusterDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "payments-cluster-" });
  await Deno.chmod(dir, 0o755);
  return dir;
}
