import { z } from "zod";

/** Seconds to wait before attempts 2..10 of a webhook delivery. */
const DEFAULT_RETRY_SCHEDULE = "5,300,1800,7200,18000,36000,50400,72000,86400";
const DEV_JWT_SECRET = "dev-only-secret-change-me";

const flag = (fallback: boolean) =>
  z.enum(["true", "false", "on", "off", "1", "0"]).optional()
    .transform((v) => v === undefined ? fallback : ["true", "on", "1"].includes(v));

// Fractions ("0.05") let tests run a whole 10-attempt schedule in a moment.
const schedule = z.string().regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, "must be comma-separated seconds")
  .transform((s) => expandSchedule(s.split(",").map((n) => Number(n.trim()))));

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

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().default("127.0.0.1"),
  DATABASE_URL: z.string().optional(),
  PGHOST: z.string().optional(),
  PGPORT: z.string().optional(),
  PGUSER: z.string().optional(),
  PGPASSWORD: z.string().optional(),
  PGDATABASE: z.string().optional(),
  USER: z.string().optional(),
  JWT_SECRET: z.string().min(1).optional(),
  WORKER: flag(true),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  WEBHOOK_RETRY_SCHEDULE: schedule.default(expandSchedule(DEFAULT_RETRY_SCHEDULE.split(",").map(Number))),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  WEBHOOK_ALLOW_PRIVATE_URLS: flag(false),
  SANDBOX: flag(true),
  SECRET_ENCRYPTION_KEY: encryptionKey.optional(),
  SECRET_ENCRYPTION_KEY_PREVIOUS: encryptionKey.optional(),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
});

export type Config = {
  port: number;
  host: string;
  /** Where Postgres is expected; "embedded" forces the embedded server. */
  databaseUrl: string;
  /** False when the URL is only the default, so start-up may fall back to the embedded server. */
  databaseUrlExplicit: boolean;
  jwtSecret: string;
  jwtSecretIsDefault: boolean;
  worker: boolean;
  workerConcurrency: number;
  /** Delays in seconds before attempts 2..10: always 9 numbers. */
  retrySchedule: number[];
  webhookTimeoutMs: number;
  allowPrivateUrls: boolean;
  sandbox: boolean;
  /** Seals webhook signing secrets at rest; null: a development key kept under `.data/secrets/`. */
  secretEncryptionKey: Uint8Array | null;
  /** The key before a rotation of SECRET_ENCRYPTION_KEY: opens what it sealed, seals nothing. */
  secretEncryptionKeyPrevious: Uint8Array | null;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
};

/** Fewer than 9 numbers repeat the last one, so "1" means "retry every second". */
export function expandSchedule(seconds: number[]): number[] {
  const out = seconds.slice(0, 9);
  while (out.length < 9) out.push(out[out.length - 1] ?? 0);
  return out;
}

/** Parses the environment once; a bad value stops the start with a message naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: withUser(e.DATABASE_URL ?? defaultDatabaseUrl(e), e.PGUSER ?? e.USER ?? "postgres"),
    databaseUrlExplicit: e.DATABASE_URL !== undefined,
    jwtSecret: e.JWT_SECRET ?? DEV_JWT_SECRET,
    jwtSecretIsDefault: e.JWT_SECRET === undefined,
    worker: e.WORKER,
    workerConcurrency: e.WORKER_CONCURRENCY,
    retrySchedule: e.WEBHOOK_RETRY_SCHEDULE,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    allowPrivateUrls: e.WEBHOOK_ALLOW_PRIVATE_URLS,
    sandbox: e.SANDBOX,
    secretEncryptionKey: e.SECRET_ENCRYPTION_KEY ?? null,
    secretEncryptionKeyPrevious: e.SECRET_ENCRYPTION_KEY_PREVIOUS ?? null,
    logLevel: e.LOG_LEVEL,
  };
}

function defaultDatabaseUrl(
  e: { PGHOST?: string; PGPORT?: string; PGUSER?: string; PGPASSWORD?: string; PGDATABASE?: string },
) {
  const url = new URL("postgres://127.0.0.1:5432/payments");
  if (e.PGHOST) url.hostname = e.PGHOST;
  if (e.PGPORT) url.port = e.PGPORT;
  if (e.PGUSER) url.username = encodeURIComponent(e.PGUSER);
  if (e.PGPASSWORD) url.password = encodeURIComponent(e.PGPASSWORD);
  if (e.PGDATABASE) url.pathname = `/${encodeURIComponent(e.PGDATABASE)}`;
  return url.toString();
}

/** Both drivers need a user name; `pg` does not fall back to the OS user when USER is unset. */
function withUser(url: string, user: string): string {
  if (url === "embedded") return url;
  const parsed = new URL(url);
  if (!parsed.username) parsed.username = encodeURIComponent(user);
  return parsed.toString();
}
