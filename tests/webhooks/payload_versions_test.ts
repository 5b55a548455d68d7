/**
 * Payload versions (docs/webhooks.md, "Payload versions"): the catalogue lists them with each event type's schema,
 * every version's bodies validate against the schema it serves, and over HTTP one event reaches an endpoint pinned to
 * the first version without the field the latest added and one pinned to the latest with it, both signed; an endpoint
 * that names no version gets exactly the body it got before versions existed. A file of its own: one story.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { verifySignature } from "../../domain/webhooks/endpoints/signature.ts";
import { renderBody } from "../../domain/webhooks/engine/body.ts";
import { EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { eventually, newCompany, setup } from "../support/helpers.ts";
import { createEndpoint, emit, ENDPOINTS, recordsOf } from "../support/endpoints.ts";
import { type Arrival, startReceiver } from "../support/webhook_receiver.ts";

const FIRST = "2026-11-23";
const LATEST = "2026-11-27";

type ServedVersion = {
  version: string;
  changes: string;
  latest: boolean;
  event_types: { type: string; schema: Record<string, unknown>; example: Record<string, unknown> }[];
};

Deno.test("payload versions: listed, validated, and a new field never reaches a pinned endpoint", async (t) => {
  const ctx = await setup("webhook_payload_versions", { worker: true });
  const rx = startReceiver();
  try {
    const company = await newCompany(ctx);
    const served = await company.get("/api/v2/notifications/event_types");
    assert.equal(served.status, 200);
    const versions: ServedVersion[] = served.body.versions;

    await t.step("the catalogue lists every version, oldest first, with what changed and every type's schema", () => {
      assert.deepEqual(versions.map((v) => [v.version, v.latest]), [[FIRST, false], [LATEST, true]]);
      for (const v of versions) {
        assert.ok(v.changes.length > 20, v.version);
        assert.deepEqual(v.event_types.map((e) => e.type), [...EVENT_TYPES], v.version);
      }
      // the first version is the catalogue every endpoint got before versions existed, word for word
      assert.deepEqual(
        versions[0].event_types.map((e) => e.schema),
        served.body.data.map((e: { schema: unknown }) => e.schema),
      );
      assert.ok(versions[1].changes.includes("`timestamp`"));
      for (const e of versions[1].event_types) assert.deepEqual(e.schema.required, ["id", "type", "timestamp", "data"]);
    });

    await t.step("every version's example and rendered bodies validate against the schema it serves", () => {
      const ajv = new Ajv2020({ strict: true, allErrors: true });
      const occurredAt = new Date("2026-11-21T07:00:00.123Z");
      for (const v of versions) {
        for (const e of v.event_types) {
          const validate = ajv.compile(e.schema);
          const example = e.example as { id: string; type: string; data: Record<string, unknown> };
          assert.ok(validate(example), `${v.version} ${e.type} example: ${ajv.errorsText(validate.errors)}`);
          for (const inject of [false, true]) {
            const body = JSON.parse(renderBody({
              event_payload_type: "snapshot",
              wrap_in_notification: false,
              inject_secret_in_body: inject,
              event_mapping: null,
              secret: "s".repeat(64),
              payload_version: v.version,
            }, { id: example.id, type: e.type, data: example.data, occurredAt }));
            assert.ok(validate(body), `${v.version} ${e.type} rendered: ${ajv.errorsText(validate.errors)}`);
          }
          // a body of the other version does not pass: the schemas tell the versions apart
          const other = versions.find((o) => o !== v)!.event_types.find((o) => o.type === e.type)!;
          assert.ok(!validate(other.example), `${v.version} ${e.type} refuses the other version's body`);
        }
      }
    });

    await t.step(
      "an unknown version, or one not written as a version, is refused with 422 naming the field",
      async () => {
        for (const payload_version of ["2026-11-01", "latest", 2, ""]) {
          const res = await company.post(ENDPOINTS, { url: `${rx.url}/refused`, payload_version });
          assert.equal(res.status, 422, JSON.stringify(payload_version));
          assert.deepEqual(Object.keys(res.body.errors), ["payload_version"], JSON.stringify(res.body));
        }
        assert.deepEqual(
          (await company.post(ENDPOINTS, { url: `${rx.url}/refused`, payload_version: "v2" })).body.errors,
          { payload_version: [`must be one of: ${FIRST}, ${LATEST}`] },
        );
      },
    );

    await t.step(
      "one event: the pinned endpoints get their version's body, both signed, the unpinned the first's",
      async () => {
        const first = await createEndpoint(company, `${rx.url}/first`, { payload_version: FIRST });
        const latest = await createEndpoint(company, `${rx.url}/latest`, { payload_version: LATEST });
        const unpinned = await createEndpoint(company, `${rx.url}/unpinned`);
        assert.deepEqual([first, latest, unpinned].map((e) => e.payload_version), [FIRST, LATEST, FIRST]);
        // not pinned is stored as every endpoint made before versions is: null
        const [{ payload_version: stored }] = await ctx.sql<{ payload_version: string | null }[]>`
        select payload_version from webhook_endpoints where id = ${unpinned.id}`;
        assert.equal(stored, null);
        const shown = await company.get(`${ENDPOINTS}/${latest.id}`);
        assert.equal(shown.body.data.payload_version, LATEST);

        const transaction_id = crypto.randomUUID();
        await emit(ctx, company, "identified", { transaction_id });
        const arrival = async (path: string): Promise<Arrival> => {
          await eventually(`an arrival at ${path}`, () => rx.at(path).length === 1);
          return rx.at(path)[0];
        };
        const [atFirst, atLatest, atUnpinned] = [
          await arrival("/first"),
          await arrival("/latest"),
          await arrival("/unpinned"),
        ];
        const [record] = await recordsOf(company, latest.id);
        const [firstRecord] = await recordsOf(company, first.id);
        const [unpinnedRecord] = await recordsOf(company, unpinned.id);

        // the first version: the bytes every endpoint got before versions existed
        assert.equal(
          atFirst.raw,
          JSON.stringify({ id: firstRecord.id, type: "identified", data: { transaction_id } }),
        );
        assert.equal(
          atUnpinned.raw,
          JSON.stringify({ id: unpinnedRecord.id, type: "identified", data: { transaction_id } }),
        );
        // the latest: `timestamp`, the event's instant, between type and data
        assert.deepEqual(Object.keys(atLatest.body), ["id", "type", "timestamp", "data"]);
        assert.deepEqual(atLatest.body.data, { transaction_id });
        assert.equal(atLatest.body.timestamp, record.event_created_at);
        assert.ok(Math.abs(Date.parse(atLatest.body.timestamp) - Date.now()) < 60_000);

        assert.equal(await verifySignature(atFirst.raw, atFirst.signature, first.secret), true);
        assert.equal(await verifySignature(atLatest.raw, atLatest.signature, latest.secret), true);
        assert.equal(await verifySignature(atUnpinned.raw, atUnpinned.signature, unpinned.secret), true);
        assert.equal(await verifySignature(atLatest.raw, atLatest.signature, first.secret), false);
      },
    );

    await t.step(
      "an update pins, null unpins, absent leaves it; thin and wrapped bodies keep their shape",
      async () => {
        const endpoint = await createEndpoint(company, `${rx.url}/switch`);
        const pin = await company.put(`${ENDPOINTS}/${endpoint.id}`, { payload_version: LATEST });
        assert.equal(pin.status, 200, JSON.stringify(pin.body));
        assert.equal(pin.body.data.payload_version, LATEST);
        const other = await company.put(`${ENDPOINTS}/${endpoint.id}`, { max_concurrency: 3 });
        assert.equal(other.body.data.payload_version, LATEST);
        const unpin = await company.put(`${ENDPOINTS}/${endpoint.id}`, { payload_version: null });
        assert.equal(unpin.body.data.payload_version, FIRST);
        const refused = await company.put(`${ENDPOINTS}/${endpoint.id}`, { payload_version: "2027-01-01" });
        assert.equal(refused.status, 422);
        assert.deepEqual(Object.keys(refused.body.errors), ["payload_version"]);

        const thin = await createEndpoint(company, `${rx.url}/thin`, {
          payload_version: LATEST,
          event_payload_type: "thin",
        });
        const wrapped = await createEndpoint(company, `${rx.url}/wrapped`, {
          payload_version: LATEST,
          wrap_in_notification: true,
        });
        const subject_id = crypto.randomUUID();
        await emit(ctx, company, "subject_approved", { subject_id });
        await eventually("thin and wrapped arrivals", () => rx.at("/thin").length && rx.at("/wrapped").length);
        const [thinRecord] = await recordsOf(company, thin.id);
        assert.equal(rx.at("/thin")[0].raw, JSON.stringify({ id: thinRecord.id, type: "subject_approved" }));
        assert.equal(
          rx.at("/wrapped")[0].raw,
          JSON.stringify({ notification: { type: "subject_approved", subject_id } }),
        );
        assert.equal(
          await verifySignature(rx.at("/wrapped")[0].raw, rx.at("/wrapped")[0].signature, wrapped.secret),
          true,
        );
      },
    );
  } finally {
    await rx.close();
    await ctx.close();
  }
});
