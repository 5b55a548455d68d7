import { signToken } from "../../domain/platform/tokens.ts";
import { loadConfig } from "../../domain/platform/config.ts";
import { UUID_RE } from "../../domain/platform/ids.ts";

/** `deno task token [company_id]`: prints a 30-day bearer token for the company (a new one when omitted). */
const companyId = Deno.args[0] ?? crypto.randomUUID();
if (!UUID_RE.test(companyId)) {
  console.error(`company_id must be a UUID, got ${JSON.stringify(companyId)}`);
  Deno.exit(1);
}
console.log(await signToken(loadConfig().jwtSecret, companyId.toLowerCase()));
