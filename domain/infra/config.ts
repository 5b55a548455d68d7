/**
 * The service's configuration: every environment variable checked once at start, with its default, into one `Config`
 * (docs/production.md, docs/limits.md). Reads no file: the local secrets are handed in by local_secrets.ts.
 */

import { z } from "zod";
import { lowEntropy, secretMaterial } from "./secret_strength.ts";

/** Seconds to wait before attempts 2..10 of a webhook delivery. */
const DEFAULT_RETRY_SCHEDULE = "5,300,1800,7200,18000,36000,50400,72000,86400";
/** An HMAC-SHA256 key shorter than the hash's own 32 bytes weakens it, and short strings can be guessed. */
export const MIN_SECRET_BYTES = 32;
const THIRTY_DAYS = 30 * 24 * 3600;

/** Secrets that, outside production, fall back to a random value generated once under `.data/secrets`. */
export const LOCAL_SECRET_VARIABLES = ["JWT_SECRET", "SECRET_ENCRYPTION_KEY"] as const;
export type LocalSecretVariable = typeof LOCAL_SECRET_VARIABLES[number];

/**
 * One of `values`; a refusal lists them all and the value given (an enum's values are never secret). Every variable's
 * refusal says what is expected, so an operator fixes them all from one message (docs/production.md).
 */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (issue) => `must be one of ${values.join(", ")}, not ${shown(issue.input)}` });

/**
 * A number variable: its text, trimmed, must be a number within the bounds (a whole one when `whole`). An empty value
 * is refused, as any other text that is not a number: coercion read it as 0, which turned a rate limiter off or moved
 * the service to a random port without a word. The refusal says the bounds and the value given.
 */
function numeric(bounds: { min: number; max?: number; whole?: boolean; above?: boolean }) {
  const { min, max, whole = false, above = false } = bounds;
  const kind = whole ? "a whole number" : "a number";
  const expected = max === undefined
    ? `must be ${kind} ${above ? "above" : "of at least"} ${min}`
    : `must be ${kind} ${above ? `above ${min} and up` : `from ${min}`} to ${max}`;
  return z.string().transform((text, ctx) => {
    const value = text.trim() === "" ? NaN : Number(text);
    const fits = Number.isFinite(value) && (!whole || Number.isInteger(value)) &&
      (above ? value > min : value >= min) && (max === undefined || value <= max);
    if (fits) return value;
    ctx.addIssue({ code: "custom", message: `${expected}, not ${shown(text)}` });
    return z.NEVER;
  });
}

/** A value as a refusal quotes it: JSON-escaped and cut short. Only for variables that are never secret. */
function shown(value: unknown): string {
  if (typeof value !== "string") return "set";
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
}

const optionalFlag = oneOf(["true", "false", "on", "off", "1", "0"]).optional()
  .transform((v) => v === undefined ? undefined : ["true", "on", "1"].includes(v));
const flag = (fallback: boolean) => optionalFlag.transform((v) => v ?? fallback);
// `JWT_SECRET=` in a deployment template that lost its value means "not set", never "an empty key".
const secret = z.string().optional().transform((v) => v === "" ? undefined : v);
const byteLength = (s: string) => new TextEncoder().encode(s).length;
const AppEnv = oneOf(["development", "production", "test"]).default("development");

// Fractions ("0.05") let tests run a whole 10-attempt schedule in a moment.
const schedule = z.string().regex(
  /^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/,
  "must be comma-separated seconds, e.g. 5,300,1800",
)
  .transform((s) => expandSchedule(s.split(",").map((n) => Number(n.trim()))));

// Limits (docs/limits.md): per-company request rates, webhook endpoint quotas, stored-object quotas and the sign-in
// throttle. Rates are per second, for all instances together (shared buckets); a rate of 0 turns that limiter off.
const rate = (fallback: number) => numeric({ min: 0, max: 1_000_000 }).default(fallback);
const count = (fallback: number) => numeric({ min: 1, max: 1_000_000, whole: true }).default(fallback);
// Stored objects are counted in Postgres columns (sql/0022_company_usage.sql): integers for counts, bigint for bytes.
const quota = (fallback: number, max = 1_000_000_000) => numeric({ min: 1, max, whole: true }).default(fallback);
const LIMIT_VARS = {
  RATE_LIMIT_PER_SECOND: rate(100),
  RATE_LIMIT_BURST: count(200),
  SANDBOX_RATE_LIMIT_PER_SECOND: rate(10),
  SANDBOX_RATE_LIMIT_BURST: count(20),
  WEBHOOK_ENDPOINTS_PER_COMPANY: count(50),
  WEBHOOK_CONCURRENCY_PER_COMPANY: count(500),
  WEBHOOK_RECOVER_SCAN_EVENTS: count(20_000),
  FILTER_TIME_MS_PER_SECOND: rate(50),
  FILTER_TIME_BURST_MS: count(250),
  WEBHOOK_STATS_READS_PER_COMPANY: count(2),
  WEBHOOK_STATS_READS_PER_INSTANCE: count(4),
  QUOTA_PEOPLE_PER_COMPANY: quota(1_000_000),
  QUOTA_BANK_ACCOUNTS_PER_COMPANY: quota(1_000_000),
  QUOTA_DOCUMENTS_PER_COMPANY: quota(1_000_000),
  QUOTA_DOCUMENT_BYTES_PER_COMPANY: quota(10 * 2 ** 30, Number.MAX_SAFE_INTEGER),
  SIGN_IN_FAILURES_PER_USERNAME: count(10),
  SIGN_IN_FAILURES_PER_ADDRESS: count(100),
  SIGN_IN_FAILURES_GLOBAL: count(1000),
  SIGN_IN_FAILURE_WINDOW_SECONDS: count(900),
  SIGN_IN_HASH_CONCURRENCY: count(2),
  SIGN_IN_HASH_QUEUE: numeric({ min: 0, max: 10_000, whole: true }).default(16),
  SIGN_IN_HASH_PER_ADDRESS: count(4),
};

export type Limits = {
  requestsPerSecond: number;
  requestBurst: number;
  sandboxPerSecond: number;
  sandboxBurst: number;
  /** Active endpoints a company may have. */
  endpointsPerCompany: number;
  /** The sum of max_concurrency over a company's active endpoints, and so its webhook slot rows. */
  concurrencyPerCompany: number;
  /** Events one recover reads at most while looking for the skipped ones (domain/webhooks/outbox/replay.ts). */
  recoverScanEvents: number;
  /**
   * A company's filter time in each instance (domain/webhooks/outbox/filter_time.ts): milliseconds of filter
   * evaluation a second (0: unbounded) and the most it may save up.
   */
  filterTimePerSecondMs: number;
  filterTimeBurstMs: number;
  /** Endpoint stats reads one company may have running at once in an instance, and all companies together. */
  statsReadsPerCompany: number;
  statsReadsPerInstance: number;
  /** Subjects a company may store: people and company customers together (one table, the same holdings). */
  peoplePerCompany: number;
  /** Bank accounts a company may register, its subjects' and its own international ones (internal ones aside). */
  bankAccountsPerCompany: number;
  /** Documents a company may store, uploaded alone or inside a person's registration. */
  documentsPerCompany: number;
  /** Bytes of document files a company may store (documents given by URL hold none here). */
  documentBytesPerCompany: number;
  /** Failures of one username from one client address (the variable's name predates the address). */
  signInFailuresPerUsername: number;
  signInFailuresPerAddress: number;
  /** Failures of all addresses together past which an address that has failed waits for the window. */
  signInFailuresGlobal: number;
  signInWindowSeconds: number;
  /** Password hashes computed at once (32 MiB each while they run); more wait in a queue of `signInHashQueue`. */
  signInHashConcurrency: number;
  /** Sign-ins waiting for a hash; past it, 503 with Retry-After. */
  signInHashQueue: number;
  /** Places in the hash pool (hashing and waiting) one client address may hold; past it, 429 with Retry-After. */
  signInHashPerAddress: number;
};

function limitsFrom(e: { [K in keyof typeof LIMIT_VARS]: number }): Limits {
  return {
    requestsPerSecond: e.RATE_LIMIT_PER_SECOND,
    requestBurst: e.RATE_LIMIT_BURST,
    sandboxPerSecond: e.SANDBOX_RATE_LIMIT_PER_SECOND,
    sandboxBurst: e.SANDBOX_RATE_LIMIT_BURST,
    endpointsPerCompany: e.WEBHOOK_ENDPOINTS_PER_COMPANY,
    concurrencyPerCompany: e.WEBHOOK_CONCURRENCY_PER_COMPANY,
    recoverScanEvents: e.WEBHOOK_RECOVER_SCAN_EVENTS,
    filterTimePerSecondMs: e.FILTER_TIME_MS_PER_SECOND,
    filterTimeBurstMs: e.FILTER_TIME_BURST_MS,
    statsReadsPerCompany: e.WEBHOOK_STATS_READS_PER_COMPANY,
    statsReadsPerInstance: e.WEBHOOK_STATS_READS_PER_INSTANCE,
    peoplePerCompany: e.QUOTA_PEOPLE_PER_COMPANY,
    bankAccountsPerCompany: e.QUOTA_BANK_ACCOUNTS_PER_COMPANY,
    documentsPerCompany: e.QUOTA_DOCUMENTS_PER_COMPANY,
    documentBytesPerCompany: e.QUOTA_DOCUMENT_BYTES_PER_COMPANY,
    signInFailuresPerUsername: e.SIGN_IN_FAILURES_PER_USERNAME,
    signInFailuresPerAddress: e.SIGN_IN_FAILURES_PER_ADDRESS,
    signInFailuresGlobal: e.SIGN_IN_FAILURES_GLOBAL,
    signInWindowSeconds: e.SIGN_IN_FAILURE_WINDOW_SECONDS,
    signInHashConcurrency: e.SIGN_IN_HASH_CONCURRENCY,
    signInHashQueue: e.SIGN_IN_HASH_QUEUE,
    signInHashPerAddress: e.SIGN_IN_HASH_PER_ADDRESS,
  };
}

/** An AES-256 key: 32 bytes as 64 hex characters or as base64 (either alphabet). */
const encryptionKey = z.string().trim().transform((text, ctx) => {
  const key = decodeKey(text);
  if (key?.length === 32) return key;
  ctx.addIssue({ code: "custom", message: "must be 32 bytes, as 64 hex characters or base64" });
  return z.NEVER;
});

function decodeKey(text: string): Uint8Array | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Uint8Array.fromHex(text);
  for (const alphabet of ["base64", "base64url"] as const) {
    try {
      return Uint8Array.fromBase64(text, { alphabet });
    } catch { /* try the other alphabet */ }
  }
  return null;
}

// Tracing (docs/production.md, "Tracing"): Deno's runtime reads these itself when the process starts; they are checked
// here too, so a value the runtime would ignore or refuse stops the start with the variable named.
const TRACING_VARS = {
  // Deno takes only "true" or "false" (in any case) and ignores anything else with a warning: tracing stays off
  OTEL_DENO: z.string().regex(/^(true|false)$/i, "must be true or false").optional()
    .transform((v) => v?.toLowerCase() === "true"),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
  // the two OTLP encodings checked with this Deno (tests/webhooks/tracing_test.ts uses http/json)
  OTEL_EXPORTER_OTLP_PROTOCOL: oneOf(["http/protobuf", "http/json"]).optional(),
  OTEL_SERVICE_NAME: z.string().min(1, "must not be empty").optional(),
};

// The URL is never quoted back: it may carry a password.
const DATABASE_URL_EXPECTED = 'must be a postgres:// URL (postgres://user:password@host:5432/database) or "embedded"';
/** What withUser and both drivers can open: anything else failed later, as a bare "Invalid URL" naming no variable. */
function isDatabaseUrl(text: string): boolean {
  if (text === "embedded") return true;
  try {
    return ["postgres:", "postgresql:"].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

// The address integrators reach the service at (docs/production.md, "The service's own address"): what the links it
// hands out point at. Never quoted back: a URL may carry a password, and one that does is refused.
const PUBLIC_BASE_URL_EXPECTED = "must be an http:// or https:// URL, with a path or none and nothing else " +
  "(https://payments.example.com, https://example.com/payments)";

/**
 * An http(s) origin and an optional path, without user, password, query or fragment: as text, without the path's
 * trailing slash, so a link is the base and its own path. Null for anything else.
 */
export function parsePublicBaseUrl(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const plain = ["http:", "https:"].includes(url.protocol) && !url.username && !url.password && !/[?#]/.test(text);
  return plain ? url.origin + url.pathname.replace(/\/+$/, "") : null;
}

// unset or empty (a deployment template that lost its value): none, as `secret` reads its variables
const publicBaseUrl = z.string().optional().transform((text, ctx) => {
  if (text === undefined || text.trim() === "") return undefined;
  const base = parsePublicBaseUrl(text.trim());
  if (base !== null) return base;
  ctx.addIssue({ code: "custom", message: PUBLIC_BASE_URL_EXPECTED });
  return z.NEVER;
});

const EnvSchema = z.object({
  PORT: numeric({ min: 0, max: 65535, whole: true }).default(4000),
  HOST: z.string().default("127.0.0.1"),
  DATABASE_URL: z.string().refine(isDatabaseUrl, DATABASE_URL_EXPECTED).optional(),
  PGHOST: z.string().optional(),
  PGPORT: numeric({ min: 1, max: 65535, whole: true }).optional(),
  PGUSER: z.string().optional(),
  PGPASSWORD: z.string().optional(),
  PGDATABASE: z.string().optional(),
  USER: z.string().optional(),
  APP_ENV: AppEnv,
  JWT_SECRET: secret,
  JWT_ISSUER: z.string().min(1, "must not be empty").default("payments-api"),
  JWT_AUDIENCE: z.string().min(1, "must not be empty").default("payments-api"),
  JWT_MAX_TTL_SECONDS: numeric({ min: 60, whole: true }).default(THIRTY_DAYS),
  METRICS_TOKEN: secret,
  BODY_TIMEOUT_MS: numeric({ min: 1, whole: true }).default(60_000),
  MAX_INFLIGHT_REQUESTS: numeric({ min: 1, whole: true }).default(512),
  // how long a SIGTERM keeps serving, /readyz answering 503, before the socket closes (docs/production.md, "Upgrading")
  SHUTDOWN_DRAIN_MS: numeric({ min: 0, max: 120_000, whole: true }).default(5_000),
  WORKER: flag(true),
  WORKER_CONCURRENCY: numeric({ min: 1, max: 1000, whole: true }).default(32),
  WEBHOOK_RETRY_SCHEDULE: schedule.default(expandSchedule(DEFAULT_RETRY_SCHEDULE.split(",").map(Number))),
  WEBHOOK_TIMEOUT_MS: numeric({ min: 1, whole: true }).default(10_000),
  WEBHOOK_DISABLE_AFTER_SECONDS: numeric({ min: 0 }).default(432_000),
  // endpoint.failing (docs/webhooks.md, "Operational events"): failed attempts in a row, or seconds of failures
  WEBHOOK_FAILING_AFTER_ATTEMPTS: numeric({ min: 1, max: 1_000_000, whole: true }).default(10),
  WEBHOOK_FAILING_AFTER_SECONDS: numeric({ min: 0, max: THIRTY_DAYS, above: true }).default(3600),
  EVENT_RETENTION_DAYS: numeric({ min: 0, max: 36_500, above: true }).default(30),
  WEBHOOK_ALLOW_PRIVATE_URLS: optionalFlag,
  SANDBOX: optionalFlag,
  SECRET_ENCRYPTION_KEY: encryptionKey.optional(),
  SECRET_ENCRYPTION_KEY_PREVIOUS: encryptionKey.optional(),
  LOG_LEVEL: oneOf(["debug", "info", "warn", "error", "silent"]).default("info"),
  TRUST_PROXY_HOPS: numeric({ min: 0, max: 10, whole: true }).default(0),
  TRUST_PROXY_HEADER: oneOf(["x-forwarded-for", "forwarded"]).default("x-forwarded-for"),
  PUBLIC_BASE_URL: publicBaseUrl,
  ...TRACING_VARS,
  ...LIMIT_VARS,
});

export type Config = {
  appEnv: "development" | "production" | "test";
  /** False when APP_ENV was unset and development is only the default: the start says so (main.ts). */
  appEnvGiven: boolean;
  port: number;
  host: string;
  /** Where Postgres is expected; "embedded" forces the embedded server. */
  databaseUrl: string;
  /** False when the URL is only the default, so start-up may fall back to the embedded server. */
  databaseUrlExplicit: boolean;
  /** HS256 key of bearer tokens: `JWT_SECRET`, or outside production the one generated under `.data/secrets`. */
  jwtSecret: string;
  jwtSecretGenerated: boolean;
  /** Every token must carry these as `iss` and `aud`. */
  jwtIssuer: string;
  jwtAudience: string;
  /** Longest `exp - iat` accepted, and the lifetime `deno task token` signs. */
  jwtMaxTtlSeconds: number;
  /** When set, `/metrics` answers only `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** Time allowed to receive a request body, from the end of its headers. */
  bodyTimeoutMs: number;
  /** Requests handled at once; more answer 503 with Retry-After. */
  maxInflightRequests: number;
  /** After SIGTERM: serving on, `/readyz` answering 503, so a load balancer stops sending before the socket closes. */
  shutdownDrainMs: number;
  worker: boolean;
  workerConcurrency: number;
  /** Delays in seconds before attempts 2..10: always 9 numbers. */
  retrySchedule: number[];
  webhookTimeoutMs: number;
  /** An endpoint whose attempts have all failed for this long is disabled (`disabled_reason: "failing"`). */
  webhookDisableAfterSeconds: number;
  /**
   * An endpoint is found failing (`endpoint.failing`, once per streak) at this many failed attempts in a row, or at a
   * failed attempt this many seconds after the first failure of the streak, whichever comes first.
   */
  webhookFailingAfterAttempts: number;
  webhookFailingAfterSeconds: number;
  /** Events, delivery records and attempts older than this go (fractions of a day allowed); pending records stay. */
  eventRetentionDays: number;
  /**
   * `WEBHOOK_ALLOW_PRIVATE_URLS`: endpoints may be http:// and on loopback or private addresses. By default only in
   * development; `test` and `production` keep to public https, and production refuses it outright.
   */
  allowPrivateUrls: boolean;
  sandbox: boolean;
  /** Seals webhook signing secrets at rest; null: a development key kept under `.data/secrets/`. */
  secretEncryptionKey: Uint8Array | null;
  /** The key before a rotation of SECRET_ENCRYPTION_KEY: opens what it sealed, seals nothing. */
  secretEncryptionKeyPrevious: Uint8Array | null;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Reverse proxies in front whose forwarded-for header is believed (0: none, the connection's address counts). */
  trustProxy: { hops: number; header: "x-forwarded-for" | "forwarded" };
  /**
   * `PUBLIC_BASE_URL`: where integrators reach the service, an origin and an optional path without its trailing slash;
   * what a portal link points at. Null when unset: production then refuses to make a link, development and test use
   * the address the request came to (domain/integrators/portal_links.ts, `portalLinkBase`).
   */
  publicBaseUrl: string | null;
  /**
   * OpenTelemetry (`OTEL_DENO=true`, off by default): spans of requests, statements and webhook attempts exported over
   * OTLP by the runtime to `endpoint` (the runtime's default, http://localhost:4318, when null).
   */
  tracing: { enabled: boolean; endpoint: string | null; protocol: "http/protobuf" | "http/json"; serviceName: string };
  limits: Limits;
};

/** Fewer than 9 numbers repeat the last one, so "1" means "retry every second". */
export function expandSchedule(seconds: number[]): number[] {
  const out = seconds.slice(0, 9);
  while (out.length < 9) out.push(out[out.length - 1] ?? 0);
  return out;
}

/**
 * The local secrets `env` leaves for `local_secrets.ts` to generate: none in production, where a missing one is
 * refused instead.
 */
export function localSecretsWanted(env: Record<string, string | undefined>): LocalSecretVariable[] {
  const appEnv = AppEnv.safeParse(env.APP_ENV);
  if (!appEnv.success || appEnv.data === "production") return [];
  return LOCAL_SECRET_VARIABLES.filter((name) => !env[name]);
}

/**
 * Parses the environment once; a bad value stops the start with a message naming the variable, and every problem is
 * listed in that one message (an operator fixes them all in one round, not one per start: docs/production.md). `local`
 * holds the generated secrets (`local_secrets.ts`) used when the environment leaves them out; this function reads no
 * file.
 */
export function loadConfig(
  env: Record<string, string | undefined> = Deno.env.toObject(),
  local: Partial<Record<LocalSecretVariable, string>> = {},
): Config {
  const parsed = EnvSchema.safeParse(env);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  // the checks across variables read theirs one by one, so a bad PORT does not hide a missing secret
  const checked = {
    APP_ENV: variable(env, "APP_ENV"),
    JWT_SECRET: variable(env, "JWT_SECRET"),
    SECRET_ENCRYPTION_KEY: variable(env, "SECRET_ENCRYPTION_KEY"),
    SECRET_ENCRYPTION_KEY_PREVIOUS: variable(env, "SECRET_ENCRYPTION_KEY_PREVIOUS"),
    METRICS_TOKEN: variable(env, "METRICS_TOKEN"),
    WEBHOOK_ALLOW_PRIVATE_URLS: variable(env, "WEBHOOK_ALLOW_PRIVATE_URLS"),
  };
  // An APP_ENV refused as a typo (`prod`, `staging`) stops the start anyway: what production would refuse besides is
  // listed with it, so the corrected value does not meet a second round of refusals.
  const production = checked.APP_ENV === "production" || (env.APP_ENV !== undefined && checked.APP_ENV === undefined);
  const jwtSecret = checked.JWT_SECRET ?? (production ? undefined : local.JWT_SECRET);
  if (jwtSecret === undefined) {
    problems.push(
      production
        ? `JWT_SECRET: must be set when APP_ENV=production, at least ${MIN_SECRET_BYTES} bytes (openssl rand -hex 32)`
        : "JWT_SECRET: not set, and no generated secret was given",
    );
  } else if (byteLength(jwtSecret) < MIN_SECRET_BYTES) {
    problems.push(`JWT_SECRET: must be at least ${MIN_SECRET_BYTES} bytes (openssl rand -hex 32)`);
  }
  // webhook signing secrets are sealed with this key: production never falls back to a key kept beside the data
  // (a value that is there but not a key is already named by the schema's own problem)
  if (production && env.SECRET_ENCRYPTION_KEY === undefined) {
    problems.push("SECRET_ENCRYPTION_KEY: must be set when APP_ENV=production (openssl rand -hex 32)");
  }
  // a JWT_SECRET already refused for its length is not judged for its randomness too: one line per fault
  const judged = jwtSecret !== undefined && byteLength(jwtSecret) >= MIN_SECRET_BYTES ? jwtSecret : undefined;
  if (production) problems.push(...productionRefusals(checked, judged));
  if (!parsed.success || problems.length > 0 || jwtSecret === undefined) throw invalidConfiguration(problems);
  const e = parsed.data;
  const localKey = local.SECRET_ENCRYPTION_KEY === undefined ? null : Uint8Array.fromHex(local.SECRET_ENCRYPTION_KEY);
  return {
    appEnv: e.APP_ENV,
    appEnvGiven: env.APP_ENV !== undefined,
    port: e.PORT,
    host: e.HOST,
    databaseUrl: withUser(e.DATABASE_URL ?? defaultDatabaseUrl(e), e.PGUSER ?? e.USER ?? "postgres"),
    databaseUrlExplicit: e.DATABASE_URL !== undefined,
    jwtSecret,
    jwtSecretGenerated: e.JWT_SECRET === undefined,
    jwtIssuer: e.JWT_ISSUER,
    jwtAudience: e.JWT_AUDIENCE,
    jwtMaxTtlSeconds: e.JWT_MAX_TTL_SECONDS,
    metricsToken: e.METRICS_TOKEN ?? null,
    bodyTimeoutMs: e.BODY_TIMEOUT_MS,
    maxInflightRequests: e.MAX_INFLIGHT_REQUESTS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    worker: e.WORKER,
    workerConcurrency: e.WORKER_CONCURRENCY,
    retrySchedule: e.WEBHOOK_RETRY_SCHEDULE,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookDisableAfterSeconds: e.WEBHOOK_DISABLE_AFTER_SECONDS,
    webhookFailingAfterAttempts: e.WEBHOOK_FAILING_AFTER_ATTEMPTS,
    webhookFailingAfterSeconds: e.WEBHOOK_FAILING_AFTER_SECONDS,
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
    // a laptop's receiver is on loopback (README, "Quickstart"); production refuses the setting (productionRefusals)
    allowPrivateUrls: e.WEBHOOK_ALLOW_PRIVATE_URLS ?? e.APP_ENV === "development",
    // a production instance with the defaults must not let integrators fabricate money movements
    sandbox: e.SANDBOX ?? !production,
    secretEncryptionKey: e.SECRET_ENCRYPTION_KEY ?? (production ? null : localKey),
    secretEncryptionKeyPrevious: e.SECRET_ENCRYPTION_KEY_PREVIOUS ?? null,
    logLevel: e.LOG_LEVEL,
    trustProxy: { hops: e.TRUST_PROXY_HOPS, header: e.TRUST_PROXY_HEADER },
    publicBaseUrl: e.PUBLIC_BASE_URL ?? null,
    tracing: {
      enabled: e.OTEL_DENO,
      endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT ?? null,
      // the runtime's defaults, for the start-up log
      protocol: e.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf",
      serviceName: e.OTEL_SERVICE_NAME ?? "unknown_service:deno",
    },
    limits: limitsFrom(e),
  };
}

/**
 * What production refuses besides a missing secret (docs/production.md): private webhook URLs, with which an
 * integrator makes the service call its own network (an endpoint at http://169.254.169.254/latest/ was accepted),
 * and secrets too guessable to protect anything (`lowEntropy`). One line per variable; never the secret itself.
 */
function productionRefusals(e: CheckedVariables, jwtSecret: string | undefined): string[] {
  const refused: string[] = [];
  if (e.WEBHOOK_ALLOW_PRIVATE_URLS) {
    refused.push(
      "WEBHOOK_ALLOW_PRIVATE_URLS: must not be true when APP_ENV=production: it lets integrators make the service " +
        "call loopback, private and cloud metadata addresses",
    );
  }
  const secrets: [string, Uint8Array | undefined][] = [
    ["JWT_SECRET", jwtSecret === undefined ? undefined : secretMaterial(jwtSecret)],
    ["SECRET_ENCRYPTION_KEY", e.SECRET_ENCRYPTION_KEY],
    ["SECRET_ENCRYPTION_KEY_PREVIOUS", e.SECRET_ENCRYPTION_KEY_PREVIOUS],
    ["METRICS_TOKEN", e.METRICS_TOKEN === undefined ? undefined : secretMaterial(e.METRICS_TOKEN)],
  ];
  for (const [name, material] of secrets) {
    const problem = material && lowEntropy(material);
    if (problem) refused.push(`${name}: ${problem}: too guessable for APP_ENV=production (openssl rand -hex 32)`);
  }
  return refused;
}

type Env = z.infer<typeof EnvSchema>;
type CheckedVariables = { [K in keyof Env]?: Env[K] };

/** One variable parsed on its own: its value, or undefined when it is unset or its own problem is already listed. */
function variable<K extends keyof Env>(env: Record<string, string | undefined>, name: K): Env[K] | undefined {
  const result = EnvSchema.shape[name].safeParse(env[name]);
  return result.success ? result.data as Env[K] : undefined;
}

function invalidConfiguration(problems: string[]) {
  return new Error(`invalid configuration:\n  ${problems.join("\n  ")}`);
}

function defaultDatabaseUrl(
  e: { PGHOST?: string; PGPORT?: number; PGUSER?: string; PGPASSWORD?: string; PGDATABASE?: string },
) {
  const url = new URL("postgres://127.0.0.1:5432/payments");
  if (e.PGHOST) url.hostname = e.PGHOST;
  if (e.PGPORT) url.port = String(e.PGPORT);
  if (e.PGUSER) url.username = encodeURIComponent(e.PGUSER);
  if (e.PGPASSWORD) url.password = encodeURIComponent(e.PGPASSWORD);
  if (e.PGDATABASE) url.pathname = `/${encodeURIComponent(e.PGDATABASE)}`;
  return url.toString();
}

/** Both drivers need a user name; `pg` does not fall back to the OS user when USER is unset. */
export function withUser(url: string, user: string): string {
  if (url === "embedded") return url;
  const parsed = new URL(url);
  if (!parsed.username) parsed.username = encodeURIComponent(user);
  return parsed.toString();
}
