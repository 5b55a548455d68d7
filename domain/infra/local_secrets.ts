/**
 * Development values kept under `.data/secrets`: the secrets the environment leaves out, generated once, and the
 * company `deno task token` signs for (docs/production.md, "Secrets generated outside production"). Kept apart from
 * config.ts, which reads no file.
 */

import { type Config, loadConfig, localSecretsWanted } from "./config.ts";

/** Under `.data`, beside the embedded Postgres data, which is why only this folder is closed to other users. */
export const SECRETS_DIR = ".data/secrets";
const SECRET_BYTES = 32;
const NAME_RE = /^[a-z][a-z0-9_]{0,63}$/;

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * A random secret (32 bytes as 64 hex characters) made on first use and kept in `<dir>/<name>`, readable by its owner
 * only, so a development instance never falls back to a value anyone could read in the source. Later calls, and other
 * processes started at the same moment, get the same value: the file is written aside and linked into place, which
 * fails when another process got there first, and then its value is read instead.
 */
export function localSecret(name: string, dir = SECRETS_DIR): Promise<string> {
  return localValue(name, dir, SECRET_VALUE);
}

/** What a file of the folder holds: how a value is made, and what a stored one must look like. */
type ValueKind = { make: () => string; valid: RegExp; what: string };
const SECRET_VALUE: ValueKind = {
  make: () => hex(crypto.getRandomValues(new Uint8Array(SECRET_BYTES))),
  valid: /^[0-9a-f]{64}$/,
  what: "a generated secret (64 hex characters)",
};
const COMPANY_VALUE: ValueKind = {
  make: () => crypto.randomUUID(),
  valid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  what: "a company id (a lowercase UUID)",
};

/**
 * The company `deno task token` signs for when given none, made on first use and kept in `<dir>/development_company`:
 * every token of a development session then belongs to one company, so the endpoint made by one walk-through
 * receives the events of the next (README, "Quickstart"; docs/api.md).
 */
export function developmentCompanyId(dir = SECRETS_DIR): Promise<string> {
  return localValue("development_company", dir, COMPANY_VALUE);
}

/**
 * The development company's id when one was made here (`developmentCompanyId`), or null: read, never made, so a command
 * that only defaults to it (`deno task user:create` without `--company`) does not invent a company nobody uses.
 */
export function storedDevelopmentCompanyId(dir = SECRETS_DIR): Promise<string | null> {
  return readValue(`${dir}/development_company`, COMPANY_VALUE);
}

async function localValue(name: string, dir: string, kind: ValueKind): Promise<string> {
  if (!NAME_RE.test(name)) throw new Error(`invalid local secret name ${JSON.stringify(name)}`);
  await ensurePrivateDir(dir);
  const path = `${dir}/${name}`;
  const existing = await readValue(path, kind);
  if (existing !== null) return existing;

  const value = kind.make();
  const aside = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(aside, `${value}\n`, { createNew: true, mode: 0o600 });
  try {
    await Deno.link(aside, path);
    return value;
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    const winner = await readValue(path, kind);
    if (winner === null) throw new Error(`${path} vanished while it was being created`);
    return winner;
  } finally {
    await Deno.remove(aside).catch(() => {});
  }
}

/**
 * The configuration of a running service or command: the environment, plus the local secrets it leaves out in
 * development. In production nothing is generated and `loadConfig` refuses a missing secret.
 */
export async function loadConfigWithLocalSecrets(
  env: Record<string, string | undefined> = Deno.env.toObject(),
  dir = SECRETS_DIR,
): Promise<Config> {
  const local: Record<string, string> = {};
  for (const variable of localSecretsWanted(env)) local[variable] = await localSecret(variable.toLowerCase(), dir);
  return loadConfig(env, local);
}

/**
 * Creates the folder 0700. Its parent is made with the default mode first: `.data` also holds the embedded Postgres
 * data, which the `postgres` OS user must be able to reach when the service runs as root.
 */
async function ensurePrivateDir(dir: string) {
  const parent = dir.replace(/\/[^/]+\/?$/, "");
  if (parent && parent !== dir) await Deno.mkdir(parent, { recursive: true });
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const { mode } = await Deno.stat(dir);
  if (mode !== null && (mode & 0o077) !== 0) await Deno.chmod(dir, 0o700);
}

/** The stored value, or null when there is none yet. A file that holds something else stops the start. */
async function readValue(path: string, kind: ValueKind): Promise<string | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  const value = text.trim();
  if (!kind.valid.test(value)) throw new Error(`${path} does not hold ${kind.what}: fix or remove it`);
  const { mode } = await Deno.stat(path);
  if (mode !== null && (mode & 0o077) !== 0) await Deno.chmod(path, 0o600);
  return value;
}
