/**
 * The story every broker destination tells (docs/webhooks.md, "Destinations"), written once and run against each real
 * broker by its own test file: a pay-in arrives signed and verifies with the endpoint's secret, 30 events to a
 * sequential endpoint arrive in order once each, a broker that cannot be reached gives failed attempts that succeed
 * once it is back, and a recover replays to the broker. The broker is reached through a relay the story cuts
 * (tcp_proxy.ts), so the shared broker itself never stops.
 */

import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { type Company, eventually, newCompany, type TestContext } from "./helpers.ts";
import { ENDPOINTS, recordsOf } from "./endpoints.ts";
import { registerPerson } from "./rails.ts";
import { seqId, seqOf } from "./webhook_receiver.ts";
import { startTcpProxy, type TcpProxy } from "./tcp_proxy.ts";

/** One message as the consumer read it off the broker: its payload and its headers (names in lower case). */
export type BrokerMessage = { body: string; headers: Record<string, string> };

/** Reads what arrives at one place on the broker, from the moment it is made. */
export type BrokerConsumer = { messages: BrokerMessage[]; close(): Promise<void> };

export type BrokerStory = {
  /** The broker's port on loopback: the relay forwards to it. */
  brokerPort: number;
  /** The endpoint's url for a broker listening on loopback `port` (the relay's). */
  url: (port: number) => string;
  credentials?: Record<string, string>;
  /**
   * Makes a place on the broker named after `name` (a queue bound to an exchange, a stream, a subscription) and
   * starts reading it; answers the endpoint's destination, which publishes there.
   */
  prepare: (name: string) => Promise<{ destination: Record<string, unknown>; consumer: BrokerConsumer }>;
};

/** A place on the broker, its endpoint, the relay in front of the broker and the consumer reading it. */
export type Wired = {
  company: Company;
  endpoint: { id: string; secret: string };
  relay: TcpProxy;
  consumer: BrokerConsumer;
  close(): Promise<void>;
};

/** An endpoint of a new company publishing through a relay of its own to a new place on the broker. */
export async function wire(
  ctx: TestContext,
  story: BrokerStory,
  settings: Record<string, unknown> = {},
): Promise<Wired> {
  const company = await newCompany(ctx);
  const relay = await startTcpProxy(story.brokerPort);
  const { destination, consumer } = await story.prepare(`story-${crypto.randomUUID().slice(0, 8)}`);
  const res = await company.post(ENDPOINTS, {
    url: story.url(relay.port),
    destination,
    ...(story.credentials ? { broker_credentials: story.credentials } : {}),
    ...settings,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return {
    company,
    endpoint: res.body.data,
    relay,
    consumer,
    close: async () => {
      await consumer.close();
      await relay.close();
    },
  };
}

/** Emits events of type identified numbered `from`..`to`, one transaction each, in order. */
async function emitNumbered(ctx: TestContext, company: Company, from: number, to: number) {
  for (let seq = from; seq <= to; seq++) {
    await ctx.sql.begin((tx) => emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) }));
  }
}

const numbered = (m: BrokerMessage) => seqOf(JSON.parse(m.body).data?.transaction_id);

/** The story's steps, in the test `t` of a file with its own database and worker. */
export async function tellDestinationStory(t: Deno.TestContext, ctx: TestContext, story: BrokerStory) {
  await t.step("a pay-in arrives as a message signed with the endpoint's secret", async () => {
    const w = await wire(ctx, story);
    try {
      const { id } = await registerPerson(w.company);
      const payin = await w.company.post("/api/sandbox/payins", {
        subject_id: id,
        value: "150.00",
        currency: "BRL",
      });
      assert.equal(payin.status, 201, JSON.stringify(payin.body));
      await eventually("the identified message", () => w.consumer.messages.length >= 1, 10_000);
      const [message] = w.consumer.messages;
      // verified as a receiver would: the Standard Webhooks headers, with the endpoint's secret as raw bytes
      const event = new Webhook(w.endpoint.secret, { format: "raw" }).verify(message.body, message.headers) as {
        type: string;
        data: { transaction_id: string };
      };
      assert.equal(event.type, "identified");
      assert.equal(event.data.transaction_id, payin.body.data.id);
      assert.match(message.headers["service-signature"], /^t=\d+,v1=[0-9a-f]{64}$/);
      // the broker's acknowledgement comes before the attempt is recorded: the record says so a moment later
      let record: { status: string } | undefined;
      await eventually("the record succeeded", async () => {
        [record] = await recordsOf(w.company, w.endpoint.id);
        return record?.status === "succeeded";
      }, 5_000).catch(() => {});
      assert.equal(record?.status, "succeeded");
    } finally {
      await w.close();
    }
  });

  await t.step("30 events to a sequential endpoint arrive in order, once each", async () => {
    const w = await wire(ctx, story, { delivery_mode: "sequential" });
    try {
      await emitNumbered(ctx, w.company, 1, 30);
      await eventually("30 messages", () => w.consumer.messages.length >= 30, 15_000);
      // a moment more: a message sent twice would arrive now
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(w.consumer.messages.map(numbered), Array.from({ length: 30 }, (_, i) => i + 1));
    } finally {
      await w.close();
    }
  });

  await t.step("a broker out of reach gives failed attempts, which succeed once it is back", async () => {
    const w = await wire(ctx, story, { delivery_mode: "sequential" });
    try {
      await emitNumbered(ctx, w.company, 1, 1);
      await eventually("the first message", () => w.consumer.messages.length === 1, 10_000);
      await w.relay.cut();
      await emitNumbered(ctx, w.company, 2, 3);
      await eventually("a failed attempt", async () => {
        const records = await recordsOf(w.company, w.endpoint.id);
        return records.some((r) => r.attempts_count > 0 && r.status === "pending" && !!r.last_error);
      }, 10_000);
      const failed = (await recordsOf(w.company, w.endpoint.id)).find((r) => r.last_error);
      assert.ok(failed?.last_error && !failed.last_error.includes("127.0.0.1"), failed?.last_error ?? "");
      await w.relay.restore();
      await eventually("the messages after the outage", () => w.consumer.messages.length >= 3, 15_000);
      assert.deepEqual(w.consumer.messages.map(numbered), [1, 2, 3]);
      await eventually("every record succeeded", async () => {
        const records = await recordsOf(w.company, w.endpoint.id);
        return records.length === 3 && records.every((r) => r.status === "succeeded");
      });
    } finally {
      await w.close();
    }
  });

  await t.step("a recover replays what failed to the broker", async () => {
    const w = await wire(ctx, story);
    try {
      await w.relay.cut();
      const since = new Date(Date.now() - 1000).toISOString();
      await emitNumbered(ctx, w.company, 7, 7);
      await eventually(
        "an attempt failed",
        async () => (await recordsOf(w.company, w.endpoint.id))[0]?.attempts_count > 0,
      );
      // disabling fails what is pending; enabled again, the endpoint gets it back only by a recover
      assert.equal((await w.company.delete(`${ENDPOINTS}/${w.endpoint.id}`)).status, 200);
      assert.equal((await w.company.post(`${ENDPOINTS}/${w.endpoint.id}/enable`)).status, 200);
      await w.relay.restore();
      const recover = await w.company.post(`${ENDPOINTS}/${w.endpoint.id}/recover`, { since });
      assert.ok([200, 202].includes(recover.status), JSON.stringify(recover.body));
      await eventually("the recovered message", () => w.consumer.messages.length === 1, 10_000);
      assert.equal(numbered(w.consumer.messages[0]), 7);
    } finally {
      await w.close();
    }
  });
}
