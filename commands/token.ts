import { signToken } from "../domain/integrators/tokens.ts";
import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { UUID_RE } from "../domain/basics/ids.ts";

/**
 * `deno task token [company_id]`: prints a bearer token for the company (a new one when omitted), valid for
 * JWT_MAX_TTL_SECONDS (30 days by default). Without JWT_SECRET it signs with the secret the service generated under
 * `.data/secrets` (generating it first if the service never ran here), so the service accepts the token.
 */
const companyId = Deno.args[0] ?? crypto.randomUUID();
if (!UUID_RE.test(companyId)) {
  console.error(`company_id must be a UUID, got ${JSON.stringify(companyId)}`);
  Deno.exit(1);
}
const config = await loadConfigWithLocalSecrets().catch((err) => {
  console.error(err instanceof Error ? err.message : String(err));
  Deno.exit(1);
});
console.log(await signToken(config, companyId.toLowerCase()));
