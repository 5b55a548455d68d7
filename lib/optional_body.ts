import type { MiddlewareHandler } from "hono";

/**
 * For routes whose body fields are all optional: a JSON request with an empty body (`curl -X POST -H
 * "content-type: application/json"`) reads as `{}` instead of failing as malformed JSON. Hono keeps parsed bodies
 * in `bodyCache`, which its validators read first.
 */
export const emptyBodyAsObject: MiddlewareHandler = async (c, next) => {
  if (/^application\/json/i.test(c.req.header("content-type") ?? "") && (await c.req.text()).trim() === "") {
    c.req.bodyCache.json = Promise.resolve({});
  }
  await next();
};
