/**
 * OpenTelemetry tracing (docs/production.md, "Tracing"): Deno's built-in OpenTelemetry, on with `OTEL_DENO=true`,
 * traces every request `Deno.serve` answers and every HTTP request the process makes, and exports them over OTLP. This
 * module adds what Deno cannot see: one span per SQL statement (postgres.js has no hook), the route in the request's
 * span, and one span per webhook attempt continuing the trace of the request that emitted the event (`traceparent`,
 * docs/webhooks.md, "Tracing"). Off, every function here returns at its first line: nothing is patched and no span made.
 */
import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Sql } from "./db.ts";

const tracer = trace.getTracer("payments-api");
let on = false;

/** The longest statement text a SQL span carries. */
export const MAX_STATEMENT_CHARS = 4096;

/**
 * Turns this module on when the configuration says tracing is on, and traces the statements of every postgres.js
 * pool of the process. Returns false when the runtime does not record spans although OTEL_DENO=true (Deno read the
 * variable, so this would be a runtime without OpenTelemetry): nothing is turned on then.
 */
export function startTracing(enabled: boolean, sql: Sql): boolean {
  if (!enabled || on) return on;
  // never ended, so never exported: only asks whether the runtime records spans
  if (!tracer.startSpan("probe", {}, ROOT_CONTEXT).isRecording()) return false;
  on = true;
  traceStatements(sql);
  return true;
}

/** Whether spans are being made (for the tests and the start-up log). */
export const tracingOn = () => on;

/**
 * The W3C `traceparent` of the span under way (the request's, in a route), stored with an event so that its
 * deliveries continue the trace; null when tracing is off or nothing is traced here.
 */
export function currentTraceparent(): string | null {
  if (!on) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** Names the request's span after its route ("POST /api/v1/subject/people"), which Deno cannot know. */
export function nameRequestSpan(method: string, route: string): void {
  if (!on) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute("http.route", route);
}

/** A `traceparent` as W3C Trace Context writes it: version 00, trace and parent ids not all zeros, flags. */
const TRACEPARENT_RE = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a valid `traceparent`, or null. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  return traceparent && TRACEPARENT_RE.test(traceparent) ? traceparent.slice(3, 35) : null;
}

export type SpanOptions = {
  /** The `traceparent` to continue; a new trace when null or not valid. */
  parent?: string | null;
  kind?: SpanKind;
  attributes?: Record<string, string | number | boolean>;
};

/**
 * Runs `work` inside a span that continues `parent` (so a delivery made long after its request, in another process,
 * joins the request's trace), handing it the headers that carry this span on (`traceparent`). Off, `work` runs
 * alone with no headers. `work` may describe its outcome on the span; a throw marks it failed.
 */
export async function inSpan<T>(
  name: string,
  opts: SpanOptions,
  work: (headers: Record<string, string>, span: Span | null) => Promise<T>,
): Promise<T> {
  if (!on) return await work({}, null);
  const parent = traceIdOf(opts.parent)
    ? propagation.extract(ROOT_CONTEXT, { traceparent: opts.parent })
    : ROOT_CONTEXT;
  const span = tracer.startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  const active = trace.setSpan(parent, span);
  const headers: Record<string, string> = {};
  propagation.inject(active, headers);
  try {
    return await context.with(active, () => work(headers, span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : "error" });
    throw err;
  } finally {
    span.end();
  }
}

/** What this module reads and writes of a postgres.js query (src/query.js of postgres 3.4). */
type Query = {
  executed: boolean;
  strings: readonly string[];
  string?: string;
  resolve: (result: unknown) => unknown;
  reject: (err: unknown) => unknown;
  handle: () => Promise<void>;
};

/**
 * One span per statement, child of the span under way: postgres.js runs every statement, of the pool or of a
 * transaction, through `handle()` of its Query class, so wrapping that method once traces them all. The span carries
 * the statement's text as sent, with `$1` placeholders: never a parameter's value, which may be personal data.
 * Statements made outside any trace (the worker's timers and sweeps) make no span, or each would start a trace.
 */
function traceStatements(sql: Sql): void {
  // an unexecuted query, made only to reach the class every query shares; it never runs
  const prototype = Object.getPrototypeOf(sql`select 1`) as Query;
  const handle = prototype.handle;
  prototype.handle = function (this: Query) {
    if (!this.executed && trace.getSpan(context.active())) startStatementSpan(this);
    return handle.call(this);
  };
}

function startStatementSpan(query: Query): void {
  const verb = /^\s*(\w+)/.exec(query.strings[0] ?? "")?.[1]?.toLowerCase() ?? "sql";
  const span = tracer.startSpan(verb, {
    kind: SpanKind.CLIENT,
    attributes: { "db.system.name": "postgresql", "db.operation.name": verb },
  });
  const { resolve, reject } = query;
  query.resolve = (result) => {
    const count = (result as { count?: unknown } | null)?.count;
    if (typeof count === "number") span.setAttribute("db.response.returned_rows", count);
    finish(span, query);
    return resolve(result);
  };
  query.reject = (err) => {
    // the SQLSTATE only: a message or its detail may quote the values
    const code = (err as { code?: unknown } | null)?.code;
    span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === "string" ? code : "error" });
    if (typeof code === "string") span.setAttribute("db.response.status_code", code);
    finish(span, query);
    return reject(err);
  };
}

function finish(span: Span, query: Query) {
  if (query.string) span.setAttribute("db.query.text", query.string.slice(0, MAX_STATEMENT_CHARS));
  span.end();
}
