/**
 * The drain loop with fake steps: no Postgres, no HTTP. The fake endpoint keeps its records and slots in memory and
 * applies the same lease rules as the real statements (domain/webhooks/engine/statements/), one step at a time, so
 * these tests show what the loop itself must do for those rules to hold: hand its slot on, claim once more after
 * freeing it, release what it holds before waking its endpoint for a fresh run, stop on a disabled endpoint or an
 * abort.
 */
import assert from "node:assert/strict";
import { newId } from "../../domain/basics/ids.ts";
import type { Claim, ClaimedDelivery } from "../../domain/webhooks/engine/statements/claim_data.ts";
import type { Recorded } from "../../domain/webhooks/engine/recorder.ts";
import {
  type DrainBudget,
  type DrainEnd,
  drainEndpoint,
  type DrainSteps,
} from "../../domain/webhooks/engine/engine.ts";
import type { EndpointRow } from "../../domain/webhooks/endpoints/endpoint_row.ts";
import type { SendResult } from "../../domain/webhooks/engine/sender.ts";

const NO_LIMIT: DrainBudget = { ms: Infinity, deliveries: Infinity };
/** Lets the other runs move: every fake statement and request takes at least this one turn of the event loop. */
const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

type FakeRecord = {
  id: string;
  seq: number;
  status: "pending" | "succeeded" | "failed";
  due: number;
  token: string | null;
  attempts: number;
};

/** One endpoint as the database would hold it, with a receiver and the wake-ups around it. */
class FakeEndpoint {
  /** Milliseconds, moved by the sender (each attempt takes `sendMs`) and by the tests. */
  clock = 0;
  endpoint: EndpointRow;
  records: FakeRecord[] = [];
  slots: (string | null)[] = Array.from({ length: 100 }, () => null);
  /** Sequence numbers in the order the receiver saw them. */
  sent: number[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Which arrivals fail: sequence number -> how many times. */
  failing = new Map<number, number>();
  /** The status of those failures, and the Retry-After (seconds) they come with. */
  failStatus = 500;
  failRetryAfter: number | null = null;
  sendMs = 10;
  retryMs = 1_000;
  /** Step names in call order. */
  calls: string[] = [];
  /** Slots given back without an attempt, and the lanes woken, in order. */
  releasedSlots: number[] = [];
  wokenLanes: number[] = [];
  /** The budget of every run, those started by `wake` included. */
  budget = NO_LIMIT;
  /** Whether another endpoint waits for a drainer, asked once the budget is spent (the drainers ask their queue). */
  othersWaiting: (() => boolean) | undefined = undefined;
  /** Runs started by `wake`, when `wakeRuns` is on (a drainer taking the wake-up at once). */
  wakeRuns = true;
  runs: Promise<DrainEnd>[] = [];
  /** Called inside the record step after its snapshot is taken: records emitted then are not seen by that step. */
  duringRecord: (() => Promise<void>) | null = null;
  /** Called when an attempt starts, with its sequence number and signal. */
  onSend: ((seq: number, signal?: AbortSignal) => void) | null = null;

  constructor(mode: "parallel" | "sequential", maxConcurrency = 10) {
    const now = new Date();
    this.endpoint = {
      id: newId(),
      company_id: newId(),
      url: "http://receiver.test/hook",
      status: "active",
      disabled_reason: null,
      disabled_at: null,
      enabled_events: ["*"],
      delivery_mode: mode,
      event_payload_type: "snapshot",
      inject_secret_in_body: false,
      wrap_in_notification: false,
      max_concurrency: maxConcurrency,
      event_mapping: null,
      filter: null,
      signature_scheme: "hmac-sha256",
      sealed_secret: "sealed",
      sealed_previous_secrets: [],
      sealed_signing_key: null,
      public_key: null,
      previous_signing_keys: [],
      inserted_at: now,
      updated_at: now,
    };
  }

  emit(count: number): FakeRecord[] {
    const first = this.records.length + 1;
    const added = Array.from({ length: count }, (_, i) => ({
      id: newId(),
      seq: first + i,
      status: "pending" as const,
      due: this.clock,
      token: null,
      attempts: 0,
    }));
    for (const r of added) this.records.push(r);
    return added;
  }

  seqsWithStatus(status: FakeRecord["status"]) {
    return this.records.filter((r) => r.status === status).map((r) => r.seq);
  }

  heldSlots() {
    return this.slots.filter((s) => s !== null).length;
  }

  private limit() {
    const e = this.endpoint;
    return e.status !== "active" ? 0 : e.delivery_mode === "sequential" ? 1 : e.max_concurrency;
  }

  /** The lease rules: the parallel records due first, or the sequential head when it is due and free. */
  private choose(k: number, attempted: string | null, headHeld: boolean, visible: Set<FakeRecord>): FakeRecord[] {
    const pending = this.records.filter((r) => visible.has(r) && r.status === "pending" && r.id !== attempted);
    if (this.endpoint.delivery_mode === "parallel") {
      return pending.filter((r) => r.due <= this.clock && r.token === null)
        .sort((a, b) => a.due - b.due || a.seq - b.seq)
        .slice(0, k);
    }
    const head = pending.sort((a, b) => a.seq - b.seq)[0];
    return !headHeld && head && head.due <= this.clock && head.token === null ? [head] : [];
  }

  private lease(record: FakeRecord, slot: number): ClaimedDelivery {
    record.token = newId();
    this.slots[slot] = record.id;
    return { id: record.id, type: "identified", data: { seq: record.seq }, slot, token: record.token };
  }

  private snapshot() {
    return { endpoint: { ...this.endpoint } };
  }

  claim(): Claim {
    const slot = this.slots.findIndex((s, i) => s === null && i < this.limit());
    if (slot < 0) return { ...this.snapshot(), delivery: null };
    const [next] = this.choose(1, null, false, new Set(this.records));
    return { ...this.snapshot(), delivery: next ? this.lease(next, slot) : null };
  }

  async record(delivery: ClaimedDelivery, result: SendResult): Promise<Recorded> {
    const visible = new Set(this.records);
    await this.duringRecord?.();
    const record = this.records.find((r) => r.id === delivery.id)!;
    record.attempts++;
    record.token = null;
    // as the real statement: a 410 disables the endpoint and fails the record; Retry-After postpones it
    const gone = result.httpStatus === 410 && this.endpoint.status === "active";
    if (gone) Object.assign(this.endpoint, { status: "disabled", disabled_reason: "gone", disabled_at: new Date() });
    if (result.ok) record.status = "succeeded";
    else if (gone && record.status === "pending") record.status = "failed";
    else if (record.status === "pending") {
      record.due = this.clock + Math.max(this.retryMs, (result.retryAfterSeconds ?? 0) * 1000);
    }
    const keep = delivery.slot < this.limit();
    const [next] = keep ? this.choose(1, record.id, record.status === "pending", visible) : [];
    this.slots[delivery.slot] = null;
    return {
      status: record.status,
      next: { ...this.snapshot(), delivery: next ? this.lease(next, delivery.slot) : null },
      nextAttemptAt: record.status === "pending" ? new Date(record.due) : null,
      disabled: gone ? "gone" : null,
      attempt: record.attempts,
    };
  }

  release(delivery: ClaimedDelivery) {
    const record = this.records.find((r) => r.id === delivery.id)!;
    if (record.token === delivery.token) record.token = null;
    if (this.slots[delivery.slot] === delivery.id) this.slots[delivery.slot] = null;
    this.releasedSlots.push(delivery.slot);
  }

  async send(delivery: ClaimedDelivery, signal?: AbortSignal): Promise<SendResult> {
    const seq = delivery.data.seq as number;
    this.sent.push(seq);
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    this.onSend?.(seq, signal);
    await tick();
    this.clock += this.sendMs;
    this.inFlight--;
    const fails = this.failing.get(seq) ?? 0;
    if (signal?.aborted) return { ok: false, httpStatus: 0, responseBody: "aborted", durationMs: this.sendMs };
    if (fails > 0) this.failing.set(seq, fails - 1);
    if (fails === 0) return { ok: true, httpStatus: 200, responseBody: "", durationMs: this.sendMs };
    return {
      ok: false,
      httpStatus: this.failStatus,
      responseBody: "",
      durationMs: this.sendMs,
      retryAfterSeconds: this.failRetryAfter,
    };
  }

  /** Each step is one statement: it acts when called, and answers a turn later. */
  steps(): DrainSteps {
    const answer = async <T>(name: string, value: T): Promise<T> => {
      this.calls.push(name);
      await tick();
      return value;
    };
    return {
      claim: () => answer("claim", this.claim()),
      send: (_endpoint, delivery, signal) => {
        this.calls.push("send");
        return this.send(delivery, signal);
      },
      recordAndClaimNext: async (delivery, result) => answer("record", await this.record(delivery, result)),
      release: (delivery) => answer("release", this.release(delivery)),
      wake: (lane) => {
        this.calls.push("wake");
        this.wokenLanes.push(lane);
        // the run may start at once: a drainer is free
        if (this.wakeRuns) this.runs.push(this.run());
        return tick();
      },
      failPending: () => {
        for (const r of this.records) if (r.status === "pending") r.status = "failed";
        return answer("failPending", undefined);
      },
    };
  }

  run(signal?: AbortSignal): Promise<DrainEnd> {
    return drainEndpoint(this.steps(), {
      budget: this.budget,
      now: () => this.clock,
      signal,
      othersWaiting: this.othersWaiting,
    });
  }

  /** Runs `runs` drains at once, then waits for those and every run they woke. */
  async drain(runs = 1): Promise<DrainEnd[]> {
    const started = Array.from({ length: runs }, () => this.run());
    const ends = await Promise.all(started);
    for (let i = 0; i < this.runs.length; i++) ends.push(await this.runs[i]);
    this.runs = [];
    return ends;
  }
}

Deno.test("the drain loop", async (t) => {
  await t.step("sequential: one delivery in flight, in event order; a failing head holds the ones behind", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(5);
    fake.failing.set(2, 1);
    const ends = await fake.drain(3);
    assert.deepEqual(fake.sent, [1, 2]);
    assert.deepEqual(ends, ["idle", "idle", "idle"]);
    assert.deepEqual(fake.seqsWithStatus("pending"), [2, 3, 4, 5]);
    assert.equal(fake.heldSlots(), 0);

    fake.clock += fake.retryMs;
    await fake.drain(3);
    assert.deepEqual(fake.sent, [1, 2, 2, 3, 4, 5]);
    assert.equal(fake.maxInFlight, 1);
    assert.deepEqual(fake.seqsWithStatus("succeeded"), [1, 2, 3, 4, 5]);
    assert.equal(fake.heldSlots(), 0);
  });

  await t.step("parallel: every slot up to max_concurrency in use, never more, each record sent once", async () => {
    const fake = new FakeEndpoint("parallel", 3);
    fake.emit(12);
    const ends = await fake.drain(6);
    assert.equal(fake.maxInFlight, 3);
    assert.deepEqual([...fake.sent].sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 1));
    assert.deepEqual(fake.seqsWithStatus("succeeded").length, 12);
    assert.ok(ends.every((end) => end === "idle"), ends.join());
    assert.equal(fake.heldSlots(), 0);
  });

  await t.step("a run hands its slot from record to record instead of giving it up", async () => {
    const fake = new FakeEndpoint("parallel", 1);
    fake.emit(4);
    assert.deepEqual(await fake.drain(1), ["idle"]);
    assert.deepEqual(fake.sent, [1, 2, 3, 4]);
    // one claim to start, one claim after the last record freed the slot; every other record came with the slot
    assert.deepEqual(fake.calls.filter((c) => c === "claim").length, 2);
  });

  await t.step("a record that arrives while the only slot is busy is delivered by the run holding it", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(1);
    let late: DrainEnd | null = null;
    fake.duringRecord = async () => {
      fake.duringRecord = null;
      fake.emit(1);
      // its wake-up starts a run now, which finds the slot taken and leaves it to the holder
      late = await fake.run();
    };
    assert.deepEqual(await fake.drain(1), ["idle"]);
    assert.equal(late, "idle");
    assert.deepEqual(fake.sent, [1, 2]);
    assert.deepEqual(fake.seqsWithStatus("succeeded"), [1, 2]);
  });

  await t.step("the delivery budget: the record in hand is released, then a fresh run carries on", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(5);
    fake.budget = { ms: Infinity, deliveries: 2 };
    const ends = await fake.drain(1);
    assert.deepEqual(ends, ["handed_over", "handed_over", "idle"]);
    assert.deepEqual(fake.sent, [1, 2, 3, 4, 5]);
    assert.equal(fake.maxInFlight, 1);
    const handOver = fake.calls.indexOf("release");
    assert.deepEqual(fake.calls.slice(handOver, handOver + 2), ["release", "wake"]);
    assert.equal(fake.heldSlots(), 0);
    assert.deepEqual(fake.wokenLanes, fake.releasedSlots, "each hand-over wakes the lane of the slot it gave up");
  });

  await t.step("the time budget, on the clock given to the loop", async () => {
    const fake = new FakeEndpoint("parallel", 1);
    fake.emit(5);
    fake.sendMs = 800;
    fake.wakeRuns = false;
    fake.budget = { ms: 2_000, deliveries: Infinity };
    assert.equal(await fake.run(), "handed_over");
    // 800, 1600, 2400 ms: the third attempt ends past the budget, the fourth does not start
    assert.deepEqual(fake.sent, [1, 2, 3]);
    assert.deepEqual(fake.calls.slice(-2), ["release", "wake"]);
    assert.equal(fake.heldSlots(), 0);
    assert.ok(fake.records.every((r) => r.token === null), "no record stays leased");
  });

  await t.step(
    "past its budget a run goes on while no other endpoint waits for its drainer, and hands over once one does",
    async () => {
      const fake = new FakeEndpoint("sequential");
      fake.emit(10);
      fake.budget = { ms: Infinity, deliveries: 2 };
      fake.wakeRuns = false;
      let asked = 0;
      // asked after the 2nd, 3rd, 4th and 5th deliveries: nobody waits the first three times
      fake.othersWaiting = () => ++asked > 3;
      assert.equal(await fake.run(), "handed_over");
      assert.deepEqual(fake.sent, [1, 2, 3, 4, 5], "the run went on past its budget of 2 while nobody waited");
      assert.equal(asked, 4, "asked only once the budget was spent, once per delivery");
      assert.deepEqual(fake.calls.slice(-2), ["release", "wake"], "then it gave back what it held and woke it");
      assert.equal(fake.heldSlots(), 0);

      const alone = new FakeEndpoint("sequential");
      alone.emit(10);
      alone.budget = { ms: Infinity, deliveries: 2 };
      alone.othersWaiting = () => false;
      assert.deepEqual(await alone.drain(1), ["idle"], "one run, no hand-over, when nobody ever waits");
      assert.deepEqual(alone.sent, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      assert.ok(!alone.calls.includes("release"), "nothing given back in between");
    },
  );

  await t.step("a disabled endpoint: nothing is sent and what is pending is failed", async () => {
    const fake = new FakeEndpoint("parallel", 2);
    fake.emit(3);
    fake.endpoint.status = "disabled";
    assert.equal(await fake.run(), "inactive");
    assert.deepEqual(fake.sent, []);
    assert.deepEqual(fake.seqsWithStatus("failed"), [1, 2, 3]);
  });

  await t.step("an endpoint disabled during an attempt: that attempt is recorded, the rest is failed", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(3);
    fake.onSend = () => fake.endpoint.status = "disabled";
    assert.equal(await fake.run(), "inactive");
    assert.deepEqual(fake.sent, [1]);
    assert.deepEqual(fake.seqsWithStatus("succeeded"), [1]);
    assert.deepEqual(fake.seqsWithStatus("failed"), [2, 3]);
    assert.equal(fake.heldSlots(), 0);
  });

  await t.step(
    "an abort: the attempt under way gets the signal, nothing more starts, the claim is released",
    async () => {
      const fake = new FakeEndpoint("parallel", 1);
      fake.emit(4);
      fake.wakeRuns = false;
      const shutdown = new AbortController();
      const signals: (AbortSignal | undefined)[] = [];
      fake.onSend = (seq, signal) => {
        signals.push(signal);
        if (seq === 2) shutdown.abort();
      };
      assert.equal(await fake.run(shutdown.signal), "handed_over");
      assert.deepEqual(fake.sent, [1, 2]);
      assert.ok(signals.every((s) => s === shutdown.signal));
      assert.deepEqual(fake.seqsWithStatus("succeeded"), [1]);
      assert.equal(fake.records[1].attempts, 1, "the interrupted attempt is recorded");
      assert.deepEqual(fake.calls.slice(-2), ["release", "wake"]);
      assert.equal(fake.heldSlots(), 0);
      assert.ok(fake.records.every((r) => r.token === null), "no record stays leased");
    },
  );

  await t.step("a failing record step gives the record back at once and ends the run with the error", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(2);
    const steps = fake.steps();
    const failure = new Error("deadlock detected");
    steps.recordAndClaimNext = () => Promise.reject(failure);
    await assert.rejects(drainEndpoint(steps, { budget: fake.budget, now: () => fake.clock }), failure);
    assert.deepEqual(fake.sent, [1]);
    assert.deepEqual(fake.calls.slice(-2), ["send", "release"]);
    assert.equal(fake.heldSlots(), 0, "the slot is free for the next drain");
    assert.ok(fake.records.every((r) => r.token === null), "no record stays leased");
  });

  await t.step("a 410 answer ends the run: nothing more is sent and what was pending is failed", async () => {
    const fake = new FakeEndpoint("parallel", 1);
    fake.emit(4);
    fake.failing.set(2, 1);
    fake.failStatus = 410;
    assert.deepEqual(await fake.drain(1), ["inactive"]);
    assert.deepEqual(fake.sent, [1, 2]);
    assert.deepEqual(fake.seqsWithStatus("failed"), [2, 3, 4]);
    assert.equal(fake.endpoint.disabled_reason, "gone");
    assert.equal(fake.heldSlots(), 0);
  });

  await t.step("a Retry-After longer than the schedule holds a sequential head until then", async () => {
    const fake = new FakeEndpoint("sequential");
    fake.emit(2);
    fake.failing.set(1, 1);
    fake.failStatus = 429;
    fake.failRetryAfter = 5;
    assert.deepEqual(await fake.drain(1), ["idle"]);
    fake.clock += fake.retryMs;
    await fake.drain(1);
    assert.deepEqual(fake.sent, [1], "not sent again at the schedule's delay");
    fake.clock += 5_000;
    await fake.drain(1);
    assert.deepEqual(fake.sent, [1, 1, 2]);
    assert.deepEqual(fake.seqsWithStatus("succeeded"), [1, 2]);
  });

  await t.step("a run started after the abort sends nothing", async () => {
    const fake = new FakeEndpoint("parallel", 1);
    fake.emit(2);
    fake.wakeRuns = false;
    assert.equal(await fake.run(AbortSignal.abort()), "handed_over");
    assert.deepEqual(fake.sent, []);
    assert.deepEqual(fake.calls, ["claim", "release", "wake"]);
    assert.equal(fake.heldSlots(), 0);
  });

  await t.step("an endpoint that no longer exists ends the run at once", async () => {
    const calls: string[] = [];
    const unexpected = (name: string) => () => {
      calls.push(name);
      return Promise.reject(new Error(`${name} called`));
    };
    const end = await drainEndpoint({
      claim: () => Promise.resolve(null),
      send: unexpected("send"),
      recordAndClaimNext: unexpected("record"),
      release: unexpected("release"),
      wake: unexpected("wake"),
      failPending: unexpected("failPending"),
    }, { budget: NO_LIMIT, now: () => 0 });
    assert.equal(end, "gone");
    assert.deepEqual(calls, []);
  });
});
