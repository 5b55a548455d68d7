/**
 * `deno task user:create` without `--company` (commands/user_create.ts): the development company of `deno task token`
 * when the checkout has one, else a refusal listing the companies to choose from. Run from a folder of its own, whose
 * `.data/secrets` the test writes, so the checkout's own development company is never read.
 */
import assert from "node:assert/strict";
import { setup, TEST_JWT_SECRET } from "../support/helpers.ts";
import { createUser } from "../../domain/integrators/users.ts";

const root = new URL("../..", import.meta.url).pathname;

/** user:create as an operator runs it from `cwd`, against `databaseUrl`; exit code, stdout and stderr. */
async function userCreate(cwd: string, databaseUrl: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-all", "--config", `${root}deno.json`, `${root}commands/user_create.ts`, ...args],
    cwd,
    env: { DATABASE_URL: databaseUrl, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: "error", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("user:create without --company: the development company, or the companies to choose from", async (t) => {
  const ctx = await setup("user_create_default");
  const withCompany = await Deno.makeTempDir({ prefix: "payments-user-create-" });
  const without = await Deno.makeTempDir({ prefix: "payments-user-create-" });
  const development = crypto.randomUUID();
  const other = crypto.randomUUID();
  try {
    await Deno.mkdir(`${withCompany}/.data/secrets`, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(`${withCompany}/.data/secrets/development_company`, `${development}\n`, { mode: 0o600 });
    const made = await createUser(ctx.sql, { companyId: other, username: "olga" });
    assert.ok("password" in made);

    await t.step("with a development company here, the user is made in it, and the answer says so", async () => {
      const out = await userCreate(withCompany, ctx.url, ["--username", "dev@acme.example"]);
      assert.equal(out.code, 0, out.stderr);
      const lines = out.stdout.trimEnd().split("\n");
      assert.match(lines[0], new RegExp(`of company ${development} \\(the development company, `));
      assert.match(lines.at(-1)!, /^[A-Za-z0-9_-]{32}$/, "the password alone on the last line");
      const [row] = await ctx.sql`select company_id from users where username = 'dev@acme.example'`;
      assert.equal(row.company_id, development);
    });

    await t.step("--company still chooses, development company or not", async () => {
      const out = await userCreate(withCompany, ctx.url, ["--company", other, "--username", "olga2"]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, new RegExp(`of company ${other}; password:`));
    });

    await t.step("with none, the refusal lists the companies, newest first, with their users", async () => {
      const out = await userCreate(without, ctx.url, ["--username", "nobody"]);
      assert.equal(out.code, 2);
      assert.equal(out.stdout, "");
      assert.match(out.stderr, /^--company <uuid> is needed: this checkout has no development company yet/);
      assert.match(out.stderr, new RegExp(`^  ${other}  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  2 users$`, "m"));
      assert.match(out.stderr, new RegExp(`^  ${development}  \\S+  1 user$`, "m"));
      assert.ok(out.stderr.indexOf(development) < out.stderr.indexOf(other), "newest first");
      assert.match(out.stderr, /usage: deno task user:create \[--company <uuid>\]/);
      const [{ count }] = await ctx.sql`select count(*)::int from users where username = 'nobody'`;
      assert.equal(count, 0);
      // no company was made up on the way
      await assert.rejects(Deno.stat(`${without}/.data/secrets/development_company`), Deno.errors.NotFound);
    });

    await t.step("production never takes the development company", async () => {
      const key = crypto.getRandomValues(new Uint8Array(32)).toHex();
      const env = { APP_ENV: "production", SECRET_ENCRYPTION_KEY: key };
      const out = await userCreate(withCompany, ctx.url, ["--username", "prod-user"], env);
      assert.equal(out.code, 2, out.stderr);
      assert.match(out.stderr, /^--company <uuid> is needed: APP_ENV=production has no development company/);
      assert.match(out.stderr, new RegExp(other));
    });
  } finally {
    await Deno.remove(withCompany, { recursive: true });
    await Deno.remove(without, { recursive: true });
    await ctx.close();
  }
});
