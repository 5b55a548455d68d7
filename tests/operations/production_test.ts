/**
 * What production refuses and what the environments generate: missing or guessable secrets, private webhook URLs, the
 * sandbox, the secrets kept under .data/secrets and `deno task token`.
 */
import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { loadConfig, localSecretsWanted } from "../../domain/infra/config.ts";
import { lowEntropy, secretMaterial } from "../../domain/infra/secret_strength.ts";
import { loadConfigWithLocalSecrets, localSecret } from "../../domain/infra/local_secrets.ts";
import {
  checkBearer,
  CLOCK_SKEW_SECONDS,
  REFUSED,
  type TokenSettings,
  verifyBearer,
} from "../../domain/integrators/tokens.ts";
import { setLogLevel } from "../../domain/basics/log.ts";
import {
  dropDatabase,
  freshDatabase,
  newCompany,
  setup,
  TEST_ENCRYPTION_KEY,
  TEST_JWT_SECRET,
  TEST_TOKENS,
} from "../support/helpers.ts";
import { startService } from "../support/service_process.ts";

const root = new URL("../..", import.meta.url).pathname;
const SECRET_32 = "0123456789abcdef0123456789abcdef";
/** A SECRET_ENCRYPTION_KEY: 32 random bytes as hex (production refuses one byte repeated). */
const KEY_32 = crypto.getRandomValues(new Uint8Array(32)).toHex();
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

Deno.test("the rule for guessable secrets: one byte repeated or too few distinct bytes; random values pass", async (t) => {
  const refused = (material: Uint8Array) => assert.notEqual(lowEntropy(material), null, material.toHex());
  const text = (s: string) => secretMaterial(s);

  await t.step("one byte repeated, a short pattern repeated, or fewer than 16 bytes is refused", () => {
    assert.equal(lowEntropy(text(" ".repeat(32))), "is one byte repeated");
    assert.equal(lowEntropy(new Uint8Array(32)), "is one byte repeated");
    refused(Uint8Array.fromHex(TEST_ENCRYPTION_KEY)); // "7e" x 32, the tests' key
    refused(Uint8Array.fromHex("ab".repeat(32)));
    refused(text("password".repeat(4)));
    refused(text("changeme".repeat(8)));
    refused(text("abc".repeat(11)));
    refused(text("0123456789abcdef".repeat(4))); // hex: 8 distinct bytes in 32
    refused(text("hunter2"));
    refused(text(crypto.getRandomValues(new Uint8Array(15)).toHex())); // 15 bytes, however random
    assert.match(lowEntropy(text("wxyz".repeat(8)))!, /has only 4 distinct bytes, fewer than 16/);
    assert.match(lowEntropy(text("abcd".repeat(8)))!, /has only 2 distinct bytes, fewer than 8/); // 16 bytes in hex
  });

  await t.step("hex is judged by the bytes it spells, not by its 16 digits", () => {
    assert.deepEqual(secretMaterial("00ff"), new Uint8Array([0, 255]));
    assert.deepEqual(secretMaterial("0A-fF"), new Uint8Array([10, 255]));
    assert.deepEqual(secretMaterial("abc"), new TextEncoder().encode("abc")); // odd: text
    assert.deepEqual(secretMaterial("xyz"), new TextEncoder().encode("xyz"));
  });

  await t.step("2,000 fresh values of each usual generator all pass", () => {
    const bytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));
    const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const generators: Record<string, () => Uint8Array> = {
      "32 random bytes (a key)": () => bytes(32),
      "openssl rand -hex 32": () => text(bytes(32).toHex()),
      "openssl rand -hex 16": () => text(bytes(16).toHex()),
      "openssl rand -base64 32": () => text(bytes(32).toBase64()),
      "openssl rand -base64 18": () => text(bytes(18).toBase64()),
      "a UUID": () => text(crypto.randomUUID()),
      "16 random letters and digits": () => text(Array.from(bytes(16), (b) => letters[b % 62]).join("")),
    };
    for (const [name, make] of Object.entries(generators)) {
      for (let i = 0; i < 2000; i++) {
        const material = make();
        assert.equal(lowEntropy(material), null, `${name}: ${material.toHex()}`);
      }
    }
    // what the test helpers sign with passes too
    assert.equal(lowEntropy(text(TEST_JWT_SECRET)), null);
  });
});

Deno.test("production refuses private webhook URLs and guessable secrets; other environments accept them", async (t) => {
  const strong = {
    APP_ENV: "production",
    JWT_SECRET: crypto.getRandomValues(new Uint8Array(32)).toHex(),
    SECRET_ENCRYPTION_KEY: KEY_32,
  };
  const refusedWith = (env: Record<string, string>, variable: string, secret?: string) => {
    let message = "";
    assert.throws(() => loadConfig(env), (err: Error) => (message = err.message, true));
    assert.match(message, new RegExp(`^invalid configuration:\\n  ${variable}: `, "m"), message);
    if (secret) assert.ok(!message.includes(secret), "the message repeats the secret");
  };

  await t.step("a strong production configuration starts", () => {
    assert.equal(loadConfig(strong).appEnv, "production");
    assert.equal(loadConfig({ ...strong, WEBHOOK_ALLOW_PRIVATE_URLS: "false" }).allowPrivateUrls, false);
    const metrics = crypto.getRandomValues(new Uint8Array(32)).toHex();
    assert.equal(loadConfig({ ...strong, METRICS_TOKEN: metrics }).metricsToken, metrics);
    const previous = crypto.getRandomValues(new Uint8Array(32)).toBase64();
    assert.ok(loadConfig({ ...strong, SECRET_ENCRYPTION_KEY_PREVIOUS: previous }).secretEncryptionKeyPrevious);
  });

  await t.step("WEBHOOK_ALLOW_PRIVATE_URLS=true is refused in production, naming the variable", () => {
    for (const value of ["true", "on", "1"]) {
      refusedWith({ ...strong, WEBHOOK_ALLOW_PRIVATE_URLS: value }, "WEBHOOK_ALLOW_PRIVATE_URLS");
    }
    for (const APP_ENV of ["development", "test"]) {
      assert.equal(loadConfig({ ...strong, APP_ENV, WEBHOOK_ALLOW_PRIVATE_URLS: "true" }).allowPrivateUrls, true);
    }
  });

  await t.step(
    "unset, WEBHOOK_ALLOW_PRIVATE_URLS is on in development only: a laptop's receiver is on loopback",
    () => {
      assert.equal(loadConfig(strong).allowPrivateUrls, false);
      assert.equal(loadConfig({ ...strong, APP_ENV: "test" }).allowPrivateUrls, false);
      assert.equal(loadConfig({ ...strong, APP_ENV: "development" }).allowPrivateUrls, true);
      assert.equal(loadConfig({ ...strong, APP_ENV: undefined }).allowPrivateUrls, true);
      assert.equal(
        loadConfig({ ...strong, APP_ENV: "development", WEBHOOK_ALLOW_PRIVATE_URLS: "false" }).allowPrivateUrls,
        false,
      );
    },
  );

  await t.step("a guessable JWT_SECRET, key, previous key or METRICS_TOKEN is refused in production", () => {
    const spaces = " ".repeat(32);
    refusedWith({ ...strong, JWT_SECRET: spaces }, "JWT_SECRET", spaces);
    refusedWith({ ...strong, JWT_SECRET: "secret".repeat(6) }, "JWT_SECRET", "secret".repeat(6));
    refusedWith({ ...strong, SECRET_ENCRYPTION_KEY: "00".repeat(32) }, "SECRET_ENCRYPTION_KEY", "00".repeat(32));
    refusedWith({ ...strong, SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY }, "SECRET_ENCRYPTION_KEY");
    refusedWith(
      { ...strong, SECRET_ENCRYPTION_KEY_PREVIOUS: new Uint8Array(32).toBase64() },
      "SECRET_ENCRYPTION_KEY_PREVIOUS",
    );
    refusedWith({ ...strong, METRICS_TOKEN: "metrics" }, "METRICS_TOKEN", "metrics");
    refusedWith({ ...strong, METRICS_TOKEN: "x".repeat(64) }, "METRICS_TOKEN");
    // every problem at once, one line each
    assert.throws(
      () =>
        loadConfig({
          ...strong,
          JWT_SECRET: spaces,
          SECRET_ENCRYPTION_KEY: "00".repeat(32),
          METRICS_TOKEN: "m",
          WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        }),
      (err: Error) => err.message.split("\n").length === 5,
    );
  });

  await t.step("outside production the same values are accepted: tests and laptops use simple keys", () => {
    for (const APP_ENV of ["development", "test"]) {
      const config = loadConfig({
        APP_ENV,
        JWT_SECRET: " ".repeat(32),
        SECRET_ENCRYPTION_KEY: "00".repeat(32),
        SECRET_ENCRYPTION_KEY_PREVIOUS: TEST_ENCRYPTION_KEY,
        METRICS_TOKEN: "m",
      });
      assert.equal(config.jwtSecret, " ".repeat(32));
      assert.equal(config.metricsToken, "m");
    }
  });

  await t.step("the service with APP_ENV=production and WEBHOOK_ALLOW_PRIVATE_URLS=true does not start", async () => {
    setLogLevel("silent");
    const url = await freshDatabase("production_private_urls");
    try {
      await assert.rejects(
        startService(url, { ...strong, WEBHOOK_ALLOW_PRIVATE_URLS: "true" }),
        /WEBHOOK_ALLOW_PRIVATE_URLS: must not be true when APP_ENV=production/,
      );
      await assert.rejects(
        startService(url, { ...strong, WEBHOOK_ALLOW_PRIVATE_URLS: "false", JWT_SECRET: " ".repeat(32) }),
        /JWT_SECRET: is one byte repeated: too guessable for APP_ENV=production/,
      );
    } finally {
      await dropDatabase(url);
    }
  });

  await t.step("a production instance refuses an endpoint at the cloud metadata address", async () => {
    const ctx = await setup("production_private_urls_endpoint", {
      env: { ...strong, JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_ALLOW_PRIVATE_URLS: "false" },
    });
    try {
      const res = await (await newCompany(ctx)).post("/api/v2/notifications/endpoints", {
        url: "http://169.254.169.254/latest/",
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
    } finally {
      await ctx.close();
    }
  });
});

Deno.test("PUBLIC_BASE_URL: an http(s) address and an optional path, or refused naming it; production starts without", async (t) => {
  await t.step("unset or empty is none, in every environment, production included", () => {
    assert.equal(loadConfig({ JWT_SECRET: SECRET_32 }).publicBaseUrl, null);
    assert.equal(loadConfig({ JWT_SECRET: SECRET_32, PUBLIC_BASE_URL: " " }).publicBaseUrl, null);
    const production = { APP_ENV: "production", JWT_SECRET: SECRET_32, SECRET_ENCRYPTION_KEY: KEY_32 };
    assert.equal(loadConfig(production).publicBaseUrl, null, "a start is not refused: only a new portal link is");
  });

  await t.step("an origin with an optional path is kept in one form, without the trailing slash", () => {
    for (
      const [given, kept] of [
        ["https://Payments.Example.com:443/", "https://payments.example.com"],
        ["http://127.0.0.1:4000", "http://127.0.0.1:4000"],
        [" https://example.com/payments/ ", "https://example.com/payments"],
      ]
    ) assert.equal(loadConfig({ JWT_SECRET: SECRET_32, PUBLIC_BASE_URL: given }).publicBaseUrl, kept, given);
  });

  await t.step("anything else is refused, naming the variable and never quoting it (it may hold a password)", () => {
    for (
      const given of [
        "svc.invalid",
        "ftp://svc.invalid",
        "https://user:hunter2@svc.invalid",
        "https://svc.invalid/?next=1",
        "https://svc.invalid/#hunter2",
        "https://svc.invalid?",
      ]
    ) {
      let message = "";
      assert.throws(() => loadConfig({ JWT_SECRET: SECRET_32, PUBLIC_BASE_URL: given }), (e: Error) => {
        message = e.message;
        return true;
      });
      assert.match(message, /^ {2}PUBLIC_BASE_URL: must be an http:\/\/ or https:\/\/ URL/m, given);
      assert.ok(!message.includes("hunter2") && !message.includes("svc.invalid"), message);
    }
  });
});

Deno.test("in production the sandbox routes do not exist unless SANDBOX=true", async () => {
  for (
    const [env, served] of [
      [{ APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32, WEBHOOK_ALLOW_PRIVATE_URLS: "false" }, false],
      [
        { APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32, WEBHOOK_ALLOW_PRIVATE_URLS: "false", SANDBOX: "true" },
        true,
      ],
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

/** `deno task token` with `args`, run in `dir` with the suite's JWT secret: its exit code, its output and its errors. */
async function runToken(dir: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env",
      "--allow-read",
      "--allow-write=.data",
      "--config",
      `${root}deno.json`,
      `${root}commands/token.ts`,
      ...args,
    ],
    cwd: dir,
    env: { JWT_SECRET: TEST_JWT_SECRET, ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout).trim(), stderr: text(out.stderr) };
}

Deno.test("deno task token: one development company for every call, --new for another, none in production", async () => {
  const dir = await freshDir();
  const token = async (args: string[], env: Record<string, string> = {}) => {
    const { code, stdout, stderr } = await runToken(dir, args, env);
    const verified = code === 0 ? await verifyBearer(settingsWith(TEST_JWT_SECRET), `Bearer ${stdout}`) : null;
    return { code, sub: verified?.companyId, stderr };
  };
  try {
    const first = await token([]);
    const second = await token([]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(second.sub, first.sub, "the same company on every call");
    assert.equal((await Deno.readTextFile(`${dir}/.data/secrets/development_company`)).trim(), first.sub);
    const fresh = await token(["--new"]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.notEqual(fresh.sub, first.sub);
    assert.equal((await token([])).sub, first.sub, "--new leaves the development company as it was");
    const given = crypto.randomUUID();
    assert.equal((await token([given])).sub, given);
    assert.equal((await token(["not-a-uuid"])).code, 1);
    const production = await token([], { APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32 });
    assert.equal(production.code, 1);
    assert.match(production.stderr, /no development company: name the company or ask for --new/);
    const named = await token([given], { APP_ENV: "production", SECRET_ENCRYPTION_KEY: KEY_32 });
    assert.equal(named.sub, given, named.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task token --expires-in: a token about to expire, or one already expired, for a client's refresh", async () => {
  const dir = await freshDir();
  const settings = settingsWith(TEST_JWT_SECRET);
  const token = async (...args: string[]) => {
    const { code, stdout, stderr } = await runToken(dir, args);
    return { code, header: `Bearer ${stdout}`, stderr };
  };
  try {
    const soon = await token("--new", "--expires-in", "5");
    assert.equal(soon.code, 0, soon.stderr);
    const verified = await verifyBearer(settings, soon.header);
    assert.ok(verified, "accepted while it lives");
    assert.equal(verified.exp - verified.iat, 5);
    assert.deepEqual(await checkBearer(settings, soon.header, verified.exp + CLOCK_SKEW_SECONDS + 1), REFUSED.expired);

    const same = await token("--expires-in=30", "--new");
    assert.equal(same.code, 0, same.stderr);
    const sameVerified = await verifyBearer(settings, same.header);
    assert.equal(sameVerified && sameVerified.exp - sameVerified.iat, 30, "either form, in either order");

    const expired = await token("--new", "--expires-in", "-120");
    assert.equal(expired.code, 0, expired.stderr);
    assert.deepEqual(await checkBearer(settings, expired.header), REFUSED.expired, "refused at once");

    for (
      const [value, said] of [
        ["0", /--expires-in must be at least 1, or negative for a token that has already expired/],
        ["soon", /--expires-in must be a whole number of seconds, got "soon"/],
        ["1.5", /--expires-in must be a whole number of seconds/],
        [String(TEST_TOKENS.jwtMaxTtlSeconds + 1), /--expires-in must be at most JWT_MAX_TTL_SECONDS/],
      ] as const
    ) {
      const refused = await token("--new", "--expires-in", value);
      assert.equal(refused.code, 1, value);
      assert.match(refused.stderr, said);
      assert.match(refused.stderr, /usage: deno task token \[<company_id> \| --new\] \[--expires-in <seconds>\]/);
    }
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
          `${root}commands/token.ts`,
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
