/**
 * A RabbitMQ destination told as an integrator sees it (docs/webhooks.md, "Destinations"): the shared broker story
 * (tests/support/destination_story.ts) against the real RabbitMQ on loopback, read from a queue bound to the story's
 * exchange; then what only AMQP has: a routing key no queue is bound to fails its attempts with the reason, and a
 * binding added later lets them through.
 */
import assert from "node:assert/strict";
import amqp from "amqplib";
import { eventually, setup } from "../../support/helpers.ts";
import { type BrokerMessage, tellDestinationStory, wire } from "../../support/destination_story.ts";
import { recordsOf } from "../../support/endpoints.ts";
import { emitEvent } from "../../../domain/webhooks/outbox/events.ts";

const AMQP_PORT = 5672;
const GUEST = { username: "guest", password: "guest" };

Deno.test("RabbitMQ destination: signed, in order, through an outage, recovered, unroutable", async (t) => {
  const ctx = await setup("amqp_destination", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.3" } });
  const admin = await amqp.connect(`amqp://guest:guest@127.0.0.1:${AMQP_PORT}/%2F`);
  const channel = await admin.createChannel();

  /** An exchange of its own and a queue bound to `binding` (none: no queue), read as a consumer would. */
  const exchangeAndQueue = async (name: string, binding: string | null) => {
    const exchange = `hooks-test.${name}`;
    await channel.assertExchange(exchange, "topic", { durable: false });
    const { queue } = await channel.assertQueue("", { exclusive: true });
    if (binding) await channel.bindQueue(queue, exchange, binding);
    const messages: BrokerMessage[] = [];
    await channel.consume(queue, (m) => {
      if (!m) return;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.properties.headers ?? {})) headers[k.toLowerCase()] = String(v);
      messages.push({ body: m.content.toString(), headers });
      channel.ack(m);
    });
    return {
      exchange,
      queue,
      consumer: {
        messages,
        close: async () => {
          await channel.deleteQueue(queue).catch(() => {});
          await channel.deleteExchange(exchange).catch(() => {});
        },
      },
    };
  };

  const story = {
    brokerPort: AMQP_PORT,
    url: (port: number) => `amqp://127.0.0.1:${port}/%2F`,
    credentials: GUEST,
    prepare: async (name: string) => {
      const { exchange, consumer } = await exchangeAndQueue(name, "pay.#");
      return { destination: { exchange, routing_key: "pay.{type}" }, consumer };
    },
  };
  try {
    await tellDestinationStory(t, ctx, story);

    await t.step("a key no queue is bound to fails with its reason, and goes through once one is", async () => {
      let place: Awaited<ReturnType<typeof exchangeAndQueue>> | null = null;
      const w = await wire(ctx, {
        ...story,
        prepare: async (name) => {
          place = await exchangeAndQueue(name, null);
          return { destination: { exchange: place.exchange, routing_key: "pay.{type}" }, consumer: place.consumer };
        },
      }, { delivery_mode: "sequential" });
      try {
        await ctx.sql.begin((tx) => emitEvent(tx, w.company.id, "identified", { transaction_id: crypto.randomUUID() }));
        await eventually("a failed attempt", async () => !!(await recordsOf(w.company, w.endpoint.id))[0]?.last_error);
        const [record] = await recordsOf(w.company, w.endpoint.id);
        assert.equal(record.status, "pending");
        assert.match(
          record.last_error ?? "",
          new RegExp(
            `^unroutable: exchange ${
              place!.exchange.replaceAll(".", "\\.")
            } has no queue bound for routing key pay\\.identified`,
          ),
        );
        await channel.bindQueue(place!.queue, place!.exchange, "pay.#");
        await eventually("the message, once a queue is bound", () => w.consumer.messages.length === 1, 10_000);
        await eventually(
          "the record succeeded",
          async () => (await recordsOf(w.company, w.endpoint.id))[0].status === "succeeded",
        );
      } finally {
        await w.close();
      }
    });
  } finally {
    await admin.close();
    await ctx.close();
  }
});
