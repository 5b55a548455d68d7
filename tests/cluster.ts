/**
 * The local HA cluster of `deno task cluster` (README, "A Postgres HA cluster"), for the tests that run on one:
 * whether it can run here, its commands as an operator types them, and its status.
 */
import assert from "node:assert/strict";
import { cannotInstall, ensurePackages, missingPackages } from "../jobs/commands/cluster/packages.ts";
import { parseStatus, type Status } from "../jobs/commands/cluster/status.ts";

const root = new URL("..", import.meta.url).pathname;

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

/** `deno task cluster <command> --dir <dir>`; a start gives up after 40 s, within a test's budget. */
export async function clusterTask(
  command: string,
  dir: string,
): Promise<{ code: number; stdout: string; stderr: string; lastLine: string }> {
  const timeout = command === "start" ? ["--timeout", "40"] : [];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cluster", command, "--dir", dir, ...timeout],
    cwd: root,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  const stdout = text(out.stdout);
  return { code: out.code, stdout, stderr: text(out.stderr), lastLine: stdout.trim().split("\n").at(-1) ?? "" };
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
