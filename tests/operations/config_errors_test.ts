/**
 * How the configuration parser (domain/infra/config.ts) refuses a bad environment: every problem in one message, one
 * line per variable saying what it expects, so an operator fixes them all in one round (docs/production.md). Pure:
 * no database, no process; production_test.ts keeps the refusals themselves and why each exists.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../domain/infra/config.ts";

/** 32 random-looking bytes as hex: accepted by production as JWT_SECRET and SECRET_ENCRYPTION_KEY. */
const STRONG = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9f";
const PRODUCTION = { APP_ENV: "production", JWT_SECRET: STRONG, SECRET_ENCRYPTION_KEY: STRONG };

/** The lines of the refusal `env` gets (after `invalid configuration:`); fails when the environment is accepted. */
function refusal(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    const [head, ...lines] = (err as Error).message.split("\n");
    assert.equal(head, "invalid configuration:");
    return lines.map((l) => l.trim());
  }
  assert.fail(`accepted: ${JSON.stringify(env)}`);
}

Deno.test("a bad configuration is refused once, with every problem listed and what each variable expects", async (t) => {
  await t.step("twelve faults in one environment: twelve lines in one refusal, each naming its variable", () => {
    const lines = refusal({
      ...PRODUCTION,
      PORT: "http",
      WORKER_CONCURRENCY: "0",
      BODY_TIMEOUT_MS: "1.5",
      EVENT_RETENTION_DAYS: "0",
      RATE_LIMIT_PER_SECOND: "-1",
      LOG_LEVEL: "verbose",
      SANDBOX: "maybe",
      TRUST_PROXY_HEADER: "x-real-ip",
      WEBHOOK_RETRY_SCHEDULE: "5;300",
      DATABASE_URL: "db.internal:5432/payments",
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      METRICS_TOKEN: "metrics",
    });
    assert.deepEqual(lines.toSorted(), [
      'BODY_TIMEOUT_MS: must be a whole number of at least 1, not "1.5"',
      'DATABASE_URL: must be a postgres:// URL (postgres://user:password@host:5432/database) or "embedded"',
      'EVENT_RETENTION_DAYS: must be a number above 0 and up to 36500, not "0"',
      'LOG_LEVEL: must be one of debug, info, warn, error, silent, not "verbose"',
      "METRICS_TOKEN: holds 7 byte(s) of key material, fewer than 16: too guessable for APP_ENV=production " +
      "(openssl rand -hex 32)",
      'PORT: must be a whole number from 0 to 65535, not "http"',
      'RATE_LIMIT_PER_SECOND: must be a number from 0 to 1000000, not "-1"',
      'SANDBOX: must be one of true, false, on, off, 1, 0, not "maybe"',
      'TRUST_PROXY_HEADER: must be one of x-forwarded-for, forwarded, not "x-real-ip"',
      "WEBHOOK_ALLOW_PRIVATE_URLS: must not be true when APP_ENV=production: it lets integrators make the service " +
      "call loopback, private and cloud metadata addresses",
      "WEBHOOK_RETRY_SCHEDULE: must be comma-separated seconds, e.g. 5,300,1800",
      'WORKER_CONCURRENCY: must be a whole number from 1 to 1000, not "0"',
    ]);
  });

  await t.step("a typo in APP_ENV lists what production would refuse besides, not one more round later", () => {
    assert.deepEqual(refusal({ APP_ENV: "prod" }), [
      'APP_ENV: must be one of development, production, test, not "prod"',
      "JWT_SECRET: must be set when APP_ENV=production, at least 32 bytes (openssl rand -hex 32)",
      "SECRET_ENCRYPTION_KEY: must be set when APP_ENV=production (openssl rand -hex 32)",
    ]);
  });

  await t.step("an empty number is refused, not read as 0 (a rate limiter off, a random port)", () => {
    assert.deepEqual(refusal({ ...PRODUCTION, PORT: "", RATE_LIMIT_PER_SECOND: " " }), [
      'PORT: must be a whole number from 0 to 65535, not ""',
      'RATE_LIMIT_PER_SECOND: must be a number from 0 to 1000000, not " "',
    ]);
  });

  await t.step("a DATABASE_URL that is no postgres URL is named at start, never quoted: it may hold a password", () => {
    for (const url of ["not a url", "mysql://app:hunter2-secret@db/payments", "db.internal:5432/payments"]) {
      const lines = refusal({ ...PRODUCTION, DATABASE_URL: url });
      assert.equal(lines.length, 1, lines.join("\n"));
      assert.match(lines[0], /^DATABASE_URL: must be a postgres:\/\/ URL/);
      assert.ok(!lines[0].includes(url) && !lines[0].includes("hunter2"), lines[0]);
    }
    assert.deepEqual(refusal({ ...PRODUCTION, PGPORT: "5432x" }), [
      'PGPORT: must be a whole number from 1 to 65535, not "5432x"',
    ]);
  });

  await t.step("a secret is named, never quoted; a short JWT_SECRET is refused once, for its length", () => {
    const lines = refusal({ ...PRODUCTION, JWT_SECRET: "hunter2", SECRET_ENCRYPTION_KEY: "hunter3" });
    assert.deepEqual(lines, [
      "SECRET_ENCRYPTION_KEY: must be 32 bytes, as 64 hex characters or base64",
      "JWT_SECRET: must be at least 32 bytes (openssl rand -hex 32)",
    ]);
  });

  await t.step("good values are read as before: spaces around a number, fractions, postgresql://, PGPORT", () => {
    const config = loadConfig({
      JWT_SECRET: STRONG,
      PORT: " 8080 ",
      RATE_LIMIT_PER_SECOND: "0.5",
      EVENT_RETENTION_DAYS: "0.25",
      WEBHOOK_DISABLE_AFTER_SECONDS: "0",
      DATABASE_URL: "postgresql://app@db.internal/payments",
    });
    assert.equal(config.port, 8080);
    assert.equal(config.limits.requestsPerSecond, 0.5);
    assert.equal(config.eventRetentionDays, 0.25);
    assert.equal(config.webhookDisableAfterSeconds, 0);
    assert.equal(config.databaseUrl, "postgresql://app@db.internal/payments");
    const local = loadConfig({ JWT_SECRET: STRONG, PGPORT: "5433", PGUSER: "app" });
    assert.equal(local.databaseUrl, "postgres://app@127.0.0.1:5433/payments");
    assert.equal(loadConfig({ JWT_SECRET: STRONG, DATABASE_URL: "embedded" }).databaseUrl, "embedded");
  });

  await t.step("unset variables keep their defaults", () => {
    const config = loadConfig({ JWT_SECRET: STRONG });
    assert.equal(config.port, 4000);
    assert.equal(config.workerConcurrency, 32);
    assert.equal(config.bodyTimeoutMs, 60_000);
    assert.equal(config.jwtMaxTtlSeconds, 30 * 24 * 3600);
    assert.equal(config.limits.requestsPerSecond, 100);
    assert.equal(config.limits.signInHashQueue, 16);
    assert.equal(config.webhookFailingAfterSeconds, 3600);
    assert.equal(config.logLevel, "info");
  });
});
