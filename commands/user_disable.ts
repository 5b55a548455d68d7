/**
 * `deno task user:disable --username <name> [--enable]`: the user can no longer sign in, and every token it got from
 * sign-in answers 401 at once, on every instance. `--enable` lets it sign in again (its old tokens stay ended).
 */

import { parseArgs } from "node:util";
import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { openDatabase } from "./database.ts";
import { setUserDisabled } from "../domain/integrators/users.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { username: { type: "string" }, enable: { type: "boolean", default: false } },
});
if (!values.username) {
  console.error("usage: deno task user:disable --username <name> [--enable]");
  Deno.exit(2);
}
const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const user = await setUserDisabled(sql, values.username, !values.enable);
  if (!user) {
    console.error(`no user ${values.username}`);
    Deno.exitCode = 1;
  } else {
    console.log(
      values.enable
        ? `${user.username} can sign in again`
        : `${user.username} is disabled: its sessions have ended and it cannot sign in`,
    );
  }
} finally {
  await close();
}
