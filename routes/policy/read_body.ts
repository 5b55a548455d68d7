/** Middleware that reads each request body whole, within a size and a time limit, before any route sees it. */

import type { Context, MiddlewareHandler } from "hono";
import { badRequest, payloadTooLarge, requestTimeout } from "../../domain/basics/errors.ts";

/**
 * Reads the whole request body before any route sees it: at most `maxBytes` (413 past that, before a byte is read
 * when `Content-Length` already says so) and within `timeoutMs` of the end of the headers (408 otherwise), so a
 * client that sends its body slowly, or stops half-way, holds a request for a bounded time. Mounted after
 * authentication: an unauthenticated request is answered before its body is read at all. `when` tells whether a route
 * will take the request; a body no route wants (a POST to a GET-only path) is never read.
 */
export function readBody(
  opts: { maxBytes: number; timeoutMs: number; when: (c: Context) => boolean },
): MiddlewareHandler {
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body || !opts.when(c)) return next();
    const declared = c.req.raw.headers.get("content-length");
    if (declared !== null && !c.req.raw.headers.has("transfer-encoding") && Number(declared) > opts.maxBytes) {
      throw payloadTooLarge();
    }
    const bytes = await readAll(body, opts.maxBytes, opts.timeoutMs);
    keepBody(c, bytes);
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
  maxBytes: number,
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
      if (size > maxBytes) throw payloadTooLarge();
      chunks.push(value as Uint8Array<ArrayBuffer>);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
