/// <reference lib="dom" />
/**
 * Batches in the console, in a real browser (docs/webhooks.md, "Batches"): a batched endpoint's setting on its page,
 * its records of one batch together under one batch label that marks them, and a record's batch in its detail. A file
 * of its own: the other console files' endpoints send one event a request.
 */
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { eventually, setup } from "../support/helpers.ts";
import { seqId, startReceiver } from "../support/webhook_receiver.ts";
import {
  assertAccessible,
  haveChromium,
  launchBrowser,
  rows,
  servedConsole,
  signIn,
  textOf,
  view,
} from "../support/console_page.ts";
import { ENDPOINTS, EVENTS } from "../support/endpoints.ts";

Deno.test({
  name: "the console's batches: the setting, a batch's records together under its label, the detail's batch id",
  ignore: !haveChromium,
  fn: async (t) => {
    const ctx = await setup("console_batches", { worker: true });
    const rx = startReceiver(() => new Response("ok"));
    const { server, base, companyId, username, password, call } = await servedConsole(ctx, "batches");
    const endpoint = await call("POST", ENDPOINTS, {
      url: `${rx.url}/batched`,
      enabled_events: ["identified"],
      batch: { max_events: 3, max_wait_ms: 300 },
    });
    // three at once fill one batch
    await ctx.sql.begin(async (tx) => {
      for (let i = 1; i <= 3; i++) await emitEvent(tx, companyId, "identified", { transaction_id: seqId(i) });
    });
    const records = await eventually("the three delivered in one batch", async () => {
      const listed = (await call("GET", `${EVENTS}?endpoint_id=${endpoint.id}`)) as {
        id: string;
        status: string;
        batch_id: string | null;
      }[];
      return listed.length === 3 && listed.every((r) => r.status === "succeeded" && r.batch_id) && listed;
    });
    assert.equal(rx.at("/batched").length, 1, "one request");
    const batchId = records[0].batch_id!;
    assert.ok(records.every((r) => r.batch_id === batchId));

    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 860 });
    try {
      await page.goto(`${base}/console`);
      await signIn(page, username, password);
      await view(page, `#endpoint/${endpoint.id}`);
      await page.waitForFunction(() => document.querySelectorAll("#endpoint-delivery-rows tr").length === 3, {
        timeout: 5_000,
      });

      await t.step("the endpoint's settings say its batches", async () => {
        const settings = await textOf(page, "#endpoint-settings");
        assert.match(settings, /Batchesup to 3 events a request, after at most 300 ms/);
      });

      await t.step("its three records stand under one batch label, which marks them", async () => {
        const listed = await rows(page, "endpoint-delivery-rows");
        assert.deepEqual(listed.map((r) => r[4]), Array(3).fill(`batch ${batchId.slice(0, 8)}`));
        await page.click("#endpoint-delivery-rows tr:first-child .batch-label");
        const marked = await page.$$eval("#endpoint-delivery-rows tr.in-batch", (trs) => trs.length);
        assert.equal(marked, 3);
        const pressed = await page.$eval(
          "#endpoint-delivery-rows tr:first-child .batch-label",
          (b) => b.getAttribute("aria-pressed"),
        );
        assert.equal(pressed, "true");
        await assertAccessible(page, "an endpoint page with a batch marked");
      });

      await t.step("a record's detail shows its batch id and the batch's size", async () => {
        await page.click("#endpoint-delivery-rows tr:first-child button.link");
        await page.waitForFunction(() => /Batch/.test(document.getElementById("delivery-facts")!.textContent ?? ""), {
          timeout: 5_000,
        });
        const facts = await textOf(page, "#delivery-facts");
        assert.ok(facts.includes(`Batch${batchId}: the request carried the batch's 3 events`), facts);
      });

      await t.step("the form shows the setting, and clearing it sends one event a request", async () => {
        await page.evaluate(() => {
          const edit = [...document.querySelectorAll<HTMLButtonElement>("#endpoint-actions button")]
            .find((b) => b.textContent === "Edit");
          edit!.click();
        });
        assert.equal(await page.$eval("#endpoint-batch-size", (i) => (i as HTMLInputElement).value), "3");
        assert.equal(await page.$eval("#endpoint-batch-wait", (i) => (i as HTMLInputElement).value), "300");
        await page.$eval("#endpoint-batch-size", (i) => (i as HTMLInputElement).value = "");
        await page.click("#endpoint-save");
        await eventually(
          "batches removed",
          async () => (await call("GET", `${ENDPOINTS}/${endpoint.id}`)).batch === null,
        );
        // a broker URL hides the batch fields with the other HTTP-only ones
        await page.$eval("#endpoint-url", (i) => {
          (i as HTMLInputElement).value = "amqps://broker.test";
          i.dispatchEvent(new Event("input"));
        });
        assert.equal(await page.$eval("#endpoint-http-only", (d) => (d as HTMLElement).hidden), true);
        assert.equal(await page.$eval("#endpoint-batch-size", (i) => (i as HTMLInputElement).disabled), true);
      });
    } finally {
      await browser.close();
      await server.shutdown();
      await rx.close();
      await ctx.close();
    }
  },
});
