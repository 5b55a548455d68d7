/**
 * `deno task user:create [--company <uuid>] --username <name> [--name "<display>"]`: creates a user of the company
 * (and the company when new) and prints the generated password once, alone on the last line. Only its hash is kept:
 * a lost password is replaced with `deno task user:password`. Without `--company`, outside production, the company is
 * the development one of `deno task token` (`.data/secrets/development_company`, docs/authentication.md); when there
 * is none, the refusal lists the database's companies to choose from.
 */

import { parseArgs } from "node:util";
import { loadConfigWithLocalSecrets, storedDevelopmentCompanyId } from "../domain/infra/local_secrets.ts";
import type { Config } from "../domain/infra/config.ts";
import type { Sql } from "../domain/infra/db.ts";
import { openDatabase } from "./database.ts";
import { UUID_RE } from "../domain/basics/ids.ts";
import { createUser } from "../domain/integrators/users.ts";
import { listCompanies } from "../domain/integrators/integrators.ts";

const USAGE = 'usage: deno task user:create [--company <uuid>] --username <name> [--name "<display name>"]';
/** Companies a refusal lists: enough to find a recent one, few enough to read. */
const LISTED = 20;

const { values } = parseArgs({
  args: Deno.args,
  options: { company: { type: "string" }, username: { type: "string" }, name: { type: "string" } },
});
if (!values.username || (values.company !== undefined && !UUID_RE.test(values.company))) {
  console.error(USAGE);
  Deno.exit(2);
}
const config = await loadConfigWithLocalSecrets();
const { sql, close } = await openDatabase(config);
try {
  const company = values.company === undefined
    ? await developmentCompany(config, sql)
    : { id: values.company.toLowerCase(), said: "" };
  if (company === null) {
    Deno.exitCode = 2;
  } else {
    const made = await createUser(sql, { companyId: company.id, username: values.username, name: values.name });
    if ("error" in made) {
      console.error(made.error);
      Deno.exitCode = 1;
    } else {
      console.log(
        `user ${made.user.username} (${made.user.id}) of company ${made.user.companyId}${company.said}; password:`,
      );
      console.log(made.password);
    }
  }
} finally {
  await close();
}

/**
 * The development company when this checkout has one (never in production); otherwise null, after saying on stderr
 * that `--company` is needed and which companies the database holds.
 */
async function developmentCompany(config: Config, sql: Sql): Promise<{ id: string; said: string } | null> {
  const stored = config.appEnv === "production" ? null : await storedDevelopmentCompanyId();
  if (stored !== null) return { id: stored, said: " (the development company, .data/secrets/development_company)" };
  const why = config.appEnv === "production"
    ? "APP_ENV=production has no development company"
    : "this checkout has no development company yet (`deno task token` makes it)";
  const { companies, total } = await listCompanies(sql, LISTED);
  const lines = [`--company <uuid> is needed: ${why}.`];
  if (total === 0) lines.push("The database has no company yet: any new UUID makes one.");
  else {
    lines.push(`Companies of the database, newest first (id, created, users):`);
    for (const c of companies) {
      lines.push(`  ${c.id}  ${c.insertedAt.toISOString()}  ${c.users} user${c.users === 1 ? "" : "s"}`);
    }
    if (total > companies.length) lines.push(`  ... and ${total - companies.length} more`);
  }
  console.error([...lines, USAGE].join("\n"));
  return null;
}
