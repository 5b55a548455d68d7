/** A route middleware that lets a JSON POST without a body read as `{}`. */

import type { MiddlewareHandler } from "hono";

/**
 * For routes a client may call without a body: a JSON request with an empty body (`curl -X POST -H
 * "content-type: application/json"`) reads as `{}` instead of failing as malformed JSON, so a route whose fields are
 * all optional takes its defaults and one with a required field names it (`recover`: `since`). Hono's `req.json()`
 * parses the cached text, so the cache is given the text of an empty object.
 */
export const emptyBodyAsObject: MiddlewareHandler = async (c, next) => {
  if (/^application\/json/i.test(c.req.header("content-type") ?? "") && (await c.req.text()).trim() === "") {
    // the cache holds promises at run time, whatever its declared type says
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve("{}");
  }
  await next();
};
