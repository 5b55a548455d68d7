/**
 * Error values thrown by routes and domain code. `app.onError` is the only place that turns them into
 * the `{errors: ...}` body, so every error a client sees has the same shape.
 */
export type FieldErrors = { [field: string]: string[] | FieldErrors };

export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 408 | 409 | 410 | 413 | 422 | 429 | 500 | 503,
    /** Field errors, or a detail (with, for a pull stream's 410, the oldest cursor still readable). */
    readonly errors: FieldErrors | { detail: string; oldest_cursor?: string },
    /** Headers the answer needs besides its body, such as `Allow` or `Retry-After`. */
    readonly headers?: Record<string, string>,
  ) {
    super(typeof errors.detail === "string" ? errors.detail : "validation failed");
  }
}

export const BLANK = "can't be blank";

/**
 * A format refusal that teaches: decisions' `has invalid format` first, so a client matching the start still does,
 * then the form expected and one value of it (docs/errors.md, Messages).
 *
 * @example
 * ```ts
 * invalidFormat("YYYY-MM-DD", "1990-01-02"); // "has invalid format: expected YYYY-MM-DD, e.g. 1990-01-02"
 * ```
 */
export const invalidFormat = (expected: string, example: string) =>
  `has invalid format: expected ${expected}, e.g. ${example}`;

/** An email address that fails its format, wherever one is checked (a subject's, a PIX key's). */
export const EMAIL_FORMAT = invalidFormat("an email address", "ana@example.com");

/** Field errors: 400 when something required is missing or blank, 422 otherwise (docs/errors.md). */
export function validationFailed(errors: FieldErrors, status?: 400 | 422): ApiError {
  return new ApiError(status ?? (hasBlank(errors) ? 400 : 422), errors);
}

export const badRequest = (detail: string) => new ApiError(400, { detail });
/** 401 with the body decisions fix; `headers` carry the reason, such as the bearer challenge (routes/policy/auth.ts). */
export const unauthorized = (headers?: Record<string, string>) =>
  new ApiError(401, { detail: "Unauthorized" }, headers);
/** A valid token that may not do this (a portal session outside the webhook routes: docs/webhooks.md, "Portal links"). */
export const forbidden = (detail: string) => new ApiError(403, { detail });
export const notFound = () => new ApiError(404, { detail: "Not Found" });
export const unprocessable = (detail: string) => new ApiError(422, { detail });
/** The request is well formed but clashes with what exists (a second active endpoint at one URL). */
export const conflict = (errors: FieldErrors) => new ApiError(409, errors);
/**
 * 413; `bound` names the limit the body passed, after decisions' `Payload Too Large`, so a client matching the start
 * still does (docs/errors.md, Messages).
 */
export const payloadTooLarge = (bound: string) => new ApiError(413, { detail: `Payload Too Large: ${bound}` });
export const methodNotAllowed = (allowed: string[]) =>
  new ApiError(405, { detail: "Method Not Allowed" }, { allow: allowed.join(", ") });
export const requestTimeout = () => new ApiError(408, { detail: "Request Timeout" });
export const tooManyRequests = (retryAfterSeconds: number) =>
  new ApiError(429, { detail: "Too Many Requests" }, { "retry-after": String(retryAfterSeconds) });
export const serviceUnavailable = (retryAfterSeconds: number) =>
  new ApiError(503, { detail: "Service Unavailable" }, { "retry-after": String(retryAfterSeconds) });

function hasBlank(errors: FieldErrors): boolean {
  return Object.values(errors).some((v) => Array.isArray(v) ? v.includes(BLANK) : hasBlank(v));
}

/** Adds `message` at a dotted path such as ["bank", "code"], creating the nested objects. */
export function addFieldError(errors: FieldErrors, path: readonly (string | number)[], message: string) {
  const keys = path.length ? path.map(String) : ["detail"];
  let node = errors;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (!next || Array.isArray(next)) node[key] = {};
    node = node[key] as FieldErrors;
  }
  const last = keys[keys.length - 1];
  const list = node[last];
  if (Array.isArray(list)) {
    if (!list.includes(message)) list.push(message);
  } else node[last] = [message];
}

/** Every [path, message] pair of nested field errors. */
export function flattenFieldErrors(errors: FieldErrors, prefix: string[] = []): [string[], string][] {
  return Object.entries(errors).flatMap(([key, v]) =>
    Array.isArray(v)
      ? v.map((message): [string[], string] => [[...prefix, key], message])
      : flattenFieldErrors(v, [...prefix, key])
  );
}

/** Field errors of a request (400 or 422), as opposed to a missing resource or an error with only a detail. */
export function isFieldError(error: unknown): error is ApiError & { errors: FieldErrors } {
  return error instanceof ApiError && (error.status === 400 || error.status === 422) &&
    typeof error.errors.detail !== "string";
}

/** Collects field errors, then throws them all at once; rules keep running after the first failure. */
export class ErrorBag {
  readonly errors: FieldErrors = {};
  /** A collected check answered 400 without a blank field (a failed document upload): the whole answer is 400. */
  private badRequest = false;
  add(path: string | readonly (string | number)[], message: string) {
    addFieldError(this.errors, typeof path === "string" ? path.split(".") : path, message);
  }
  get empty() {
    return Object.keys(this.errors).length === 0;
  }
  /**
   * Runs a check that throws its field errors (as the domain's validators do) and keeps them here instead, so the
   * next check still runs. `skip` drops errors at paths already reported in other terms. Answers what the check
   * returned, or undefined when it failed. Anything else it throws (not found, a bug) goes on up.
   */
  async collect<T>(check: () => T | Promise<T>, skip?: (path: string[]) => boolean): Promise<T | undefined> {
    try {
      return await check();
    } catch (error) {
      if (!isFieldError(error)) throw error;
      const kept = flattenFieldErrors(error.errors).filter(([path]) => !skip?.(path));
      for (const [path, message] of kept) this.add(path, message);
      if (error.status === 400 && kept.length) this.badRequest = true;
      return undefined;
    }
  }
  throwIfAny(status?: 400 | 422) {
    if (!this.empty) throw validationFailed(this.errors, status ?? (this.badRequest ? 400 : undefined));
  }
}
