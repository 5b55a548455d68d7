import { dirname, join } from "node:path";

/** Where development secrets are kept, next to the embedded Postgres data (relative to the working directory). */
export const LOCAL_SECRETS_DIR = ".data/secrets";

const SECRET_RE = /^[0-9a-f]{64}$/;

/**
 * A random secret (32 bytes as 64 lowercase hex characters) kept in `<dir>/<name>` and made on first use, so that
 * `deno task start` needs no configuration and keeps its secrets across restarts. The directory is the owner's
 * only (0700) and so is the file (0600). The file appears whole or not at all (written aside, then linked into
 * place, which fails when the name exists), so processes starting together agree on one value: the ones that lose
 * the race read the winner's. Production sets its secrets in the environment instead.
 */
export async function localSecret(name: string, dir = LOCAL_SECRETS_DIR): Promise<string> {
  // Only the last directory is private: the parent also holds the embedded Postgres data, which another OS user
  // (postgres) must be able to reach.
  await Deno.mkdir(dirname(dir), { recursive: true });
  await Deno.mkdir(dir, { mode: 0o700 }).catch((err) => {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  });
  await Deno.chmod(dir, 0o700);
  const path = join(dir, name);
  const existing = await readSecret(path);
  if (existing) return existing;

  const value = crypto.getRandomValues(new Uint8Array(32)).toHex();
  const aside = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(aside, `${value}\n`, { createNew: true, mode: 0o600 });
  try {
    await Deno.link(aside, path);
    return value;
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    return (await readSecret(path))!;
  } finally {
    await Deno.remove(aside);
  }
}

async function readSecret(path: string): Promise<string | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  const value = text.trim();
  if (!SECRET_RE.test(value)) throw new Error(`${path} does not hold a secret of 64 hex characters`);
  return value;
}
