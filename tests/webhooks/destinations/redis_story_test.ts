/**
 * A Redis Streams destination told as an integrator sees it (docs/webhooks.md, "Destinations"): the shared broker story
 * (tests/support/destination_story.ts) against the real Redis on loopback, each message read back with XREAD.
 */
import { Redis } from "ioredis";
import { setup } from "../../support/helpers.ts";
import { type BrokerMessage, tellDestinationStory } from "../../support/destination_story.ts";

const REDIS_PORT = 6379;

/** Reads `stream` from its start, entry after entry: the body field and the header fields of each. */
function readStream(stream: string) {
  const reader = new Redis({ host: "127.0.0.1", port: REDIS_PORT, maxRetriesPerRequest: 1 });
  const messages: BrokerMessage[] = [];
  let running = true;
  const loop = (async () => {
    let last = "0";
    while (running) {
      const answer = await reader.xread("BLOCK", 100, "STREAMS", stream, last).catch(() => null);
      for (const [, entries] of answer ?? []) {
        for (const [id, fields] of entries) {
          last = id;
          const pairs: Record<string, string> = {};
          for (let i = 0; i < fields.length; i += 2) pairs[fields[i]] = fields[i + 1];
          const { body, ...headers } = pairs;
          messages.push({ body, headers });
        }
      }
    }
  })();
  return {
    messages,
    close: async () => {
      running = false;
      await loop;
      await reader.del(stream);
      reader.disconnect();
    },
  };
}

Deno.test("Redis Streams destination: signed, in order, through an outage, recovered", async (t) => {
  const ctx = await setup("redis_destination", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "0.3" } });
  try {
    await tellDestinationStory(t, ctx, {
      brokerPort: REDIS_PORT,
      url: (port) => `redis://127.0.0.1:${port}/0`,
      prepare: (name) => {
        const stream = `hooks-test:${name}`;
        return Promise.resolve({ destination: { stream, maxlen: 1000 }, consumer: readStream(stream) });
      },
    });
  } finally {
    await ctx.close();
  }
});
