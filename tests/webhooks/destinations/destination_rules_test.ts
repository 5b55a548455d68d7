/**
 * The rules of a broker endpoint as an integrator meets them (docs/webhooks.md, "Destinations"): the url's scheme picks
 * the transport and its plaintext form needs the development setting, a destination is required and a key of another
 * transport is refused by name, credentials are never shown nor left behind, one endpoint per url and destination, and
 * an endpoint keeps its transport. Then the guard that lets the previous release run beside this one: it never gets a
 * slot of a broker endpoint, whatever it writes.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../../support/helpers.ts";
import { ENDPOINTS } from "../../support/endpoints.ts";
import { createSecretBox } from "../../../domain/infra/secret_box.ts";
import { openBrokerCredentials, resealBrokerCredentials } from "../../../domain/webhooks/endpoints/brokers.ts";
import { TEST_ENCRYPTION_KEY } from "../../support/helpers.ts";

const REDIS = "redis://127.0.0.1:6379/0";
const stream = () => ({ stream: `rules-${crypto.randomUUID().slice(0, 8)}` });

Deno.test("broker endpoints: what a body may say, and what the previous release may do", async (t) => {
  const ctx = await setup("destination_rules");
  const strict = await setup("destination_rules_strict", { env: { WEBHOOK_ALLOW_PRIVATE_URLS: "false" } });
  try {
    const company = await newCompany(ctx);

    await t.step("a broker url needs its destination, and a key of another transport is named", async () => {
      const missing = await company.post(ENDPOINTS, { url: REDIS });
      assert.equal(missing.status, 422);
      assert.deepEqual(missing.body.errors, { destination: ["can't be blank"] });
      const foreign = await company.post(ENDPOINTS, {
        url: "amqp://127.0.0.1:5672/%2F",
        destination: { subject: "x" },
      });
      assert.equal(foreign.status, 422);
      assert.match(foreign.body.errors.destination.subject[0], /is a key of nats destinations/);
      const ignored = await company.post(ENDPOINTS, { url: REDIS, destination: { ...stream(), colour: "blue" } });
      assert.equal(ignored.status, 201, JSON.stringify(ignored.body));
      assert.deepEqual(Object.keys(ignored.body.data.destination), ["stream"]);
      const onHttps = await company.post(ENDPOINTS, { url: "https://example.com/h", destination: stream() });
      assert.deepEqual(onHttps.body.errors, { destination: ["is only for a broker url (amqps://, tls://, ...)"] });
    });

    await t.step("a password in the url is refused without being repeated; plaintext needs the setting", async () => {
      const res = await company.post(ENDPOINTS, {
        url: "redis://user:hunter2-secret@127.0.0.1:6379/0",
        destination: stream(),
      });
      assert.equal(res.status, 422);
      assert.ok(!JSON.stringify(res.body).includes("hunter2"), JSON.stringify(res.body));
      assert.match(res.body.errors.url[0], /must not contain credentials/);
      const prod = await newCompany(strict);
      const plain = await prod.post(ENDPOINTS, { url: "redis://broker.example.com:6379/0", destination: stream() });
      assert.equal(plain.status, 422);
      assert.match(plain.body.errors.url[0], /must use rediss:\/\//);
      const tls = await prod.post(ENDPOINTS, { url: "rediss://broker.example.com:6380/0", destination: stream() });
      assert.equal(tls.status, 201, JSON.stringify(tls.body));
      const loopback = await prod.post(ENDPOINTS, { url: "rediss://127.0.0.1:6380/0", destination: stream() });
      assert.match(loopback.body.errors.url[0], /must not point to a private, loopback/);
    });

    await t.step("credentials are sealed, shown masked, kept when sent back, and never follow the url", async () => {
      const made = await company.post(ENDPOINTS, {
        url: REDIS,
        destination: stream(),
        broker_credentials: { username: "payments", password: "correct-horse-battery" },
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const id = made.body.data.id;
      assert.deepEqual(made.body.data.broker_credentials, { username: "payments", password: "****" });
      assert.ok(!JSON.stringify(made.body).includes("correct-horse"));
      const [row] = await ctx.sql`select sealed_broker_credentials from webhook_endpoints where id = ${id}`;
      assert.match(row.sealed_broker_credentials, /^enc:v1:/);
      assert.ok(!row.sealed_broker_credentials.includes("correct-horse"));
      // sent back as shown: kept, with the new user name
      const kept = await company.put(`${ENDPOINTS}/${id}`, {
        broker_credentials: { username: "payments2", password: "****" },
      });
      assert.equal(kept.status, 200, JSON.stringify(kept.body));
      assert.deepEqual(kept.body.data.broker_credentials, { username: "payments2", password: "****" });
      // another broker address: the stored password does not follow it
      const moved = await company.put(`${ENDPOINTS}/${id}`, { url: "redis://127.0.0.2:6379/0" });
      assert.equal(moved.status, 422);
      assert.ok(moved.body.errors.broker_credentials, JSON.stringify(moved.body));
      const given = await company.put(`${ENDPOINTS}/${id}`, {
        url: "redis://127.0.0.2:6379/0",
        broker_credentials: { username: "payments", password: "new-password" },
      });
      assert.equal(given.status, 200, JSON.stringify(given.body));
      const token = await company.put(`${ENDPOINTS}/${id}`, { broker_credentials: { token: "abc" } });
      assert.match(token.body.errors.broker_credentials.token[0], /is not taken by redis/);
    });

    await t.step("after SECRET_ENCRYPTION_KEY is rotated, reseal-secrets moves broker credentials to it", async () => {
      const made = await company.post(ENDPOINTS, {
        url: REDIS,
        destination: stream(),
        broker_credentials: { username: "reseal", password: "sealed-with-the-old-key" },
      });
      const id = made.body.data.id;
      const newKey = "5a".repeat(32);
      const box = await createSecretBox(Uint8Array.fromHex(newKey), [Uint8Array.fromHex(TEST_ENCRYPTION_KEY)]);
      assert.ok((await resealBrokerCredentials(ctx.sql, box)) >= 1);
      const [row] = await ctx.sql`select sealed_broker_credentials from webhook_endpoints where id = ${id}`;
      assert.ok(row.sealed_broker_credentials.startsWith(box.currentPrefix));
      const alone = await createSecretBox(Uint8Array.fromHex(newKey));
      assert.deepEqual(await openBrokerCredentials(alone, id, row.sealed_broker_credentials), {
        username: "reseal",
        password: "sealed-with-the-old-key",
      });
    });

    await t.step("one endpoint per url and destination; an endpoint keeps its transport", async () => {
      const destination = stream();
      const first = await company.post(ENDPOINTS, { url: REDIS, destination });
      assert.equal(first.status, 201);
      const again = await company.post(ENDPOINTS, { url: REDIS, destination });
      assert.equal(again.status, 409);
      assert.match(again.body.errors.url[0], /URL and destination of active endpoint/);
      const otherStream = await company.post(ENDPOINTS, { url: REDIS, destination: stream() });
      assert.equal(otherStream.status, 201);
      const toHttp = await company.put(`${ENDPOINTS}/${first.body.data.id}`, { url: "https://example.com/hooks" });
      assert.equal(toHttp.status, 422);
      assert.match(toHttp.body.errors.url[0], /cannot move this redis endpoint to another transport/);
      const oauth = await company.put(`${ENDPOINTS}/${first.body.data.id}`, {
        oauth2: { token_url: "https://auth.example.com/t", client_id: "c", client_secret: "s" },
      });
      assert.deepEqual(oauth.body.errors, { oauth2: ["is only for an https url"] });
    });

    await t.step("the previous release's slot statements never give it a broker endpoint's slot", async () => {
      const made = await company.post(ENDPOINTS, { url: REDIS, destination: stream(), max_concurrency: 3 });
      const id = made.body.data.id;
      const slots = async () =>
        (await ctx.sql`select slot from webhook_slots where endpoint_id = ${id} order by slot`).map((r) => r.slot);
      assert.deepEqual(await slots(), [1_000_000, 1_000_001, 1_000_002]);
      // 1.3.0's fitSlots, as it runs when it updates or enables an endpoint
      await ctx.sql`
        insert into webhook_slots (endpoint_id, slot)
        select e.id, s from webhook_endpoints e cross join generate_series(0, e.max_concurrency - 1) s
        where e.id = ${id} and e.status = 'active' on conflict do nothing`;
      await ctx.sql`
        delete from webhook_slots s using webhook_endpoints e
        where e.id = s.endpoint_id and e.id = ${id}
          and s.slot >= case when e.status = 'active' then e.max_concurrency else 0 end
          and (s.leased_until is null or s.leased_until < now())`;
      assert.deepEqual(await slots(), [1_000_000, 1_000_001, 1_000_002]);
      // 1.3.0's claim asks for a free slot below the endpoint's limit: there is none
      const [free] = await ctx.sql`
        select count(*)::int as n from webhook_slots s join webhook_endpoints e on e.id = s.endpoint_id
        where s.endpoint_id = ${id}
          and s.slot < endpoint_slot_limit(e.status, e.delivery_mode, e.max_concurrency)`;
      assert.equal(free.n, 0);
      // and it cannot turn the endpoint into an HTTP one
      await assert.rejects(
        ctx.sql`update webhook_endpoints set url = 'https://example.com/x' where id = ${id}`,
        /does not belong to transport redis/,
      );
      // this release's own resizing and disabling still work
      assert.equal((await company.put(`${ENDPOINTS}/${id}`, { max_concurrency: 1 })).status, 200);
      assert.deepEqual(await slots(), [1_000_000]);
      assert.equal((await company.delete(`${ENDPOINTS}/${id}`)).status, 200);
      assert.deepEqual(await slots(), []);
    });
  } finally {
    await ctx.close();
    await strict.close();
  }
});
