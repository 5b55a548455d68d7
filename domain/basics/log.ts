/** One JSON object per line on stdout; the only logger of the service. */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

let threshold: number = LEVELS.info;

export function setLogLevel(level: LogLevel) {
  threshold = LEVELS[level];
}

const encoder = new TextEncoder();
let pending: string[] = [];
let flushScheduled = false;

/**
 * Lines are written in batches at the end of the current tick: one write per burst of requests instead of
 * one blocking write per line, which under load cost a fifth of the request rate.
 */
function flush() {
  flushScheduled = false;
  const lines = pending;
  pending = [];
  const bytes = encoder.encode(lines.join(""));
  let written = 0;
  while (written < bytes.length) written += Deno.stdout.writeSync(bytes.subarray(written));
}

/** The time of a line; lines of one millisecond (a burst of requests) share one `toISOString`. */
let lastMs = NaN;
let lastTime = "";
function timeNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) lastTime = new Date(lastMs = ms).toISOString();
  return lastTime;
}

/**
 * `{"time", "level", "msg", ...fields}` as one line. The three first keys are written as text and the fields
 * stringified alone, which costs a request's line a third less than stringifying a spread copy
 * (docs/performance.md); fields that would replace one of the three are spread as before.
 */
function line(level: string, msg: string, fields: Record<string, unknown> | undefined): string {
  if (fields && ("time" in fields || "level" in fields || "msg" in fields)) {
    return JSON.stringify({ time: timeNow(), level, msg, ...fields }) + "\n";
  }
  const rest = fields ? JSON.stringify(fields) : "{}";
  const head = `{"time":"${timeNow()}","level":"${level}","msg":${JSON.stringify(msg)}`;
  return rest.length > 2 ? `${head},${rest.slice(1)}\n` : `${head}}\n`;
}

function write(level: Exclude<LogLevel, "silent">, msg: string, fields?: Record<string, unknown>) {
  if (LEVELS[level] < threshold) return;
  pending.push(line(level, msg, fields));
  if (level === "error") return flush();
  if (!flushScheduled) {
    flushScheduled = true;
    setTimeout(flush, 0);
  }
}

/** Writes what is buffered now; called before the process exits. */
export const flushLogs = () => pending.length && flush();

// Nor is a line lost when the process ends another way: `Deno.exit` dispatches `unload`, and an uncaught error or
// rejection is reported after its event, so the lines that led to it are written before the report.
for (const event of ["unload", "error", "unhandledrejection"]) globalThis.addEventListener(event, () => flushLogs());

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write("debug", msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write("info", msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write("warn", msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write("error", msg, fields),
};
