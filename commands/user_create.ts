/**
 * `deno task user:create --company <uuid> --username <name> [--name "<display>"]`: creates a user of the company
 * (and the company when new) and prints the generated password once, alone on the last line. Only its hash is kept:
 * a lost password is replaced with `deno task user:password`.
 */

import { parseArgs } from "node:util";
import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { openDatabase } from "./database.ts";
import { UUID_RE } from "../domain/basics/ids.ts";
import { createUser } from "../domain/integrators/users.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { company: { type: "string" }, username: { type: "string" }, name: { type: "string" } },
});
if (!values.company || !UUID_RE.test(values.company) || !values.username) {
  console.error('usage: deno task user:create --company <uuid> --username <name> [--name "<display name>"]');
  Deno.exit(2);
}
const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const made = await createUser(sql, {
    companyId: values.company.toLowerCase(),
    username: values.username,
    name: values.name,
  });
  if ("error" in made) {
    console.error(made.error);
    Deno.exitCode = 1;
  } else {
    console.log(`user ${made.user.username} (${made.user.id}) of company ${made.user.companyId}; password:`);
    console.log(made.password);
  }
} finally {
  await close();
}
