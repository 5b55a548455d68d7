import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { authenticate } from "../../domain/companies/users.ts";
import type { Deps } from "../../domain/platform/deps.ts";
import { tooManyRequests, unauthorized } from "../../domain/platform/errors.ts";
import { SignInThrottle } from "../../domain/platform/rate_limit.ts";
import { signToken } from "../../domain/platform/tokens.ts";
import { newRouter } from "../platform/router.ts";
import { bodyErrorResponses, jsonBody, jsonResponse, serverErrorResponses } from "../platform/schemas.ts";

export const SIGN_IN_PATH = "/api/v1/sign_in";

/** A token from sign-in lives a day, as Facilitapay's clients expect (they cache it for 86,400 s). */
const SIGN_IN_TTL_SECONDS = 24 * 60 * 60;

/** platform.md §1: more than 10 failures for one username in 15 minutes wait; per address a wider net. */
const THROTTLE = { perUsername: 10, perAddress: 100, windowSeconds: 15 * 60 };

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
  description: "Wrong username or password: 401 with the same body whichever was wrong. More than 10 failures for " +
    "one username within 15 minutes: 429 with `Retry-After` until the window has passed (counted per instance).",
  request: {
    body: jsonBody(SignInBody, { user: { username: "ana@acme.example", password: "s3cret-from-user-create" } }),
  },
  responses: {
    200: jsonResponse("Signed in: the token is at the top level", SignedIn),
    ...bodyErrorResponses,
    401: jsonResponse("Wrong username or password", z.object({ errors: z.object({ detail: z.string() }) })),
    429: jsonResponse("Too many failures for this username or address", z.object({ errors: z.unknown() })),
    ...serverErrorResponses,
  },
});

/** The client's address as the server saw it (a proxy's when behind one); "local" when called without a server. */
function clientAddress(c: Context): string {
  const info = c.env as Deno.ServeHandlerInfo<Deno.NetAddr> | undefined;
  return info?.remoteAddr?.hostname ?? "local";
}

export function signInRoutes(deps: Deps) {
  const throttle = new SignInThrottle(THROTTLE);
  return newRouter().openapi(signIn, async (c) => {
    const { username, password } = c.req.valid("json").user;
    const attempt = { username, address: clientAddress(c) };
    const wait = throttle.retryAfter(attempt);
    if (wait) throw tooManyRequests(wait);
    const user = await authenticate(deps.sql, username, password);
    if (!user) {
      throttle.recordFailure(attempt);
      throw unauthorized();
    }
    throttle.recordSuccess(attempt);
    const ttl = Math.min(SIGN_IN_TTL_SECONDS, deps.config.jwtMaxTtlSeconds);
    const jwt = await signToken(deps.config, user.companyId, ttl);
    c.header("cache-control", "no-store");
    return c.json({ username: user.username, name: user.name, jwt }, 200);
  });
}
