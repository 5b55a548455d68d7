/**
 * The shapes of the pull stream routes (docs/webhooks.md, "Pull streams"): a stream's body and object, a page of
 * messages and its query, an acknowledgement, the stats. The settings a stream shares with an endpoint reuse the
 * endpoint's shapes (schemas.ts).
 */

import { z } from "@hono/zod-openapi";
import { enabledEvents, filter, payloadVersion } from "./schemas.ts";
import { MAX_PAGE } from "../../domain/webhooks/streams/messages.ts";
import { MAX_STREAM_BACKLOG } from "../../domain/webhooks/streams/streams.ts";
import { optionalText, requiredText } from "../openapi/schemas.ts";

/** The longest a long poll waits for a message, in seconds. */
export const MAX_WAIT_SECONDS = 30;

const ts = z.string().openapi({ example: "2026-12-07T19:00:00.123Z" });
const cursor = z.string().openapi({
  example: "MTIzNDU2OjAxOWE...Zjc.4b1c2d3e4f5a6b7c8d9e0f1a",
  description: "Opaque; signed for this stream (another stream's, or an edited one, is refused)",
});

const settings = {
  enabled_events: enabledEvents.nullish(),
  filter: filter.optional(),
  payload_version: payloadVersion.nullish(),
  description: optionalText(255),
};

export const StreamCreateBody = z.object(settings).openapi("WebhookStreamCreate");
export const StreamUpdateBody = z.object(settings).openapi("WebhookStreamUpdate");
export const STREAM_CREATE_EXAMPLE: z.input<typeof StreamCreateBody> = {
  enabled_events: ["identified", "wire_created"],
  description: "the ledger's consumer",
};

export const ListenBody = z.object({
  name: requiredText(100).openapi({ example: "ana-laptop", description: "The machine `deno task listen` runs on" }),
  enabled_events: enabledEvents.nullish(),
}).openapi("WebhookListenStreamBody");

export const Stream = z.object({
  id: z.string(),
  company_id: z.string(),
  kind: z.enum(["api", "listen"]).openapi({ description: "`listen`: made by `deno task listen` for one machine" }),
  name: z.string().nullable().openapi({ description: "The machine of a `listen` stream; null otherwise" }),
  description: z.string().nullable(),
  enabled_events: z.array(z.string()),
  filter: z.string().nullable(),
  payload_version: payloadVersion,
  secret: z.string().openapi({ description: "64 lowercase hex characters: signs the messages, as an endpoint's" }),
  cursor: cursor.openapi({ description: "The committed position: where a read without `after` starts" }),
  dropped: z.number().int().openapi({
    description: `Messages that went unread: past the backlog cap (${MAX_STREAM_BACKLOG}) or the retention`,
  }),
  last_read_at: ts.nullable(),
  inserted_at: ts,
  updated_at: ts,
}).openapi("WebhookStream");

export const StreamMessage = z.object({
  id: z.string().openapi({ description: "The message's id, which `webhook-id` carries: the same at every read" }),
  cursor,
  event_id: z.string(),
  type: z.string(),
  occurred_at: ts,
  body: z.string().openapi({
    description: "The exact body an endpoint with the stream's settings would receive: verify the headers over it",
  }),
  headers: z.record(z.string(), z.string()).openapi({
    description: "`service-signature`, `webhook-id`, `webhook-timestamp`, `webhook-signature`, signed at this read",
  }),
}).openapi("WebhookStreamMessage");

export const MessagesQuery = z.object({
  after: z.string().max(200).optional().openapi({
    description: "A cursor; absent: the committed position (`POST .../ack`)",
  }),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).optional().openapi({ example: 100 }),
  wait: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).optional().openapi({
    example: 20,
    description: "Seconds to hold the request open until a message arrives (long polling); 0 by default",
  }),
});

export const MessagesPage = z.object({
  data: z.array(StreamMessage),
  next_cursor: cursor.openapi({ description: "After the last message (or the last event looked at): read on from it" }),
  has_more: z.boolean(),
}).openapi("WebhookStreamPage");

export const AckBody = z.object({ cursor: requiredText(200) }).openapi("WebhookStreamAck");

export const StreamStats = z.object({
  backlog: z.number().int().openapi({
    description: "Messages after the committed position, of the stream's types (its filter aside)",
  }),
  backlog_capped: z.boolean().openapi({ description: `True when it reached the cap (${MAX_STREAM_BACKLOG})` }),
  dropped: z.number().int(),
  last_read_at: ts.nullable(),
}).openapi("WebhookStreamStats");
