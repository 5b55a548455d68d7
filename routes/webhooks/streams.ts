/**
 * The pull stream routes (docs/webhooks.md, "Pull streams"): make, list, show, update and delete a stream, read its
 * messages (at once, by long polling, or live as Server-Sent Events), acknowledge them, its stats, and the stream of
 * `deno task listen`. Waiting reads leave the instance's in-flight bound for caps of their own, per company and per
 * instance, and answer at once when the instance stops.
 */

import { pause } from "../../domain/basics/abort.ts";
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Deps } from "../../domain/infra/deps.ts";
import { secretBoxFor } from "../../domain/infra/secret_box.ts";
import { serviceUnavailable, tooManyRequests, validationFailed } from "../../domain/basics/errors.ts";
import {
  acknowledge,
  createStream,
  deleteStream,
  getStream,
  listenStream,
  listStreams,
  presentStream,
  type StreamRow,
  streamSecret,
  updateStream,
} from "../../domain/webhooks/streams/streams.ts";
import { backlogOf, MAX_PAGE, readPage } from "../../domain/webhooks/streams/messages.ts";
import { decodeCursor, type Position } from "../../domain/webhooks/streams/cursors.ts";
import { newRouter } from "../openapi/router.ts";
import type { AppEnv } from "../openapi/validation.ts";
import {
  bodyErrorResponses,
  errorResponses,
  IdParam,
  jsonBody,
  jsonResponse,
  requestIdHeader,
} from "../openapi/schemas.ts";
import {
  AckBody,
  ListenBody,
  MessagesPage,
  MessagesQuery,
  Stream,
  STREAM_CREATE_EXAMPLE,
  StreamCreateBody,
  StreamStats,
  StreamUpdateBody,
} from "./stream_schemas.ts";

const tags = ["Pull streams"];
const base = "/api/v2/notifications/streams";
const StreamEnvelope = z.object({ data: Stream });

/** Long polls and live streams open at once, per company and per instance (docs/limits.md). */
export const STREAM_WAITS_PER_COMPANY = 10;
export const STREAM_WAITS_PER_INSTANCE = 200;
/** How often a waiting read looks again. */
const POLL_MS = 250;
/** A live stream's comment line, so proxies keep an idle connection open. */
const HEARTBEAT_MS = 15_000;

const create = createRoute({
  operationId: "createWebhookStream",
  method: "post",
  path: base,
  tags,
  summary: "Make a pull stream: a subscriber with no URL, whose consumer reads its messages",
  request: { body: jsonBody(StreamCreateBody, STREAM_CREATE_EXAMPLE) },
  responses: { 201: jsonResponse("Stream made", StreamEnvelope), ...bodyErrorResponses },
});
const listen = createRoute({
  operationId: "listenWebhookStream",
  method: "post",
  path: `${base}/listen`,
  tags,
  summary: "The stream of `deno task listen` on one machine, made if it has none",
  request: { body: jsonBody(ListenBody, { name: "ana-laptop" }) },
  responses: {
    200: jsonResponse("The machine's stream", StreamEnvelope),
    201: jsonResponse("Stream made", StreamEnvelope),
    ...bodyErrorResponses,
  },
});
const list = createRoute({
  operationId: "listWebhookStreams",
  method: "get",
  path: base,
  tags,
  summary: "Every pull stream of the account, oldest first",
  responses: { 200: jsonResponse("Streams", z.object({ data: z.array(Stream) })), ...errorResponses },
});
const show = createRoute({
  operationId: "getWebhookStream",
  method: "get",
  path: `${base}/{id}`,
  tags,
  summary: "Show a stream, secret and committed cursor included",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The stream", StreamEnvelope), ...errorResponses },
});
const update = createRoute({
  operationId: "updateWebhookStream",
  method: "put",
  path: `${base}/{id}`,
  tags,
  summary: "Change what a stream subscribes to; omitted fields are left unchanged",
  request: { params: IdParam, body: jsonBody(StreamUpdateBody, { filter: null }) },
  responses: { 200: jsonResponse("Stream updated", StreamEnvelope), ...bodyErrorResponses },
});
const remove = createRoute({
  operationId: "deleteWebhookStream",
  method: "delete",
  path: `${base}/{id}`,
  tags,
  summary: "Delete a stream (its messages are events, which stay)",
  request: { params: IdParam },
  responses: { 204: { description: "Deleted", headers: requestIdHeader }, ...errorResponses },
});
const messages = createRoute({
  operationId: "readWebhookStreamMessages",
  method: "get",
  path: `${base}/{id}/messages`,
  tags,
  summary: "The messages after a cursor (the committed one by default), in order; `wait` long-polls",
  request: { params: IdParam, query: MessagesQuery },
  responses: {
    200: jsonResponse("A page of messages", MessagesPage),
    410: {
      description: "The cursor is before the oldest message kept: `errors.oldest_cursor` is where to read on",
      headers: requestIdHeader,
    },
    ...errorResponses,
  },
});
const live = createRoute({
  operationId: "followWebhookStream",
  method: "get",
  path: `${base}/{id}/live`,
  tags,
  summary: "The messages as Server-Sent Events (`id:` the cursor; `Last-Event-ID` resumes)",
  request: { params: IdParam },
  responses: {
    200: {
      description: "`text/event-stream`: an `event: message` per message (its JSON as `data`), a comment line every " +
        "15 s, and `event: closed` with the last cursor when the service stops",
      content: { "text/event-stream": { schema: z.string() } },
      headers: requestIdHeader,
    },
    ...errorResponses,
  },
});
const ack = createRoute({
  operationId: "acknowledgeWebhookStream",
  method: "post",
  path: `${base}/{id}/ack`,
  tags,
  summary: "Move the committed position forward to a cursor (never back)",
  request: {
    params: IdParam,
    body: jsonBody(AckBody, {
      cursor: "MTIzNDU2OjAxOWE3ZjQ0LTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwMQ.4b1c2d3e4f5a6b7c8d9e0f1a",
    }),
  },
  responses: { 200: jsonResponse("The stream", StreamEnvelope), ...bodyErrorResponses },
});
const stats = createRoute({
  operationId: "getWebhookStreamStats",
  method: "get",
  path: `${base}/{id}/stats`,
  tags,
  summary: "The stream's backlog (unacknowledged messages) and what went unread",
  request: { params: IdParam },
  responses: { 200: jsonResponse("The stream's stats", z.object({ data: StreamStats })), ...errorResponses },
});

/** The waiting reads of this instance: at most so many per company and in all; a release gives the place back. */
function waitingReads() {
  const running = new Map<string, number>();
  let total = 0;
  return (companyId: string): () => void => {
    const mine = running.get(companyId) ?? 0;
    if (mine >= STREAM_WAITS_PER_COMPANY) throw tooManyRequests(1);
    if (total >= STREAM_WAITS_PER_INSTANCE) throw serviceUnavailable(1);
    running.set(companyId, mine + 1);
    total++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      total--;
      const left = (running.get(companyId) ?? 1) - 1;
      if (left) running.set(companyId, left);
      else running.delete(companyId);
    };
  };
}

export function webhookStreamRoutes({ sql, config, stopping }: Deps) {
  const box = () => secretBoxFor(config);
  const quota = { endpoints: config.limits.endpointsPerCompany, concurrency: config.limits.concurrencyPerCompany };
  const wait = waitingReads();
  const router = newRouter();

  /** The position a cursor names, for this stream; 400 naming the field when it is none of its. */
  const positionOf = async (stream: StreamRow, cursor: string | undefined, field: string): Promise<Position | null> => {
    if (cursor === undefined) return null;
    const position = decodeCursor(stream.id, await streamSecret(await box(), stream), cursor);
    if (!position) throw validationFailed({ [field]: ["is not a cursor of this stream"] }, 400);
    return position;
  };

  return router
    .openapi(create, async (c) => {
      const b = await box();
      const stream = await createStream(sql, b, c.get("companyId"), c.req.valid("json"), { quota });
      return c.json({ data: await presentStream(b, stream) }, 201);
    })
    .openapi(listen, async (c) => {
      const b = await box();
      const { stream, created } = await listenStream(sql, b, c.get("companyId"), c.req.valid("json"), { quota });
      return c.json({ data: await presentStream(b, stream) }, created ? 201 : 200);
    })
    .openapi(list, async (c) => {
      const b = await box();
      const rows = await listStreams(sql, c.get("companyId"));
      return c.json({ data: await Promise.all(rows.map((s) => presentStream(b, s))) }, 200);
    })
    .openapi(show, async (c) => {
      const stream = await getStream(sql, c.get("companyId"), c.req.valid("param").id);
      return c.json({ data: await presentStream(await box(), stream) }, 200);
    })
    .openapi(update, async (c) => {
      const stream = await updateStream(sql, c.get("companyId"), c.req.valid("param").id, c.req.valid("json"));
      return c.json({ data: await presentStream(await box(), stream) }, 200);
    })
    .openapi(remove, async (c) => {
      await deleteStream(sql, c.get("companyId"), c.req.valid("param").id);
      return c.body(null, 204);
    })
    .openapi(ack, async (c) => {
      const b = await box();
      const stream = await acknowledge(sql, b, c.get("companyId"), c.req.valid("param").id, c.req.valid("json").cursor);
      return c.json({ data: await presentStream(b, stream) }, 200);
    })
    .openapi(stats, async (c) => {
      const stream = await getStream(sql, c.get("companyId"), c.req.valid("param").id);
      const { backlog, capped } = await backlogOf(sql, stream);
      return c.json({
        data: {
          backlog,
          backlog_capped: capped,
          dropped: Number(stream.dropped),
          last_read_at: stream.last_read_at?.toISOString() ?? null,
        },
      }, 200);
    })
    .openapi(messages, async (c) => {
      const query = c.req.valid("query");
      const stream = await getStream(sql, c.get("companyId"), c.req.valid("param").id);
      const limit = query.limit ?? MAX_PAGE;
      const b = await box();
      let { page, next } = await readPage(sql, b, stream, await positionOf(stream, query.after, "after"), limit);
      if (page.data.length || !query.wait || stopping?.aborted) return c.json(page, 200);
      // a long poll: out of the in-flight bound, under the waits' caps, answered at once when the instance stops
      const release = wait(c.get("companyId"));
      c.get("leaveInFlight")?.();
      try {
        const deadline = Date.now() + query.wait * 1000;
        while (!page.data.length && Date.now() < deadline && !stopping?.aborted) {
          await pause(Math.min(POLL_MS, deadline - Date.now()), stopping);
          if (stopping?.aborted) break;
          ({ page, next } = await readPage(sql, b, stream, next, limit));
        }
        return c.json(page, 200);
      } finally {
        release();
      }
    })
    .openapi(live, async (c) => {
      const stream = await getStream(sql, c.get("companyId"), c.req.valid("param").id);
      const resumed = c.req.header("last-event-id");
      const b = await box();
      // the first page now: a cursor that is gone answers 410 before the stream opens
      let { page, next } = await readPage(
        sql,
        b,
        stream,
        await positionOf(stream, resumed || undefined, "Last-Event-ID"),
        MAX_PAGE,
      );
      const release = wait(c.get("companyId"));
      c.get("leaveInFlight")?.();
      return liveAnswer(c, async (send, closed) => {
        let beat = Date.now();
        try {
          while (!closed() && !stopping?.aborted) {
            for (const message of page.data) {
              send(`id: ${message.cursor}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`);
            }
            if (!page.data.length) {
              if (Date.now() - beat >= HEARTBEAT_MS) {
                send(": ping\n\n");
                beat = Date.now();
              }
              await pause(POLL_MS, stopping);
            } else beat = Date.now();
            if (closed() || stopping?.aborted) break;
            ({ page, next } = await readPage(sql, b, stream, next, MAX_PAGE));
          }
          // the instance stops: the consumer reconnects to another with the last id it got
          if (!closed()) {
            send(`event: closed\nid: ${page.next_cursor}\ndata: {"cursor":"${page.next_cursor}"}\n\n`);
          }
        } finally {
          release();
        }
      });
    });
}

/**
 * A `text/event-stream` answer fed by `run`, which gets a writer and whether the client went away; the answer ends
 * when `run` does.
 */
function liveAnswer(
  c: Context<AppEnv>,
  run: (send: (text: string) => void, closed: () => boolean) => Promise<void>,
) {
  let gone = false;
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => {
        if (!gone) controller.enqueue(encoder.encode(text));
      };
      try {
        await run(send, () => gone);
      } finally {
        if (!gone) controller.close();
      }
    },
    cancel() {
      gone = true;
    },
  });
  return c.body(body, 200, {
    "content-type": "text/event-stream",
    "cache-control": "no-store",
    "x-accel-buffering": "no",
  });
}
