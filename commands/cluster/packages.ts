/**
 * The Debian packages a local cluster runs on, installed when one is missing (docs/operations.md, "A Postgres HA
 * cluster"). Installing them must not leave services of their own running: etcd's package would start one on 2379,
 * HAProxy's one with its default configuration, PostgreSQL's a cluster of its own. A `policy-rc.d` that exits 101
 * during the install is Debian's way to keep maintainer scripts from starting services; the new services are also
 * disabled (with systemctl), so they do not come up at the next boot either.
 */
import { ClusterError, PG_BIN_DIR } from "./config.ts";

/** Each package and a file that is there once it is installed. */
export const PACKAGES = [
  { name: "patroni", file: "/usr/bin/patroni" },
  { name: "etcd-server", file: "/usr/bin/etcd" },
  { name: "haproxy", file: "/usr/sbin/haproxy" },
  { name: "postgresql-15", file: `${PG_BIN_DIR}/pg_rewind` },
];

/** Services the packages above bring that would hold a port or a configuration of their own. */
const SERVICES: Record<string, string[]> = { "etcd-server": ["etcd"], haproxy: ["haproxy"] };

const POLICY_RC_D = "/usr/sbin/policy-rc.d";
const DENY_ALL = "#!/bin/sh\n# deno task cluster: no service starts while its packages install\nexit 101\n";

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** The packages whose file is missing. */
export async function missingPackages(): Promise<string[]> {
  const missing: string[] = [];
  for (const p of PACKAGES) if (!await exists(p.file)) missing.push(p.name);
  return missing;
}

/**
 * Why the missing packages cannot be installed here (not root, no apt-get), or null when they can be or none is
 * missing. Used by the test to decide up front whether the cluster part runs.
 */
export async function cannotInstall(missing: string[]): Promise<string | null> {
  if (!missing.length) return null;
  const command = `apt-get install -y ${missing.join(" ")}`;
  if (Deno.build.os !== "linux") return `the cluster needs Debian packages (${missing.join(", ")})`;
  if (Deno.uid() !== 0) return `${missing.join(", ")} missing and not root: run \`${command}\` as root`;
  if (!await exists("/usr/bin/apt-get")) return `${missing.join(", ")} missing and no apt-get here`;
  return null;
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command(cmd, { args, env, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) {
    throw new ClusterError(`${cmd} ${args.join(" ")} failed:\n${text.trim().split("\n").slice(-15).join("\n")}`);
  }
  return text;
}

/** Whether the policy-rc.d in place (if any) already refuses every start. */
async function policyDeniesStarts(): Promise<boolean> {
  if (!await exists(POLICY_RC_D)) return false;
  const out = await new Deno.Command(POLICY_RC_D, { args: ["etcd", "start"], stdout: "null", stderr: "null" })
    .output().catch(() => null);
  return out?.code === 101;
}

/**
 * Installs the missing packages (apt-get update, then install) with every service start refused, and disables the
 * services the install added. Returns the packages installed (none when all are there: apt is not called at all).
 */
export async function ensurePackages(say: (line: string) => void = () => {}): Promise<string[]> {
  const missing = await missingPackages();
  if (!missing.length) return [];
  const reason = await cannotInstall(missing);
  if (reason) throw new ClusterError(reason);
  say(`installing ${missing.join(", ")} (apt-get)`);
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  // wait for another apt run rather than fail; give up on an archive that does not answer rather than hang
  const lock = ["-o", "DPkg::Lock::Timeout=120", "-o", "Acquire::http::Timeout=20", "-o", "Acquire::Retries=1"];
  let restore: (() => Promise<void>) | null = null;
  if (!await policyDeniesStarts()) {
    const previous = await Deno.readFile(POLICY_RC_D).catch(() => null);
    await Deno.writeTextFile(POLICY_RC_D, DENY_ALL, { mode: 0o755 });
    restore = () => previous ? Deno.writeFile(POLICY_RC_D, previous) : Deno.remove(POLICY_RC_D);
  }
  try {
    await run("apt-get", [...lock, "update", "-qq"], env);
    await run("apt-get", [...lock, "install", "-y", "-qq", ...missing], env);
  } finally {
    await restore?.();
  }
  const still = await missingPackages();
  if (still.length) throw new ClusterError(`apt-get installed, yet ${still.join(", ")} still missing`);
  // systemctl disables a unit without a running systemd too (a container, an image built for later boots)
  const booted = await exists("/run/systemd/system");
  if (await exists("/usr/bin/systemctl") || await exists("/bin/systemctl")) {
    for (const service of missing.flatMap((name) => SERVICES[name] ?? [])) {
      await run("systemctl", ["disable", ...booted ? ["--now"] : [], service]).catch(() => {});
    }
  }
  return missing;
}
