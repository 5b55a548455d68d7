import { z } from "zod";
import {
  addFieldError,
  ApiError,
  badRequest,
  BLANK,
  type FieldErrors,
  validationFailed,
} from "../../domain/platform/errors.ts";

/** Keys that wrap a request body (`{person: {...}}`); their absence is a 400 with a detail, not a field error. */
const WRAPPER_KEYS = new Set(["person", "bank_account", "document"]);

/**
 * One vocabulary of messages for every schema (docs/errors.md, Messages), so no schema has to spell them out.
 * Schemas still pass their own message where a rule needs one ("does not match curp").
 */
z.config({
  customError: (iss) => {
    switch (iss.code) {
      case "invalid_type":
        return iss.input === undefined || iss.input === null ? BLANK : "is invalid";
      case "invalid_value":
        return `must be one of: ${iss.values.join(", ")}`;
      case "invalid_format":
        return "has invalid format";
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
  for (const issue of error.issues) {
    const path = issue.path.map((p) => typeof p === "symbol" ? String(p) : p);
    const relative = target === "json" && WRAPPER_KEYS.has(String(path[0])) ? path.slice(1) : path;
    addFieldError(errors, relative, issue.message);
  }
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
