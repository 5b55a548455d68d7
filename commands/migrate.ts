/**
 * `deno task migrate [--contract]`: the expand migrations a start would apply, for a deploy that migrates before it
 * starts the new release; with `--contract`, then the contract step, refused while an instance of another release is
 * connected (docs/production.md, "Upgrading"). Prints what it applied; exit 1 with the reason when refused.
 */

import { loadConfigWithLocalSecrets } from "../domain/infra/local_secrets.ts";
import { contract, ContractRefused } from "../domain/infra/migrate.ts";
import { VERSION } from "../domain/infra/version.ts";
import { openDatabase } from "./database.ts";

const args = new Set(Deno.args);
const unknown = [...args].filter((a) => a !== "--contract");
if (unknown.length > 0) {
  console.error(`unknown argument ${unknown[0]}: deno task migrate [--contract]`);
  Deno.exit(2);
}

const config = await loadConfigWithLocalSecrets();
// openDatabase applies the expand migrations, as every start does
const { sql, close } = await openDatabase(config);
let code = 0;
try {
  if (args.has("--contract")) {
    const applied = await contract(sql);
    console.log(`release ${VERSION}: contract step done; applied: ${applied.length ? applied.join(", ") : "none"}`);
  } else console.log(`release ${VERSION}: expand migrations applied; the contract step is --contract`);
} catch (err) {
  if (!(err instanceof ContractRefused)) throw err;
  console.error(`contract step refused: ${err.message}`);
  code = 1;
} finally {
  await close();
}
Deno.exit(code);
