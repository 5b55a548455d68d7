/**
 * `deno task token:revoke <company_id>`: every token of the company issued until now answers 401 at once, on every
 * instance, whether `deno task token` or sign-in made it. Tokens made from the next second on work.
 */

import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { UUID_RE } from "../domain/basics/ids.ts";
import { revokeCompanyTokens } from "../domain/integrators/integrators.ts";
import { openDatabase } from "./database.ts";

const companyId = Deno.args[0];
if (!companyId || !UUID_RE.test(companyId)) {
  console.error("usage: deno task token:revoke <company_id>");
  Deno.exit(2);
}
const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const at = await revokeCompanyTokens(sql, companyId.toLowerCase());
  console.log(`tokens of company ${companyId.toLowerCase()} issued until ${at.toISOString()} are revoked`);
} finally {
  await close();
}
