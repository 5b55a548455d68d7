/**
 * `deno task token [company_id | --new]`: prints a bearer token, valid for JWT_MAX_TTL_SECONDS (30 days by default).
 * Without an argument the token is the development company's, the same company on every call (its id is kept in
 * `.data/secrets/development_company`), so tokens taken in one shell after another all see the same endpoints and
 * events (README, "Quickstart"); `--new` is a token for a company of its own. Production has no development company:
 * there the company is named, or `--new`. Without JWT_SECRET it signs with the secret the service generated under
 * `.data/secrets` (generating it first if the service never ran here), so the service accepts the token.
 */

import { signToken } from "../domain/integrators/tokens.ts";
import { developmentCompanyId, loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { UUID_RE } from "../domain/basics/ids.ts";

const USAGE = "usage: deno task token [<company_id> | --new]";
const [arg, ...rest] = Deno.args;
if (rest.length > 0 || arg === "--help" || arg === "-h") fail(USAGE);
if (arg !== undefined && arg !== "--new" && !UUID_RE.test(arg)) {
  fail(`company_id must be a UUID, got ${JSON.stringify(arg)}\n${USAGE}`);
}
const config = await loadConfigWithLocalSecrets().catch((err) =>
  fail(err instanceof Error ? err.message : String(err))
);
if (arg === undefined && config.appEnv === "production") {
  fail(`APP_ENV=production has no development company: name the company or ask for --new\n${USAGE}`);
}
const companyId = arg === "--new" ? crypto.randomUUID() : arg ?? await developmentCompanyId();
console.log(await signToken(config, companyId.toLowerCase()));

function fail(message: string): never {
  console.error(message);
  Deno.exit(1);
}
