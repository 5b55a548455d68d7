/**
 * The destinations phase's consumer (tests/bench/destinations.ts), in a process of its own as the HTTP receiver is
 * (receiver.ts): an integrator's consumer is not in the service's process, so the service's CPU is measured without
 * it. Run as `broker_consumer.ts <transport> <name>`: it makes a place of its own on the local broker named after
 * `name` (a Redis stream; a RabbitMQ exchange with a queue bound to it; a JetStream stream on a subject; an MQTT 5
 * subscription), prints one JSON line with the endpoint settings that publish there (`url`, `destination`,
 * `broker_credentials`), then reads every message and prints `{"received", "distinct", "out_of_order"}` each time the
 * count moved (at most every 50 ms). Order and duplicates are told by each message's `webhook-id` header: record ids
 * are UUIDv7 in emission order. On SIGTERM it removes its place and exits.
 */
import type { BrokerTransportName } from "../../domain/webhooks/destinations/transport.ts";

/** What a consumer's place is: the endpoint settings that publish to it, and its removal. */
type Place = { endpoint: Record<string, unknown>; close(): Promise<void> };

const seen = new Set<string>();
let received = 0;
let outOfOrder = 0;
let last = "";

/** One message read: counted, and checked against the highest record id seen so far. */
function arrived(id: string | undefined) {
  received++;
  if (!id) return;
  if (id < last) outOfOrder++;
  else last = id;
  seen.add(id);
}

/** A Redis stream read with XREAD from its start, 1,000 entries a call. */
async function redis(name: string): Promise<Place> {
  const { Redis } = await import("ioredis");
  const stream = `hooks-bench:${name}`;
  const reader = new Redis({ host: "127.0.0.1", port: 6379, maxRetriesPerRequest: 1 });
  let running = true;
  const loop = (async () => {
    let from = "0";
    while (running) {
      const answer = await reader.xread("COUNT", 1000, "BLOCK", 100, "STREAMS", stream, from).catch(() => null);
      for (const [, entries] of answer ?? []) {
        for (const [id, fields] of entries) {
          from = id;
          const at = fields.indexOf("webhook-id");
          arrived(at >= 0 && at % 2 === 0 ? fields[at + 1] : undefined);
        }
      }
    }
  })();
  return {
    endpoint: { url: "redis://127.0.0.1:6379/0", destination: { stream } },
    close: async () => {
      running = false;
      await loop;
      await reader.del(stream);
      reader.disconnect();
    },
  };
}

/** A topic exchange with a queue bound to every key, consumed without acknowledgements (the broker's own load). */
async function amqp(name: string): Promise<Place> {
  const { default: amqplib } = await import("amqplib");
  const connection = await amqplib.connect("amqp://guest:guest@127.0.0.1:5672/%2F");
  const channel = await connection.createChannel();
  const exchange = `hooks-bench-${name}`;
  const queue = `hooks-bench-q-${name}`;
  await channel.assertExchange(exchange, "topic", { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false, exclusive: true });
  await channel.bindQueue(queue, exchange, "#");
  await channel.consume(queue, (message) => {
    if (message) arrived(message.properties.headers?.["webhook-id"]?.toString());
  }, { noAck: true });
  return {
    endpoint: {
      url: "amqp://127.0.0.1:5672/%2F",
      destination: { exchange, routing_key: "bench.{type}" },
      broker_credentials: { username: "guest", password: "guest" },
    },
    close: async () => {
      await channel.deleteQueue(queue).catch(() => {});
      await channel.deleteExchange(exchange).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}

/** A JetStream stream taking the endpoint's subjects, read by an ordered consumer from its first message. */
async function nats(name: string): Promise<Place> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
  const nc = await connect({ servers: "127.0.0.1:4222" });
  const jsm = await jetstreamManager(nc);
  const stream = `HOOKS_BENCH_${name.replaceAll("-", "_")}`;
  const prefix = `hooks-bench.${name}`;
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`] });
  const messages = await (await jetstream(nc).consumers.get(stream)).consume();
  const loop = (async () => {
    for await (const m of messages) arrived(m.headers?.get("webhook-id"));
  })();
  return {
    endpoint: { url: "nats://127.0.0.1:4222", destination: { subject: `${prefix}.{type}` } },
    close: async () => {
      await messages.close();
      await loop.catch(() => {});
      await jsm.streams.delete(stream).catch(() => false);
      await nc.close();
    },
  };
}

/** A QoS 1 subscription of MQTT 5 to the endpoint's topics; the record id comes as a user property. */
async function mqtt(name: string): Promise<Place> {
  const { default: client } = await import("mqtt");
  const topic = `hooks-bench/${name}`;
  const subscriber = await client.connectAsync({
    host: "127.0.0.1",
    port: 1883,
    protocolVersion: 5,
    clientId: `hooks-bench-${name}`,
    reconnectPeriod: 0,
  });
  subscriber.on("message", (_topic, _payload, packet) => {
    const id = packet.properties?.userProperties?.["webhook-id"];
    arrived(Array.isArray(id) ? id[0] : id);
  });
  await subscriber.subscribeAsync(`${topic}/#`, { qos: 1 });
  return {
    endpoint: { url: "mqtt://127.0.0.1:1883", destination: { topic: `${topic}/{type}` } },
    close: () => subscriber.endAsync(),
  };
}

const PLACES: Record<BrokerTransportName, (name: string) => Promise<Place>> = { redis, amqp, nats, mqtt };

const [transport, name] = Deno.args as [BrokerTransportName, string];
const place = await PLACES[transport](name);
console.log(JSON.stringify(place.endpoint));
let told = -1;
const teller = setInterval(() => {
  if (received === told) return;
  told = received;
  console.log(JSON.stringify({ received, distinct: seen.size, out_of_order: outOfOrder }));
}, 50);
Deno.addSignalListener("SIGTERM", async () => {
  clearInterval(teller);
  await place.close();
  Deno.exit(0);
});
