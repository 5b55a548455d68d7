import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { loadConfig, localSecretsWanted } from "../../domain/platform/config.ts";
import { loadConfigWithLocalSecrets, localSecret } from "../../domain/platform/local_secrets.ts";
import { type TokenSettings, verifyBearer } from "../../domain/platform/tokens.ts";
import { setLogLevel } from "../../domain/platform/log.ts";
import { dropDatabase, freshDatabase, newCompany, setup, TEST_TOKENS } from "../helpers.ts";
import { startService } from "../service_process.ts";

const root = new URL("../..", import.meta.url).pathname;
const SECRET_32 = "0123456789abcdef0123456789abcdef";
/** A SECRET_ENCRYPTION_KEY: 32 bytes as hex. */
const KEY_32 = "ab".repeat(32);
/** The development secret that used to be published in the source and signed every token when JWT_SECRET was unset. */
const OLD_PUBLISHED_SECRET = "dev-only-secret-change-me";

const modeOf = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

/** A working directory of its own, as on a fresh machine; as root, the embedded Postgres user must enter it. */
async function freshDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "payments-secrets-" });
  await Deno.chmod(dir, 0o755);
  return dir;
}

const settingsWith = (jwtSecret: string): TokenSettings => ({ ...TEST_TOKENS, jwtSecret });

Deno.test("configuration refuses what production must not run with", async (t) => {
  const refused = (env: Record<string, string>) => assert.throws(() => loadConfig(env), /JWT_SECRET/);

  await t.step("APP_ENV=production without JWT_SECRET is refused, naming the variable", () => {
    refused({ APP_ENV: "production" });
    refused({ APP_ENV: "production", JWT_SECRET: "" });
    // a generated secret is not offered to production: it would differ on every machine
    assert.throws(() => loadConfig({ APP_ENV: "production" }, { JWT_SECRET: "a".repeat(64) }), /JWT_SECRET/);
  });

  await t.step("APP_ENV=production without SECRET_ENCRYPTION_KEY is refused, naming the variable", () => {
    assert.throws(() => loadConfig({ APP_ENV: "production", JWT_SECRET: SECRET_32 }), /SECRET_ENCRYPTION_KEY/);
    // the key generated for development is not offered to production either
    assert.throws(
      () => loadConfig({ APP_ENV: "production", JWT_SECRET: SECRET_32 }, { SECRET_ENCRYPTION_KEY: KEY_32 }),
      /SECRET_ENCRYPTION_KEY/,
    );
  });

  await t.step("a JWT_SECRET shorter than 32 bytes is refused in every environment", () => {
    for (const APP_ENV of ["production", "development", "test"]) {
      refused({ APP_ENV, JWT_SECRET: "x" });
      refused({ APP_ENV, JWT_SECRET: SECRET_32.slice(1) });
      assert.equal(loadConfig({ APP_ENV, JWT_SECRET: SECRET_32, SECRET_ENCRYPTION_KEY: KEY_32 }).jwtSecret, SECRET_32);
    }
  });

  await t.step("production turns the sandbox off unless SANDBOX=true is set", () => {
    const secrets = { JWT_SECRET: SECRET_32, SECRET_ENCRYPTION_KEY: KEY_32 };
    assert.equal(loadConfig({ APP_ENV: "production", ...secrets }).sandbox, false);
    assert.equal(loadConfig({ APP_ENV: "production", ...secrets, SANDBOX: "true" }).sandbox, true);
    assert.equal(loadConfig({ JWT_SECRET: SECRET_32 }).sandbox, true);
    assert.equal(loadConfig({ JWT_SECRET: SECRET_32, SANDBOX: "false" }).sandbox, false);
  });

  await t.step("an unknown APP_ENV is refused", () => {
    assert.throws(() => loadConfig({ APP_ENV: "prod", JWT_SECRET: SECRET_32 }), /APP_ENV/);
  });

  await t.step("production generates no secret file", async () => {
    assert.deepEqual(localSecretsWanted({ APP_ENV: "production" }), []);
    assert.deepEqual(localSecretsWanted({}), ["JWT_SECRET", "SECRET_ENCRYPTION_KEY"]);
    assert.deepEqual(localSecretsWanted({ JWT_SECRET: SECRET_32 }), ["SECRET_ENCRYPTION_KEY"]);
    assert.deepEqual(localSecretsWanted({ JWT_SECRET: SECRET_32, SECRET_ENCRYPTION_KEY: KEY_32 }), []);
    const dir = await freshDir();
    try {
      await assert.rejects(loadConfigWithLocalSecrets({ APP_ENV: "production" }, `${dir}/secrets`), /JWT_SECRET/);
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

Deno.test("in production the sandbox routes do not exist unless SANDBOX=true", async () => {
  for (
    const [env, served] of [
      [{ APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32 }, false],
      [{ APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32, SANDBOX: "true" }, true],
    ]
  ) {
    const ctx = await setup(`production_sandbox_${served}`, { env: env as Record<string, string> });
    try {
      const res = await (await newCompany(ctx)).post("/api/sandbox/payins", {});
      // served: the body is refused field by field; not served: the route is unknown
      assert.equal(res.status, served ? 400 : 404, JSON.stringify(env));
    } finally {
      await ctx.close();
    }
  }
});

Deno.test("a secret generated under .data/secrets: owner-only, stable, one value for concurrent starts", async (t) => {
  const dir = await freshDir();
  const secrets = `${dir}/.data/secrets`;
  try {
    let first = "";
    await t.step("it is 32 random bytes in a 0600 file, in a 0700 folder", async () => {
      first = await localSecret("jwt_secret", secrets);
      assert.match(first, /^[0-9a-f]{64}$/);
      assert.equal((await Deno.readTextFile(`${secrets}/jwt_secret`)).trim(), first);
      assert.equal(await modeOf(`${secrets}/jwt_secret`), 0o600);
      assert.equal(await modeOf(secrets), 0o700);
      // .data also holds the embedded Postgres data, which the postgres OS user must reach when we run as root
      assert.ok((await modeOf(`${dir}/.data`) & 0o001) !== 0, ".data stays searchable by other users");
    });

    await t.step("later calls reuse it", async () => {
      assert.equal(await localSecret("jwt_secret", secrets), first);
    });

    await t.step("twenty calls at once on a fresh folder agree on one value and leave one file", async () => {
      const other = `${dir}/other/.data/secrets`;
      const values = await Promise.all(Array.from({ length: 20 }, () => localSecret("jwt_secret", other)));
      assert.equal(new Set(values).size, 1);
      assert.deepEqual([...Deno.readDirSync(other)].map((e) => e.name), ["jwt_secret"]);
    });

    await t.step("each name is its own secret", async () => {
      const key = await localSecret("secret_encryption_key", secrets);
      assert.notEqual(key, first);
      assert.equal(await localSecret("secret_encryption_key", secrets), key);
    });

    await t.step("a file loosened by hand is tightened again; a damaged one stops the start", async () => {
      await Deno.chmod(`${secrets}/jwt_secret`, 0o644);
      assert.equal(await localSecret("jwt_secret", secrets), first);
      assert.equal(await modeOf(`${secrets}/jwt_secret`), 0o600);
      await Deno.writeTextFile(`${secrets}/broken`, "short\n");
      await assert.rejects(localSecret("broken", secrets), /broken/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task token run four times at once on a fresh machine signs with one generated secret", async () => {
  const dir = await freshDir();
  try {
    const runs = await Promise.all(Array.from({ length: 4 }, () =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-env",
          "--allow-read",
          "--allow-write=.data",
          "--config",
          `${root}deno.json`,
          `${root}jobs/commands/token.ts`,
        ],
        cwd: dir,
        env: { JWT_SECRET: "" },
        stdout: "piped",
        stderr: "piped",
      }).output()));
    for (const run of runs) assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    const secret = (await Deno.readTextFile(`${dir}/.data/secrets/jwt_secret`)).trim();
    for (const run of runs) {
      const lines = new TextDecoder().decode(run.stdout).trim().split("\n");
      assert.equal(lines.length, 1, "the token alone on stdout");
      const verified = await verifyBearer(settingsWith(secret), `Bearer ${lines[0]}`);
      assert.ok(verified, "signed with the generated secret, with this service's iss, aud and lifetime");
      assert.ok(verified.exp - Date.now() / 1000 > 29 * 86400);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the service with no JWT_SECRET: a generated secret it keeps, never the published one", async (t) => {
  setLogLevel("silent");
  const dir = await freshDir();
  const url = await freshDatabase("production_service");
  try {
    await t.step("APP_ENV=production without JWT_SECRET does not start, and says which variable", async () => {
      await assert.rejects(
        startService(url, { APP_ENV: "production", JWT_SECRET: "" }, { cwd: dir }),
        /JWT_SECRET: must be set when APP_ENV=production/,
      );
      assert.equal(await Deno.stat(`${dir}/.data`).then(() => true, () => false), false, "no secret generated");
    });

    await t.step("a short JWT_SECRET does not start either", async () => {
      await assert.rejects(startService(url, { JWT_SECRET: "x" }, { cwd: dir }), /JWT_SECRET: must be at least 32/);
    });

    let service = await startService(url, { JWT_SECRET: "" }, { cwd: dir });
    const secretFile = `${dir}/.data/secrets/jwt_secret`;
    const secret = (await Deno.readTextFile(secretFile)).trim();
    const companyId = crypto.randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: companyId, iss: "payments-api", aud: "payments-api", iat: now, exp: now + 3600 };
    const call = async (token: string) => {
      const res = await fetch(`${service.base}/api/v1/subject/people`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return [res.status, await res.json()];
    };
    const good = await sign(claims, secret, "HS256");
    try {
      await t.step("the secret was generated in a 0600 file and signs accepted tokens", async () => {
        assert.match(secret, /^[0-9a-f]{64}$/);
        assert.equal(await modeOf(secretFile), 0o600);
        assert.deepEqual(await call(good), [200, { data: [] }]);
      });

      await t.step("a token signed with the old published development secret is refused", async () => {
        assert.deepEqual(await call(await sign(claims, OLD_PUBLISHED_SECRET, "HS256")), [401, {
          errors: { detail: "Unauthorized" },
        }]);
      });

      await t.step("a restart reuses the secret: tokens signed before still work", async () => {
        assert.equal((await service.stop()).code, 0);
        service = await startService(url, { JWT_SECRET: "" }, { cwd: dir });
        assert.equal((await Deno.readTextFile(secretFile)).trim(), secret);
        assert.deepEqual(await call(good), [200, { data: [] }]);
      });
    } finally {
      await service.stop();
    }
  } finally {
    await dropDatabase(url);
    await Deno.remove(dir, { recursive: true });
  }
});
