/// <reference lib="dom" />
/**
 * The console's details in a real browser: the catalogue's longest type names on every page at 360 px (search results
 * and an open delivery included), a search that shows only what it found (no delivery panel left open, the chart
 * counting its records, the box emptied on other pages), records queued behind a sequential endpoint's retrying head
 * saying what they wait for, and the delivery panel: in view when opened, the request its attempts send with every
 * secret masked, no Acknowledge once succeeded. A file of its own: console_pages_test.ts keeps its three endpoints.
 */
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { emitEvent, EVENT_TYPES } from "../../domain/webhooks/outbox/events.ts";
import { CATALOGUE } from "../../domain/webhooks/outbox/catalogue.ts";
import { newId } from "../../domain/basics/ids.ts";
import { freePort } from "../support/free_port.ts";
import { eventually, setup } from "../support/helpers.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import {
  assertReadable,
  haveChromium,
  launchBrowser,
  rows,
  search,
  servedConsole,
  signIn,
  textOf,
  view,
} from "../support/console_page.ts";
import { ENDPOINTS, EVENTS } from "../support/endpoints.ts";

const hidden = (page: Page, selector: string) => page.$eval(selector, (el) => (el as HTMLElement).hidden);

/** The catalogue's two longest type names: the ones a narrow screen has to fit. */
const LONGEST = [...EVENT_TYPES].sort((a, b) => b.length - a.length).slice(0, 2);

/** Opens a delivery from a list by its row's id and waits for its facts; a list drawn again meanwhile is clicked again. */
async function open(page: Page, tbody: string, id: string) {
  await eventually(`delivery ${id} open`, async () => {
    // closed first, so that what is waited for is this click's answer, not the panel left open before
    await page.$eval("#delivery", (el) => (el as HTMLElement).hidden = true);
    await page.$eval(`#${tbody} tr[data-id="${id}"] button`, (b) => (b as HTMLButtonElement).click());
    return await page.waitForFunction(
      (id) =>
        !document.getElementById("delivery")!.hidden &&
        document.getElementById("delivery-facts")!.textContent!.startsWith(`Id${id}`),
      { timeout: 2_000 },
      id,
    ).then(() => true, () => false);
  });
}

Deno.test({
  name: "the console's details: long type names at 360 px, search, queued records, the request sent",
  ignore: !haveChromium,
  fn: async (t) => {
    // a refused attempt is tried again in 10 minutes: the sequential endpoint's head stays pending and retrying
    const ctx = await setup("console_details", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "600" } });
    const rx = startReceiver(() => new Response("ok"));
    const { server, base, companyId, username, password, call } = await servedConsole(ctx, "details");
    const apiKey = "key-0123456789abcdef";
    const all = await call("POST", ENDPOINTS, {
      url: `${rx.url}/all`,
      inject_secret_in_body: true,
      headers: { "X-Tenant": "acme" },
      secret_headers: { "X-Api-Key": apiKey },
    });
    // nothing listens here: every attempt is refused
    const downUrl = `http://127.0.0.1:${freePort()}/down`;
    const sequential = await call("POST", ENDPOINTS, {
      url: downUrl,
      enabled_events: ["identified"],
      delivery_mode: "sequential",
    });
    const long: { id: string }[] = [];
    for (const type of LONGEST) {
      const { example } = CATALOGUE.find((e) => e.type === type)!;
      long.push(await ctx.sql.begin((tx) => emitEvent(tx, companyId, type, example.data)));
    }
    const first = await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
    const second = await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
    await eventually("every event arrived where the receiver answers", () => rx.at("/all").length === 4);
    const [head] = await eventually("the sequential head refused once", async () => {
      const found = await ctx.sql<{ id: string; next_attempt_at: Date }[]>`
        select id, next_attempt_at from webhook_deliveries
        where company_id = ${companyId} and endpoint_id = ${sequential.id} and attempts = 1 and status = 'pending'`;
      return found.length === 1 && found;
    });
    const records = (await call("GET", `${EVENTS}?per_page=100`)) as {
      id: string;
      event_id: string;
      endpoint_id: string;
    }[];
    const recordOf = (eventId: string, endpointId: string) =>
      records.find((r) => r.event_id === eventId && r.endpoint_id === endpointId)!.id;
    const queued = recordOf(second.id, sequential.id);
    assert.equal(recordOf(first.id, sequential.id), head.id);
    const longest = recordOf(long[0].id, all.id);

    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const problems: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && problems.push(m.text()));
    page.on("pageerror", (err) => problems.push(String(err)));
    try {
      await page.goto(`${base}/console`);
      await signIn(page, username, password);

      await t.step("a record queued behind a retrying head says it waits for the head and its next try", async () => {
        const listed = await call("GET", `${EVENTS}?endpoint_id=${sequential.id}`);
        const waiting = listed.find((r: { id: string }) => r.id === queued);
        assert.equal(waiting.next_attempt_at, null);
        assert.deepEqual(waiting.waiting_for, {
          delivery_id: head.id,
          next_attempt_at: head.next_attempt_at.toISOString(),
        });
        const detail = await call("GET", `${EVENTS}/${queued}`);
        assert.equal(detail.waiting_for.delivery_id, head.id);
        // the head waits for its own time, nothing else
        const first = listed.find((r: { id: string }) => r.id === head.id);
        assert.equal(first.waiting_for, undefined);
        assert.equal(first.next_attempt_at, head.next_attempt_at.toISOString());

        await view(page, `#endpoint/${sequential.id}`);
        await page.waitForFunction(
          (id) => document.querySelector(`#endpoint-delivery-rows tr[data-id="${id}"]`),
          { timeout: 5_000 },
          queued,
        );
        const hhmm = `${head.next_attempt_at.toISOString().slice(11, 16)} UTC`;
        const [row] = (await rows(page, "endpoint-delivery-rows")).filter((r) => !r[3].startsWith("1 attempt"));
        assert.match(
          row[3],
          new RegExp(`^0 attempts, waits for ${head.id.slice(0, 8)}…, next try ${hhmm} \\(in (9|10) min\\)$`),
        );
        assert.doesNotMatch(await textOf(page, "#endpoint-delivery-rows"), /due now/);
        await open(page, "endpoint-delivery-rows", queued);
        const facts = await textOf(page, "#delivery-facts");
        assert.match(facts, new RegExp(`Waiting forthe delivery ahead in the queue, ${head.id}, next try ${hhmm}`));
        assert.doesNotMatch(facts, /due now/);
        await assertReadable(page, "a queued record open");
      });

      await t.step("the delivery panel opens in view, at 1280 and 360 px", async () => {
        for (const [width, height] of [[360, 740], [1280, 900]]) {
          await page.setViewport({ width, height });
          await view(page, "#log");
          await page.waitForFunction(
            (id) => document.querySelector(`#delivery-rows tr[data-id="${id}"]`),
            { timeout: 5_000 },
            longest,
          );
          await page.evaluate(() => globalThis.scrollTo(0, 0));
          await open(page, "delivery-rows", longest);
          const box = await page.$eval("#delivery", (el) => {
            const r = el.getBoundingClientRect();
            return { top: r.top, bottom: r.bottom, height: r.height, window: globalThis.innerHeight };
          });
          const visible = Math.min(box.bottom, box.window) - Math.max(box.top, 0);
          assert.ok(
            box.top >= 0 && visible >= Math.min(box.height, box.window / 2),
            `the panel is in view at ${width} px: ${JSON.stringify(box)}`,
          );
        }
      });

      await t.step("a succeeded delivery offers no Acknowledge; a pending one does", async () => {
        await open(page, "delivery-rows", longest);
        assert.match(await textOf(page, "#delivery-facts"), /Statussucceeded/);
        assert.equal(await hidden(page, "#delivery-acknowledge"), true);
        await open(page, "delivery-rows", head.id);
        assert.equal(await hidden(page, "#delivery-acknowledge"), false);
      });

      await t.step("the delivery panel shows the request sent with its secrets masked", async () => {
        await view(page, "#log");
        await page.waitForFunction(
          (id) => document.querySelector(`#delivery-rows tr[data-id="${id}"]`),
          { timeout: 5_000 },
          longest,
        );
        await open(page, "delivery-rows", longest);
        // the request, as the receiver got it but for the secrets
        assert.equal(await hidden(page, "#delivery-request"), false);
        const shownBody = JSON.parse(await textOf(page, "#delivery-request-body"));
        const arrived = rx.at("/all").find((a) => a.body.id === longest)!;
        assert.equal(arrived.body.secret, all.secret);
        assert.equal(shownBody.secret, "[signing secret]");
        assert.deepEqual({ ...shownBody, secret: null }, { ...arrived.body, secret: null });
        const headers = await textOf(page, "#delivery-request-headers");
        assert.match(headers, /^x-tenant: acme$/im);
        assert.match(headers, /^x-api-key: \S*cdef$/im);
        assert.match(headers, new RegExp(`^webhook-id: ${longest}$`, "m"));
        assert.match(headers, /^content-type: application\/json$/m);
        const page_ = await textOf(page, "body");
        assert.ok(!page_.includes(apiKey), "the secret header's value is not on the page");
        assert.ok(!page_.includes(all.secret), "the signing secret is not on the page");
        await assertReadable(page, "a succeeded delivery open, with its request");
      });

      await t.step("a search closes the delivery opened before it", async () => {
        // the head's panel is open on the endpoint's page; the log's panel is opened too
        await view(page, "#log");
        await page.waitForFunction(
          (id) => document.querySelector(`#delivery-rows tr[data-id="${id}"]`),
          { timeout: 5_000 },
          head.id,
        );
        await open(page, "delivery-rows", head.id);
        await search(page, long[1].id);
        assert.match(await textOf(page, "#search-summary"), new RegExp(`^Event ${long[1].id} \\(${LONGEST[1]}\\)`));
        assert.equal(await hidden(page, "#delivery"), true, "the delivery opened before the search is closed");
        const found = await rows(page, "delivery-rows");
        assert.deepEqual(found.map((r) => r[1]), [LONGEST[1]]);
      });

      await t.step("the chart counts what the search found, and says so", async () => {
        if (await hidden(page, "#search-result")) await search(page, long[1].id);
        const counted = () =>
          page.$$eval(
            "#chart rect title",
            (ts) => ts.reduce((n, t) => n + Number(/: (\d+) \w+$/.exec(t.textContent!)![1]), 0),
          );
        await eventually("the chart counting the search's one record", async () => await counted() === 1, 3_000)
          .catch(async (err) => {
            throw new Error(`${err.message}: it counts ${await counted()}`);
          });
        assert.equal(await textOf(page, "#chart-scope"), ", of the event searched");
        await assertReadable(page, "the log, searched by event id");
      });

      await t.step("another page leaves the search: its box is empty, the log whole again", async () => {
        if (await hidden(page, "#search-result")) await search(page, long[1].id);
        // another page: the box is empty, and the log is whole again when it comes back
        await view(page, "#overview");
        assert.equal(await page.$eval("#search-id", (el) => (el as HTMLInputElement).value), "");
        await view(page, "#log");
        await page.waitForFunction(() => document.querySelectorAll("#delivery-rows tr").length === 6, {
          timeout: 5_000,
        });
        assert.equal(await hidden(page, "#search-result"), true);
        await page.waitForFunction(() => document.getElementById("chart-scope")!.textContent === "", {
          timeout: 5_000,
        });
      });

      await t.step("every page fits a 360 px screen with the catalogue's longest type names", async () => {
        await page.setViewport({ width: 360, height: 740 });
        for (const hash of ["#overview", "#log", `#endpoint/${all.id}`, `#endpoint/${sequential.id}`, "#catalogue"]) {
          await view(page, hash);
          if (hash !== "#overview" && hash !== "#catalogue") {
            await page.waitForFunction(
              (type) => document.body.textContent!.includes(type),
              { timeout: 5_000 },
              LONGEST[0],
            );
          }
          await assertReadable(page, `${hash} at 360 px`);
        }
        await search(page, long[0].id);
        assert.deepEqual((await rows(page, "delivery-rows")).map((r) => r[1]), [LONGEST[0]]);
        await assertReadable(page, "the search's result at 360 px");
        await search(page, longest);
        await page.waitForFunction(() => !document.getElementById("delivery")!.hidden, { timeout: 5_000 });
        await assertReadable(page, "a delivery record found, open, at 360 px");
        assert.deepEqual(problems, []);
      });
    } finally {
      await browser.close();
      await server.shutdown();
      await rx.close();
      await ctx.close();
    }
  },
});
