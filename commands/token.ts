/**
 * `deno task token [company_id | --new] [--expires-in <seconds>]`: prints a bearer token, valid for
 * JWT_MAX_TTL_SECONDS (30 days by default) unless `--expires-in` says otherwise. Without a company the token is the
 * development company's, the same company on every call (its id is kept in `.data/secrets/development_company`), so
 * tokens taken in one shell after another all see the same endpoints and events (README, "Quickstart"); `--new` is a
 * token for a company of its own. Production has no development company: there the company is named, or `--new`.
 * Without JWT_SECRET it signs with the secret the service generated under `.data/secrets` (generating it first if the
 * service never ran here), so the service accepts the token. `--expires-in` makes the tokens a client's refresh is
 * tested with: one about to expire (a few seconds), or with a negative value one that expired that long ago
 * (docs/errors.md, "Why a 401").
 */

import { CLOCK_SKEW_SECONDS, signToken } from "../domain/integrators/tokens.ts";
import { developmentCompanyId, loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { UUID_RE } from "../domain/basics/ids.ts";

const USAGE = "usage: deno task token [<company_id> | --new] [--expires-in <seconds>]\n" +
  "  --expires-in <seconds>  the token's lifetime, 1 to JWT_MAX_TTL_SECONDS (the default); a negative value signs a\n" +
  `                          token that expired that many seconds ago (refused once past ${CLOCK_SKEW_SECONDS} s, the ` +
  "clock skew allowed)";

const { company: arg, expiresIn } = parseArgs(Deno.args);
const config = await loadConfigWithLocalSecrets().catch((err) =>
  fail(err instanceof Error ? err.message : String(err))
);
if (arg === undefined && config.appEnv === "production") {
  fail(`APP_ENV=production has no development company: name the company or ask for --new\n${USAGE}`);
}
if (expiresIn !== undefined && expiresIn > config.jwtMaxTtlSeconds) {
  fail(`--expires-in must be at most JWT_MAX_TTL_SECONDS (${config.jwtMaxTtlSeconds}), got ${expiresIn}\n${USAGE}`);
}
const companyId = arg === "--new" ? crypto.randomUUID() : arg ?? await developmentCompanyId();
console.log(await signToken(config, companyId.toLowerCase(), expiresIn));

/** The company argument (a UUID or `--new`) and `--expires-in` (`--expires-in 60` or `--expires-in=60`), in any order. */
function parseArgs(args: string[]): { company?: string; expiresIn?: number } {
  let company: string | undefined;
  let expiresIn: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const given = args[i];
    if (given === "--help" || given === "-h") fail(USAGE);
    if (given === "--expires-in" || given.startsWith("--expires-in=")) {
      if (expiresIn !== undefined) fail(`--expires-in given twice\n${USAGE}`);
      const value = given === "--expires-in" ? args[++i] : given.slice("--expires-in=".length);
      expiresIn = seconds(value);
    } else if (company === undefined && (given === "--new" || UUID_RE.test(given))) company = given;
    else if (company === undefined && !given.startsWith("-")) {
      fail(`company_id must be a UUID, got ${JSON.stringify(given)}\n${USAGE}`);
    } else fail(`unexpected argument ${JSON.stringify(given)}\n${USAGE}`);
  }
  return { company, expiresIn };
}

/** Whole seconds, not 0: positive is a lifetime from now, negative how long ago the token expired. */
function seconds(value: string | undefined): number {
  if (value === undefined || !/^-?\d+$/.test(value)) {
    fail(`--expires-in must be a whole number of seconds, got ${JSON.stringify(value ?? "")}\n${USAGE}`);
  }
  const n = Number(value);
  if (!Number.isSafeInteger(n)) fail(`--expires-in is out of range, got ${value}\n${USAGE}`);
  if (n === 0) fail(`--expires-in must be at least 1, or negative for a token that has already expired\n${USAGE}`);
  return n;
}

function fail(message: string): never {
  console.error(message);
  Deno.exit(1);
}
