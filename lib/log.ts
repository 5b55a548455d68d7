/** One JSON object per line on stdout; the only logger of the service. */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

let threshold: number = LEVELS.info;

export function setLogLevel(level: LogLevel) {
  threshold = LEVELS[level];
}

function write(level: Exclude<LogLevel, "silent">, msg: string, fields: Record<string, unknown> = {}) {
  if (LEVELS[level] < threshold) return;
  console.log(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }));
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write("debug", msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write("info", msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write("warn", msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write("error", msg, fields),
};
