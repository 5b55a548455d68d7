/**
 * `deno task user:password --username <name>`: replaces the user's password with a generated one and prints it
 * once, alone on the last line. The user's sessions end: tokens it got from sign-in answer 401 at once, on every
 * instance.
 */

import { parseArgs } from "node:util";
import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { openDatabase } from "./database.ts";
import { resetPassword } from "../domain/integrators/users.ts";

const { values } = parseArgs({ args: Deno.args, options: { username: { type: "string" } } });
if (!values.username) {
  console.error("usage: deno task user:password --username <name>");
  Deno.exit(2);
}
const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const reset = await resetPassword(sql, values.username);
  if (!reset) {
    console.error(`no user ${values.username}`);
    Deno.exitCode = 1;
  } else {
    console.log(`new password of ${reset.user.username}:`);
    console.log(reset.password);
  }
} finally {
  await close();
}
