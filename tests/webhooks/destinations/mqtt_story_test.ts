/**
 * An MQTT destination told as an integrator sees it (docs/webhooks.md, "Destinations"): the shared broker story
 * (tests/support/destination_story.ts) against the real Mosquitto on loopback, read by a QoS 1 subscriber.
 */
import mqtt from "mqtt";
import { setup } from "../../support/helpers.ts";
import { type BrokerMessage, tellDestinationStory } from "../../support/destination_story.ts";

const MQTT_PORT = 1883;

/** A QoS 1 subscriber of `topic`, subscribed before the endpoint exists: each message's payload and user properties. */
async function subscribe(topic: string) {
  const client = await mqtt.connectAsync({
    host: "127.0.0.1",
    port: MQTT_PORT,
    protocolVersion: 5,
    clientId: `story-sub-${crypto.randomUUID().slice(0, 8)}`,
    reconnectPeriod: 0,
  });
  const messages: BrokerMessage[] = [];
  client.on("message", (_topic, payload, packet) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(packet.properties?.userProperties ?? {})) {
      headers[k] = Array.isArray(v) ? v.join(", ") : v;
    }
    messages.push({ body: payload.toString(), headers });
  });
  await client.subscribeAsync(topic, { qos: 1 });
  return { messages, close: () => client.endAsync() };
}

Deno.test("MQTT destination: signed, in order, through an outage, recovered", async (t) => {
  const ctx = await setup("mqtt_destination", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.3" } });
  try {
    await tellDestinationStory(t, ctx, {
      brokerPort: MQTT_PORT,
      url: (port) => `mqtt://127.0.0.1:${port}`,
      prepare: async (name) => ({
        destination: { topic: `hooks-test/${name}/{type}` },
        consumer: await subscribe(`hooks-test/${name}/#`),
      }),
    });
  } finally {
    await ctx.close();
  }
});
