/**
 * Middleware that reads each request body whole, within the bounds of its route and a time limit, before any route sees
 * it; with the one table of the routes whose bodies carry files, which decides a route's byte bound.
 */

import type { Context, MiddlewareHandler } from "hono";
import { badRequest, payloadTooLarge, requestTimeout } from "../../domain/basics/errors.ts";
import { JsonBounds, type JsonExcess, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "./json_bounds.ts";

/** The body of a route that carries files: 22 MB, a 15 MB document in Base64 (20 MB) and room around it. */
export const MAX_BODY_BYTES = 22 * 1024 * 1024;

/**
 * The body of every other route. The largest such body the API accepts, an endpoint with a client certificate chain
 * (16 KiB), its key (8 KiB), 8 KiB of custom headers, OAuth2 credentials, a filter and a rename for every event type,
 * is about 55 KiB of JSON (docs/limits.md, "Request bodies").
 */
export const MAX_FILELESS_BODY_BYTES = 256 * 1024;

/**
 * The routes whose bodies carry files (a document's Base64 `file_data`), as Hono's router names them: a person's
 * registration, with up to 20 `documents`, and a document upload; and the subjects' other writes (a person's update, a
 * company's registration and update), which the bodies limit of earlier releases gave 22 MB as well: a client that
 * sends a subject with its documents there (ignored keys, as every unknown key) keeps working. Only these take
 * MAX_BODY_BYTES. tests/http/body_bounds_test.ts holds this list to the OpenAPI document: every route whose body can
 * hold a `file_data` is in it, but a portal link, whose logo (64 KiB at most) fits the 256 KiB of the others.
 */
export const FILE_ROUTES: ReadonlySet<string> = new Set([
  "POST /api/v1/subject/people",
  "POST /api/v1/subject/:id/documents",
  "PUT /api/v1/subject/people/:id",
  "POST /api/v1/subject/companies",
  "PUT /api/v1/subject/companies/:id",
]);

/** A route a request matched, as Hono's router names it (`:id`, not the OpenAPI document's `{id}`). */
export type MatchedRoute = { method: string; path: string };

/**
 * The bytes of a chunk scanned in one go before other requests get a turn: 2 to 4 ms at the scan's slowest, 2 to 4 µs
 * per KiB of numbers, keys or blanks (docs/limits.md, "Request bodies"). A chunk from the network is smaller; a body
 * handed over whole (`app.request`) is not.
 */
const SCAN_SLICE_BYTES = 1024 * 1024;

/** Hono's validator parses a body of these media types as JSON: `application/json` and `application/*+json`. */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

const TOO_MANY_BYTES = {
  files: `a body of this route is at most ${MAX_BODY_BYTES / 1024 / 1024} MB`,
  fileless: `a body of this route is at most ${MAX_FILELESS_BODY_BYTES / 1024} KiB ` +
    "(only the people and company routes and a document upload, which carry files, take more)",
};

const JSON_EXCESS: Record<JsonExcess, string> = {
  values: `a JSON body holds at most ${MAX_JSON_VALUES.toLocaleString("en-US")} values ` +
    "(the body, each member of an object, each element of an array)",
  depth: `a JSON body nests objects and arrays at most ${MAX_JSON_DEPTH} deep`,
};

/**
 * Reads the whole request body before any route sees it: at most MAX_BODY_BYTES for a route of FILE_ROUTES and
 * MAX_FILELESS_BODY_BYTES for any other (413 past that, before a byte is read when `Content-Length` already says so),
 * and within `timeoutMs` of the end of the headers (408 otherwise), so a client that sends its body slowly, or stops
 * half-way, holds a request for a bounded time. A JSON body's values and depth are counted as its chunks arrive
 * (`JsonBounds`) and the read stops with a 413 at the first past MAX_JSON_VALUES or MAX_JSON_DEPTH: a body of a million
 * keys is refused before JSON.parse builds them (docs/limits.md, "Request bodies"). Mounted after authentication: an
 * unauthenticated request is answered before its body is read at all. `route` names the route that will take the
 * request; a body no route wants (a POST to a GET-only path) is never read.
 */
export function readBody(
  opts: { timeoutMs: number; route: (c: Context) => MatchedRoute | undefined },
): MiddlewareHandler {
  return async (c, next) => {
    const body = c.req.raw.body;
    const route = body && opts.route(c);
    if (!body || !route) return next();
    const files = FILE_ROUTES.has(`${route.method} ${route.path}`);
    const bytes = {
      max: files ? MAX_BODY_BYTES : MAX_FILELESS_BODY_BYTES,
      tooMany: files ? TOO_MANY_BYTES.files : TOO_MANY_BYTES.fileless,
    };
    const declared = c.req.raw.headers.get("content-length");
    if (declared !== null && !c.req.raw.headers.has("transfer-encoding") && Number(declared) > bytes.max) {
      throw payloadTooLarge(bytes.tooMany);
    }
    const mediaType = (c.req.header("content-type") ?? "").split(";")[0].trim();
    const json = JSON_MEDIA_TYPE.test(mediaType) ? new JsonBounds() : null;
    keepBody(c, await readAll(body, bytes, json, opts.timeoutMs));
    await next();
  };
}

const decoder = new TextDecoder();

/**
 * Puts the bytes read where Hono's body readers (`c.req.json()`, `text()`, `arrayBuffer()`, `parseBody()`) look first:
 * no second Request is built around them, and a JSON body is decoded once. Hono 4.13 keeps a promise per form in
 * `bodyCache` and derives the other forms from the first one cached. Read the body through `c.req` from here on:
 * `c.req.raw`'s own stream is spent (docs/performance.md, "What changed").
 */
function keepBody(c: Context, bytes: Uint8Array<ArrayBuffer>) {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  const cache = c.req.bodyCache as Record<string, Promise<unknown>>;
  cache.arrayBuffer = Promise.resolve(whole.buffer);
  if (/^application\/json/i.test(c.req.header("content-type") ?? "")) {
    cache.text = Promise.resolve(decoder.decode(whole));
  }
}

async function readAll(
  body: ReadableStream<Uint8Array>,
  bytes: { max: number; tooMany: string },
  json: JsonBounds | null,
  timeoutMs: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => timer = setTimeout(() => reject(requestTimeout()), timeoutMs));
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([
        reader.read().catch(() => Promise.reject(badRequest("the request body could not be read"))),
        deadline,
      ]);
      if (done) break;
      size += value.length;
      if (size > bytes.max) throw payloadTooLarge(bytes.tooMany);
      if (json && value.length <= SCAN_SLICE_BYTES) checkJson(json, value);
      else if (json) await scanInSlices(json, value);
      chunks.push(value as Uint8Array<ArrayBuffer>);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0];
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.length;
  }
  return whole;
}

/** Feeds bytes to the JSON bounds; 413 naming the bound at the first excess. */
function checkJson(json: JsonBounds, bytes: Uint8Array) {
  const excess = json.feed(bytes);
  if (excess) throw payloadTooLarge(JSON_EXCESS[excess]);
}

/** A chunk larger than a slice, a slice at a time, with a turn for other work between slices. */
async function scanInSlices(json: JsonBounds, chunk: Uint8Array) {
  for (let at = 0; at < chunk.length; at += SCAN_SLICE_BYTES) {
    if (at > 0) await new Promise((resolve) => setTimeout(resolve, 0));
    checkJson(json, chunk.subarray(at, at + SCAN_SLICE_BYTES));
  }
}
