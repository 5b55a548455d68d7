/**
 * How a request that fails its schema becomes an ApiError: the message vocabulary installed into zod, the hook every
 * router shares and `alsoCheck`. One file, so every route words its validation errors alike (docs/errors.md).
 */

import { z } from "zod";
import type { Context } from "hono";
import {
  addFieldError,
  ApiError,
  badRequest,
  BLANK,
  EMAIL_FORMAT,
  ErrorBag,
  type FieldErrors,
  flattenFieldErrors,
  isFieldError,
  validationFailed,
} from "../../domain/basics/errors.ts";

/** What every authenticated request carries in its context. */
export type AppEnv = {
  Variables: {
    companyId: string;
    sessionId: string | null;
    requestId: string;
    /** Takes the request out of the in-flight bound (in_flight.ts): a pull stream's wait. */
    leaveInFlight?: () => void;
  };
};

/** Keys that wrap a request body (`{person: {...}}`); their absence is a 400 with a detail, not a field error. */
const WRAPPER_KEYS = new Set(["person", "company", "bank_account", "document", "transaction", "user"]);

/**
 * A value of the wrong JSON type keeps `is invalid`, the message decisions fix and a client may match on its start,
 * and goes on with the type wanted: a CPF sent as a number hears `is invalid: must be a string` (docs/errors.md,
 * Messages). Other expectations keep `is invalid` alone.
 */
export const WRONG_TYPE: Readonly<Record<string, string>> = {
  string: "is invalid: must be a string",
  number: "is invalid: must be a number",
  int: "is invalid: must be an integer",
  boolean: "is invalid: must be true or false",
  object: "is invalid: must be an object",
  record: "is invalid: must be an object",
  array: "is invalid: must be an array",
};

/**
 * One vocabulary of messages for every schema (docs/errors.md, Messages), so no schema has to spell them out.
 * Schemas still pass their own message where a rule needs one ("does not match curp").
 */
z.config({
  customError: (iss) => {
    switch (iss.code) {
      case "invalid_type":
        return iss.input === undefined || iss.input === null ? BLANK : WRONG_TYPE[iss.expected] ?? "is invalid";
      case "invalid_value":
        return `must be one of: ${iss.values.join(", ")}`;
      case "invalid_format":
        return iss.format === "email" ? EMAIL_FORMAT : "has invalid format";
      case "too_big":
        if (iss.origin === "string") return `is too long (maximum is ${iss.maximum} characters)`;
        if (iss.origin === "array") return `has too many items (maximum is ${iss.maximum})`;
        return `must be less than or equal to ${iss.maximum}`;
      case "too_small":
        if (iss.origin === "string") {
          return iss.minimum === 1 ? BLANK : `is too short (minimum is ${iss.minimum} characters)`;
        }
        if (iss.origin === "array") return iss.minimum === 1 ? BLANK : `has too few items (minimum is ${iss.minimum})`;
        return `must be greater than or equal to ${iss.minimum}`;
      default:
        return "is invalid";
    }
  },
});

type Target = "json" | "param" | "query" | "header" | "form" | "cookie" | string;

/** A zod issue's path as field names, without the wrapper key (`person`, `bank_account`, `document`). */
function fieldPath(issue: z.core.$ZodIssue, target: Target): (string | number)[] {
  const path = issue.path.map((p) => typeof p === "symbol" ? String(p) : p);
  return target === "json" && WRAPPER_KEYS.has(String(path[0])) ? path.slice(1) : path;
}

/** Turns a failed request validation into the ApiError that `onError` renders. */
export function requestValidationError(error: z.ZodError, target: Target): ApiError {
  if (target === "param") {
    const errors: FieldErrors = {};
    for (const issue of error.issues) addFieldError(errors, issue.path.slice(0, 1) as string[], "is invalid");
    return new ApiError(400, errors);
  }
  if (target === "json") {
    for (const issue of error.issues) {
      if (issue.path.length === 0) return badRequest("request body must be a JSON object");
      if (issue.path.length === 1 && WRAPPER_KEYS.has(String(issue.path[0])) && issue.code === "invalid_type") {
        return badRequest(`${String(issue.path[0])} must be present and be an object`);
      }
    }
  }
  const errors: FieldErrors = {};
  for (const issue of error.issues) addFieldError(errors, fieldPath(issue, target), issue.message);
  return validationFailed(errors);
}

/**
 * The path of the first string Postgres cannot store: one holding a NUL character (text refuses it), or a lone
 * UTF-16 surrogate, which jsonb refuses and text would silently turn into U+FFFD.
 */
function unstorablePath(value: unknown, path: (string | number)[] = []): (string | number)[] | null {
  if (typeof value === "string") return value.includes("\u0000") || !value.isWellFormed() ? path : null;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = unstorablePath(v, [...path, i]);
      if (found) return found;
    }
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const found = unstorablePath(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/** The hook every validated route shares: a failure becomes a thrown ApiError. */
export function validationHook(
  result: { success: true; data?: unknown; target?: Target } | { success: false; error: z.ZodError; target?: Target },
  _c?: unknown,
) {
  if (!result.success) throw requestValidationError(result.error, result.target ?? "json");
  const bad = unstorablePath(result.data);
  if (bad) {
    const path = result.target === "json" && WRAPPER_KEYS.has(String(bad[0])) ? bad.slice(1) : bad;
    const errors: FieldErrors = {};
    addFieldError(errors, path, "is invalid");
    throw validationFailed(errors, 422);
  }
}

type Result =
  | { success: true; data?: unknown; target?: Target }
  | { success: false; error: z.ZodError; data?: unknown; target?: Target };

/**
 * The parts of `raw` that `schema` accepts, parsed: an object (or array) that fails as a whole keeps the fields (or
 * elements) that pass on their own, recursively, so rules on the good parts can still run. Undefined when nothing
 * passes.
 */
async function parsedParts(schema: z.ZodType, raw: unknown): Promise<unknown> {
  const whole = await schema.safeParseAsync(raw);
  if (whole.success) return whole.data;
  let def = schema._zod.def as {
    type: string;
    innerType?: z.ZodType;
    shape?: Record<string, z.ZodType>;
    element?: z.ZodType;
  };
  while ((def.type === "optional" || def.type === "nullable") && def.innerType) def = def.innerType._zod.def as never;
  if (def.type === "array" && def.element && Array.isArray(raw)) {
    // positions are kept (a refused element is a hole), so errors still name the right element
    const element = def.element;
    return await Promise.all(raw.map((item) => parsedParts(element, item)));
  }
  if (def.type !== "object" || !def.shape || !raw || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const parts: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(def.shape)) {
    const value = await parsedParts(field, (raw as Record<string, unknown>)[key]);
    if (value !== undefined) parts[key] = value;
  }
  return parts;
}

const overlaps = (a: readonly (string | number)[], b: readonly (string | number)[]) =>
  a.slice(0, b.length).every((k, i) => String(k) === String(b[i])) ||
  b.slice(0, a.length).every((k, i) => String(k) === String(a[i]));

/**
 * A route's hook for a body whose shape check is not the whole story: when the shape fails, `check` (the domain's
 * own validation, the one the handler's call runs) still runs on the fields that did parse, and one answer lists
 * both kinds of error. The domain says nothing about a field the shape already refused. Errors of `check` other
 * than field errors (an unknown id) wait for a body whose shape is right.
 */
export function alsoCheck<S extends z.ZodType>(
  schema: S,
  check: (parts: Partial<z.output<S>>, c: Context<AppEnv>) => unknown,
) {
  // the failure path always rejects, so its promise never resolves to a value: Promise<never> says so to Hono
  return <T extends Result>(result: T, c: Context<AppEnv>): Promise<never> | undefined => {
    if (result.success || (result.target ?? "json") !== "json") {
      validationHook(result, c);
      return undefined;
    }
    return rejectWithChecks(schema, result.error, result.data, (parts) => check(parts as Partial<z.output<S>>, c));
  };
}

async function rejectWithChecks(
  schema: z.ZodType,
  error: z.ZodError,
  raw: unknown,
  check: (parts: unknown) => unknown,
): Promise<never> {
  const shape = requestValidationError(error, "json");
  if (!isFieldError(shape)) throw shape;
  const failed = error.issues.map((issue) => fieldPath(issue, "json"));
  const bag = new ErrorBag();
  for (const [path, message] of flattenFieldErrors(shape.errors)) bag.add(path, message);
  const parts = (await parsedParts(schema, raw)) ?? {};
  const checked = async () => {
    try {
      await check(parts);
    } catch (e) {
      // an unknown id or a file too large: answered once the body's shape is right, as before
      if (!(e instanceof ApiError) || isFieldError(e)) throw e;
    }
  };
  await bag.collect(checked, (path) => failed.some((f) => overlaps(f, path)));
  bag.throwIfAny();
  throw shape; // not reached: the bag holds at least the shape's errors
}
