/**
 * Sign-in and sign-out (`/api/v1/sign_in`, `/api/v1/sign_out`). Sign-in is the only `/api` route without a bearer
 * token, so it brings its own throttle of failures and a bounded pool for the password hashes (docs/limits.md).
 */

import { createRoute, z } from "@hono/zod-openapi";
import { authenticate, usernameKey } from "../../domain/integrators/users.ts";
import { countSignInFailure, reserveSignIn, settleSignIn } from "../../domain/integrators/sign_in_throttle.ts";
import { endSession, startSession } from "../../domain/integrators/sessions.ts";
import type { TokenGuard } from "../../domain/integrators/token_guard.ts";
import type { Deps } from "../../domain/infra/deps.ts";
import { ApiError, tooManyRequests, unauthorized, unprocessable } from "../../domain/basics/errors.ts";
import { signToken } from "../../domain/integrators/tokens.ts";
import { PoolFull, ShareFull, WorkPool } from "../../domain/basics/work_pool.ts";
import { clientAddress } from "../policy/client_address.ts";
import { newRouter } from "../openapi/router.ts";
import {
  bodyErrorResponses,
  jsonBody,
  jsonResponse,
  requestIdHeader,
  serverErrorResponses,
} from "../openapi/schemas.ts";

export const SIGN_IN_PATH = "/api/v1/sign_in";

/** Said when the hash pool is full: the attempt was not tried, and counts as nothing (docs/limits.md). */
const BUSY_DETAIL = "Too many sign-ins are being checked right now: try again after Retry-After";
/** The client's address holds its share of the hash pool: that address waits, the others still get in. */
const addressBusy = () =>
  new ApiError(429, {
    detail: "Too many sign-ins from this address are being checked right now: try again after Retry-After",
  }, { "retry-after": "1" });

/** A token from sign-in lives a day, as Facilitapay's clients expect (they cache it for 86,400 s). */
const SIGN_IN_TTL_SECONDS = 24 * 60 * 60;

// the bound on the password bounds the work a request can ask of scrypt
const SignInBody = z.object({
  user: z.object({
    username: z.string().min(1).max(100),
    password: z.string().min(1).max(1024),
  }),
}).openapi("SignInRequest");

const SignedIn = z.object({
  username: z.string(),
  name: z.string(),
  jwt: z.string().openapi({ description: "Bearer token for `Authorization: Bearer <jwt>`, valid 24 hours" }),
}).openapi("SignedIn");

const signIn = createRoute({
  operationId: "signIn",
  method: "post",
  path: SIGN_IN_PATH,
  tags: ["Authentication"],
  security: [], // this is how a bearer is obtained
  summary: "Sign in with a username and password; answers a bearer token valid 24 hours",
  description: "Wrong username or password, or a disabled user: 401 with the same body whichever was wrong. More " +
    "than `SIGN_IN_FAILURES_PER_USERNAME` (10) failures for one username from one client address, or " +
    "`SIGN_IN_FAILURES_PER_ADDRESS` (100) from one address, within `SIGN_IN_FAILURE_WINDOW_SECONDS` (15 minutes): " +
    "429 with `Retry-After` from that address until the window has passed, counted across every instance; the same " +
    "user at another address is not held back. Past `SIGN_IN_FAILURES_GLOBAL` (1,000) failures of all addresses " +
    "together, an address that has failed in the window waits too. Too many sign-ins being checked at once: 503 " +
    "with `Retry-After`; more than `SIGN_IN_HASH_PER_ADDRESS` (4) from one address: 429 with `Retry-After` for that " +
    "address alone. " +
    "The token names a session, ended by `POST /api/v1/sign_out`, a new password or a disabled user.",
  request: {
    body: jsonBody(SignInBody, { user: { username: "ana@acme.example", password: "s3cret-from-user-create" } }),
  },
  responses: {
    200: jsonResponse("Signed in: the token is at the top level", SignedIn),
    ...bodyErrorResponses,
    401: jsonResponse("Wrong username or password", z.object({ errors: z.object({ detail: z.string() }) })),
    429: jsonResponse(
      "Too many failures, or sign-ins being checked, from this address",
      z.object({ errors: z.unknown() }),
    ),
    ...serverErrorResponses,
  },
});

const signOut = createRoute({
  operationId: "signOut",
  method: "post",
  path: "/api/v1/sign_out",
  tags: ["Authentication"],
  summary: "End the session of the bearer token: it answers 401 from now on, on every instance",
  description: "Only a token from sign-in has a session; one made by `deno task token` answers 422 (revoke those " +
    "with `deno task token:revoke`, which ends every token of the company).",
  responses: {
    204: { description: "Signed out", headers: requestIdHeader },
    ...bodyErrorResponses,
  },
});

export function signInRoutes(deps: Deps, guard: TokenGuard) {
  const { limits } = deps.config;
  const throttle = {
    perUsername: limits.signInFailuresPerUsername,
    perAddress: limits.signInFailuresPerAddress,
    global: limits.signInFailuresGlobal,
    windowSeconds: limits.signInWindowSeconds,
  };
  // scrypt holds 32 MiB while it runs: a flood of sign-ins waits here or is turned away, never all hashed at once;
  // one address holds `SIGN_IN_HASH_PER_ADDRESS` places at most and waits its turn, so its flood leaves room for others
  const hashing = new WorkPool({
    concurrency: limits.signInHashConcurrency,
    queue: limits.signInHashQueue,
    perKey: limits.signInHashPerAddress,
  });
  return newRouter().openapi(signIn, async (c) => {
    const { username, password } = c.req.valid("json").user;
    const attempt = { username: usernameKey(username), address: clientAddress(c, deps.config.trustProxy) };
    // an address that holds its whole share is turned away before it costs the database a statement
    if (hashing.shareTaken(attempt.address)) throw addressBusy();
    const held = await reserveSignIn(deps.sql, throttle, attempt);
    if ("waitSeconds" in held) throw tooManyRequests(held.waitSeconds);
    let user;
    try {
      user = await authenticate(deps.sql, hashing.for(attempt.address), username, password);
    } catch (err) {
      if (!(err instanceof PoolFull)) throw err;
      await settleSignIn(deps.sql, attempt, held, "not_tried");
      if (err instanceof ShareFull) throw addressBusy();
      throw new ApiError(503, { detail: BUSY_DETAIL }, { "retry-after": "1" });
    }
    if (!user) {
      await countSignInFailure(deps.sql, throttle); // the reservation stays: a failure counted, and one of all
      throw unauthorized();
    }
    await settleSignIn(deps.sql, attempt, held, "succeeded");
    const ttl = Math.min(SIGN_IN_TTL_SECONDS, deps.config.jwtMaxTtlSeconds);
    const sessionId = await startSession(deps.sql, { companyId: user.companyId, userId: user.id, ttlSeconds: ttl });
    const jwt = await signToken(deps.config, user.companyId, ttl, sessionId);
    c.header("cache-control", "no-store");
    return c.json({ username: user.username, name: user.name, jwt }, 200);
  }).openapi(signOut, async (c) => {
    const sessionId = c.get("sessionId");
    if (!sessionId) throw unprocessable("this token was not issued by sign-in: revoke it with deno task token:revoke");
    await endSession(deps.sql, c.get("companyId"), sessionId);
    // this instance at once; the others when the sessions_revoked notification reaches them, milliseconds later
    guard.forget(c.get("companyId"));
    return c.body(null, 204);
  });
}
