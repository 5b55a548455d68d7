/**
 * Pull streams as a consumer uses them (docs/webhooks.md, "Pull streams"): a stream made and kept apart from the
 * endpoints, its messages read in order and verified with the stream's secret, acknowledged, long-polled and followed
 * live; cursors that are forged or another stream's refused, one into what is gone answered 410; an event whose
 * transaction commits late never skipped; waiting reads outside the in-flight bound and answered at once on stop.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { createApp } from "../../routes/app.ts";
import { keepStreams, retireStreamLog } from "../../domain/webhooks/streams/streams.ts";
import { type Company, newCompany, setup, type TestContext } from "../support/helpers.ts";
import { ENDPOINTS } from "../support/endpoints.ts";
import { seqId, seqOf } from "../support/webhook_receiver.ts";

const STREAMS = "/api/v2/notifications/streams";

type Message = { id: string; cursor: string; type: string; body: string; headers: Record<string, string> };

const emitSeq = (ctx: TestContext, company: Company, from: number, to: number) =>
  ctx.sql.begin(async (tx) => {
    for (let seq = from; seq <= to; seq++) {
      await emitEvent(tx, company.id, "identified", { transaction_id: seqId(seq) });
    }
  });

const seqs = (messages: Message[]) => messages.map((m) => seqOf(JSON.parse(m.body).data.transaction_id));

Deno.test("pull streams: read, acknowledge, wait, follow", async (t) => {
  const ctx = await setup("pull_streams", { env: { MAX_INFLIGHT_REQUESTS: "3" } });
  try {
    const company = await newCompany(ctx);
    const made = await company.post(STREAMS, { enabled_events: ["identified"], description: "ledger" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const stream = made.body.data;
    const read = (query = "") => company.get(`${STREAMS}/${stream.id}/messages${query}`);

    await t.step("a stream has a secret of its own and is not an endpoint", async () => {
      assert.match(stream.secret, /^[0-9a-f]{64}$/);
      assert.deepEqual((await company.get(ENDPOINTS)).body.data, []);
      assert.deepEqual((await company.get(STREAMS)).body.data.map((s: { id: string }) => s.id), [stream.id]);
      const empty = await read();
      assert.deepEqual([empty.status, empty.body.data, empty.body.has_more], [200, [], false]);
    });

    await t.step("messages come in event order, signed with the stream's secret", async () => {
      await emitSeq(ctx, company, 1, 3);
      await ctx.sql.begin((tx) => emitEvent(tx, company.id, "wire_created", { id: "w" })); // not subscribed
      const page = await read();
      assert.equal(page.status, 200, JSON.stringify(page.body));
      assert.deepEqual(seqs(page.body.data), [1, 2, 3]);
      const webhook = new Webhook(stream.secret, { format: "raw" });
      for (const m of page.body.data as Message[]) {
        const event = webhook.verify(m.body, m.headers) as { id: string; type: string };
        assert.equal(event.type, "identified");
        assert.equal(event.id, m.id);
        assert.equal(m.headers["webhook-id"], m.id);
      }
      // the same message has the same id at every read
      assert.deepEqual((await read()).body.data.map((m: Message) => m.id), page.body.data.map((m: Message) => m.id));
    });

    await t.step("an acknowledgement moves where a read starts; after= reads from any cursor", async () => {
      const page = await read();
      const ack = await company.post(`${STREAMS}/${stream.id}/ack`, { cursor: page.body.data[1].cursor });
      assert.equal(ack.status, 200);
      assert.deepEqual(seqs((await read()).body.data), [3]);
      assert.deepEqual(seqs((await read(`?after=${page.body.data[0].cursor}`)).body.data), [2, 3]);
      // an older cursor does not move it back
      await company.post(`${STREAMS}/${stream.id}/ack`, { cursor: page.body.data[0].cursor });
      assert.deepEqual(seqs((await read()).body.data), [3]);
      assert.deepEqual(seqs((await read("?limit=1")).body.data), [3]);
    });

    await t.step("a forged, edited or other stream's cursor is refused", async () => {
      const other = (await company.post(STREAMS, {})).body.data;
      const foreign = (await company.get(`${STREAMS}/${other.id}`)).body.data.cursor;
      for (const cursor of [foreign, "abc.def", (await read()).body.next_cursor.replace(/.$/, "0")]) {
        const res = await read(`?after=${encodeURIComponent(cursor)}`);
        assert.equal(res.status, 400, cursor);
        assert.deepEqual(res.body.errors, { after: ["is not a cursor of this stream"] });
      }
      const outsider = await newCompany(ctx);
      assert.equal((await outsider.get(`${STREAMS}/${stream.id}/messages`)).status, 404);
      assert.equal((await company.delete(`${STREAMS}/${other.id}`)).status, 204);
    });

    await t.step("an event whose transaction commits late is not skipped by a cursor", async () => {
      const before = (await read()).body.next_cursor;
      let commit = () => {};
      const committed = new Promise<void>((r) => commit = r);
      // the first transaction writes its event, then waits; the second writes and commits meanwhile
      const slow = ctx.sql.begin(async (tx) => {
        await emitEvent(tx, company.id, "identified", { transaction_id: seqId(10) });
        await committed;
      });
      await new Promise((r) => setTimeout(r, 100));
      await emitSeq(ctx, company, 11, 11);
      const during = await read(`?after=${encodeURIComponent(before)}`);
      assert.deepEqual(seqs(during.body.data), [], "nothing past a transaction still running");
      commit();
      await slow;
      assert.deepEqual(seqs((await read(`?after=${encodeURIComponent(during.body.next_cursor)}`)).body.data), [10, 11]);
      await company.post(`${STREAMS}/${stream.id}/ack`, { cursor: (await read()).body.next_cursor });
    });

    await t.step("a long poll answers when a message arrives, outside the in-flight bound", async () => {
      const started = Date.now();
      const polls = [1, 2, 3].map(() => read("?wait=5"));
      await new Promise((r) => setTimeout(r, 300));
      // three waiting reads, and MAX_INFLIGHT_REQUESTS is 3: the health check still answers
      assert.equal((await ctx.app.request("/healthz")).status, 200);
      await emitSeq(ctx, company, 20, 20);
      for (const poll of await Promise.all(polls)) assert.deepEqual(seqs(poll.body.data), [20]);
      assert.ok(Date.now() - started < 3000, `answered in ${Date.now() - started} ms`);
      await company.post(`${STREAMS}/${stream.id}/ack`, { cursor: (await read()).body.next_cursor });
    });

    await t.step("live: Server-Sent Events with the cursor as id, resumed by Last-Event-ID", async () => {
      const controller = new AbortController();
      const res = await ctx.app.request(`${STREAMS}/${stream.id}/live`, {
        headers: { authorization: `Bearer ${company.token}` },
        signal: controller.signal,
      });
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      await emitSeq(ctx, company, 30, 31);
      let text = "";
      while ((text.match(/event: message/g) ?? []).length < 2) text += (await reader.read()).value ?? "";
      const events = text.split("\n\n").filter((e) => e.includes("event: message"));
      const ids = events.map((e) => /^id: (.+)$/m.exec(e)![1]);
      const data = events.map((e) => JSON.parse(/^data: (.+)$/m.exec(e)![1]) as Message);
      assert.deepEqual(seqs(data), [30, 31]);
      assert.deepEqual(ids, data.map((m) => m.cursor));
      controller.abort();
      await reader.cancel().catch(() => {});
      const resumed = await ctx.app.request(`${STREAMS}/${stream.id}/live`, {
        headers: { authorization: `Bearer ${company.token}`, "last-event-id": ids[0] },
      });
      const again = resumed.body!.pipeThrough(new TextDecoderStream()).getReader();
      let more = "";
      while (!more.includes("event: message")) more += (await again.read()).value ?? "";
      assert.deepEqual(seqs([JSON.parse(/^data: (.+)$/m.exec(more)![1])]), [31]);
      await again.cancel();
    });

    await t.step("past the backlog cap the oldest go, counted; a cursor into them answers 410", async () => {
      const old = (await read()).body.next_cursor;
      await emitSeq(ctx, company, 40, 43);
      await keepStreams(ctx.sql, { cap: 2 });
      const gone = await read(`?after=${encodeURIComponent(old)}`);
      assert.equal(gone.status, 410);
      const oldest = gone.body.errors.oldest_cursor;
      assert.deepEqual(seqs((await read(`?after=${encodeURIComponent(oldest)}`)).body.data), [42, 43]);
      // the committed position was passed too: a read from it starts at what is kept
      assert.deepEqual(seqs((await read()).body.data), [42, 43]);
      const stats = await company.get(`${STREAMS}/${stream.id}/stats`);
      // 30 and 31 (followed live, never acknowledged) and 40, 41 went
      assert.deepEqual([stats.body.data.backlog, stats.body.data.dropped], [2, 4]);
    });

    await t.step("the retention takes the log with the events, counting what was never read", async () => {
      await retireStreamLog(ctx.sql, new Date(Date.now() + 60_000));
      const after = await company.get(`${STREAMS}/${stream.id}`);
      assert.equal(after.body.data.dropped, 6);
      assert.deepEqual((await read()).body.data, []);
      const [{ n }] = await ctx.sql`select count(*)::int as n from stream_log where company_id = ${company.id}`;
      assert.equal(n, 0);
    });

    await t.step("when the instance stops, a long poll answers at once", async () => {
      const stopping = new AbortController();
      const app = createApp({ ...ctx.deps, stopping: stopping.signal });
      const started = Date.now();
      const poll = app.request(
        `${STREAMS}/${stream.id}/messages?wait=20&after=${encodeURIComponent((await read()).body.next_cursor)}`,
        { headers: { authorization: `Bearer ${company.token}` } },
      );
      await new Promise((r) => setTimeout(r, 200));
      stopping.abort();
      const res = await poll;
      assert.equal(res.status, 200);
      assert.deepEqual((await res.json()).data, []);
      assert.ok(Date.now() - started < 2000);
    });
  } finally {
    await ctx.close();
  }
});
