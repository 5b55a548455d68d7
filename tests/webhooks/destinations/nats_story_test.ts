/**
 * A NATS JetStream destination told as an integrator sees it (docs/webhooks.md, "Destinations"): the shared broker story
 * (tests/support/destination_story.ts) against the real NATS server on loopback, with a stream of the story's own
 * taking the endpoint's subjects (the service creates none), read by a subscriber of those subjects.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { setup } from "../../support/helpers.ts";
import { type BrokerMessage, tellDestinationStory } from "../../support/destination_story.ts";

const NATS_PORT = 4222;

/** A stream taking `<prefix>.>` and a subscriber of the same subjects; closing deletes the stream. */
async function streamAndSubscriber(nc: NatsConnection, prefix: string) {
  const jsm = await jetstreamManager(nc);
  const name = prefix.toUpperCase().replaceAll("-", "_");
  await jsm.streams.add({ name, subjects: [`${prefix}.>`] });
  const messages: BrokerMessage[] = [];
  const subscription = nc.subscribe(`${prefix}.>`, {
    callback: (_err, m) => {
      const headers: Record<string, string> = {};
      for (const key of m.headers?.keys() ?? []) headers[key.toLowerCase()] = m.headers?.get(key) ?? "";
      messages.push({ body: m.string(), headers });
    },
  });
  await nc.flush();
  return {
    messages,
    close: async () => {
      subscription.unsubscribe();
      await jsm.streams.delete(name).catch(() => false);
    },
  };
}

Deno.test("NATS JetStream destination: signed, in order, through an outage, recovered", async (t) => {
  const ctx = await setup("nats_destination", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.3" } });
  const nc = await connect({ servers: `127.0.0.1:${NATS_PORT}` });
  try {
    await tellDestinationStory(t, ctx, {
      brokerPort: NATS_PORT,
      url: (port) => `nats://127.0.0.1:${port}`,
      prepare: async (name) => {
        const prefix = name.replaceAll("-", "_");
        return { destination: { subject: `${prefix}.{type}` }, consumer: await streamAndSubscriber(nc, prefix) };
      },
    });
  } finally {
    await nc.close();
    await ctx.close();
  }
});
