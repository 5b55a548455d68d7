/// <reference lib="dom" />
/**
 * A broker endpoint in the console, in a real browser (docs/console.md, "Broker endpoints"): created through the form
 * with a Redis Streams URL, its page showing transport, stream and masked credentials, a delivery the broker answered,
 * an edit that keeps the password, and an endpoint whose broker is unreachable showing its last error. Its own file:
 * the local Redis is what it needs beside the browser, which the HTTP stories of this folder do not.
 */
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { newId } from "../../domain/basics/ids.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { freePort } from "../support/free_port.ts";
import { eventually, setup } from "../support/helpers.ts";
import {
  assertReadable,
  click,
  fontDependentMarks,
  haveChromium,
  launchBrowser,
  rows,
  servedConsole,
  signIn,
  textOf,
  view,
} from "../support/console_page.ts";
import { ENDPOINTS } from "../support/endpoints.ts";

const REDIS_URL = "redis://127.0.0.1:6379/0";

Deno.test({
  name: "the console with a broker endpoint: the form, its page, the broker's answer, an unreachable broker",
  ignore: !haveChromium,
  fn: async (t) => {
    // the second attempt of a failed delivery is 10 minutes away: it stays pending and retrying throughout
    const ctx = await setup("console_brokers", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "600" } });
    const { server, base, companyId, username, password, call } = await servedConsole(ctx, "brokers");
    const stream = `console-test:${newId()}`;
    // the local Redis's default user has no password, so any password opens it: this one must never be on the page
    const brokerPassword = `pw-${crypto.randomUUID()}`;
    const reader = new Redis({ host: "127.0.0.1", port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 860 });
    const problems: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && problems.push(m.text()));
    page.on("pageerror", (err) => problems.push(String(err)));
    page.on("requestfailed", (req) => problems.push(`${req.url()}: ${req.failure()?.errorText}`));
    /** Which of the form's groups show: the transport's destination, the credentials, the HTTP-only fields. */
    const formShows = () =>
      page.evaluate(() => {
        const shown = (id: string) => (document.getElementById(id) as HTMLElement).checkVisibility();
        return {
          destination: [...document.querySelectorAll<HTMLFieldSetElement>("fieldset[data-transport]")]
            .filter((f) => f.checkVisibility()).map((f) => f.dataset.transport),
          credentials: shown("endpoint-credentials"),
          token: shown("endpoint-broker-token"),
          clientCertificate: shown("endpoint-client-cert"),
          oauth2: shown("endpoint-oauth2-url"),
        };
      });
    /** The endpoint page's settings, read in one go: a read of the page still running may draw them again. */
    const settingsOf = () =>
      page.evaluate(() =>
        Object.fromEntries(
          [...document.querySelectorAll("#endpoint-settings dt")].map((dt) => [
            dt.textContent,
            dt.nextElementSibling!.textContent,
          ]),
        )
      );
    try {
      await page.goto(`${base}/console`);
      await signIn(page, username, password);
      let id = "";

      await t.step(
        "the form follows the URL: a broker's destination and credentials, no HTTP-only fields",
        async () => {
          await page.waitForFunction(() => (document.getElementById("endpoint-form-panel") as HTMLDetailsElement).open);
          assert.deepEqual(await formShows(), {
            destination: [],
            credentials: false,
            token: false,
            clientCertificate: true,
            oauth2: true,
          });
          const expected = {
            "amqps://mq.example/%2F": ["amqp", false],
            "tls://nats.example:4222": ["nats", true],
            "mqtts://mqtt.example": ["mqtt", false],
            [REDIS_URL]: ["redis", false],
          };
          for (const [url, [transport, token]] of Object.entries(expected)) {
            await page.$eval("#endpoint-url", (el) => (el as HTMLInputElement).value = "");
            await page.type("#endpoint-url", url);
            assert.deepEqual(await formShows(), {
              destination: [transport],
              credentials: true,
              token,
              clientCertificate: false,
              oauth2: false,
            }, url);
          }
          // the hint says which broker the URL names, for a screen reader too (it is a live region)
          assert.match(await textOf(page, "#endpoint-url-hint"), /^Redis Streams: /);
          const unlabelled = await page.$$eval(
            "#endpoint-form input:not([type=hidden]), #endpoint-form select",
            (fields) => fields.filter((f) => !(f as HTMLInputElement).labels?.length).map((f) => f.id),
          );
          assert.deepEqual(unlabelled, []);
          await page.setViewport({ width: 360, height: 740 });
          await assertReadable(page, "the form with a broker's fields at 360 px");
          await page.setViewport({ width: 1280, height: 860 });
          await assertReadable(page, "the form with a broker's fields");
        },
      );

      await t.step("created through the form, it lists with its transport, stream and masked credentials", async () => {
        await page.type("#endpoint-stream", stream);
        await page.type("#endpoint-maxlen", "1000");
        await page.type("#endpoint-broker-username", "default");
        await page.type("#endpoint-broker-password", brokerPassword);
        await click(page, "#endpoint-form", "Create endpoint");
        await page.waitForFunction(() => document.querySelectorAll("#endpoint-rows tr").length === 1, {
          timeout: 5_000,
        }).catch(async (err) => {
          throw new Error(`${err.message}; the page said "${await textOf(page, "#notice")}"; ${problems.join(" | ")}`);
        });
        const [[url, settings, status]] = await rows(page, "endpoint-rows");
        assert.deepEqual([url, status], [REDIS_URL, "active"]);
        assert.equal(
          settings,
          `Redis Streamsstream ${stream}, trimmed to about 1000 entriescredentials: username default, password ****` +
            "parallelhmac-sha256, shared secretevery event type",
        );
        // what the API holds is what the form said
        const [endpoint] = await call("GET", ENDPOINTS);
        id = endpoint.id;
        assert.deepEqual(
          [endpoint.transport, endpoint.destination, endpoint.broker_credentials],
          ["redis", { stream, maxlen: 1000 }, { username: "default", password: "****" }],
        );
        assert.ok(!(await page.content()).includes(brokerPassword), "the broker's password is not on the page");
      });

      await t.step("its page: transport, where it publishes, credentials masked, no HTTP-only settings", async () => {
        await page.click(`#endpoint-rows tr[data-id="${id}"] a`);
        await page.waitForFunction(
          (url) => document.getElementById("endpoint-title")!.textContent === url,
          { timeout: 5_000 },
          REDIS_URL,
        );
        const settings = await settingsOf();
        assert.equal(settings["Transport"], "Redis Streams");
        assert.equal(settings["Publishes to"], `stream ${stream}, trimmed to about 1000 entries`);
        assert.equal(settings["Broker credentials"], "username default, password ****");
        assert.equal(settings["OAuth2"], undefined);
        assert.equal(settings["Client certificate"], undefined);
      });

      await t.step("an event's delivery shows the broker's answer, the entry Redis added", async () => {
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
        await eventually("the delivery succeeded on the page", async () => {
          await view(page, "#overview");
          await view(page, `#endpoint/${id}`);
          return await page.waitForFunction(
            () => document.querySelector("#endpoint-delivery-rows tr[data-status=succeeded]"),
            { timeout: 1_000 },
          ).then(() => true, () => false);
        });
        // clicked in the page: a read of the page still running may draw its rows again meanwhile
        await page.$eval("#endpoint-delivery-rows tr button", (b) => (b as HTMLButtonElement).click());
        await page.waitForFunction(() => document.querySelector("#endpoint-page #attempt-rows tr"), { timeout: 5_000 });
        const [[number, , answer, , response]] = await rows(page, "attempt-rows");
        assert.deepEqual([number, answer], ["1", "broker answered"]);
        const entryId = /^XADD id (\d+-\d+)$/.exec(response)?.[1];
        assert.ok(entryId, response);
        assert.equal(await textOf(page, "#attempt-rows-table th:nth-child(3)"), "Answer");
        // the entry the page names is in the stream, and it is this delivery (its webhook-id)
        const [[shownId, fields]] = await reader.xrange(stream, "-", "+");
        assert.equal(shownId, entryId);
        const deliveryId = await page.$eval("#endpoint-delivery-rows tr", (tr) => (tr as HTMLElement).dataset.id);
        assert.equal(fields[fields.indexOf("webhook-id") + 1], deliveryId);
        assert.match(await textOf(page, "#delivery-request-note"), /^Each attempt publishes this body as one message/);
        await assertReadable(page, "a broker endpoint's page, a delivery open");
        await page.setViewport({ width: 360, height: 740 });
        await assertReadable(page, "a broker endpoint's page, a delivery open, at 360 px");
        await page.setViewport({ width: 1280, height: 860 });
      });

      await t.step("edited in the form: the destination changes, the password kept without being shown", async () => {
        await click(page, "#endpoint-actions", "Edit");
        await page.waitForFunction(() => !document.getElementById("view-overview")!.hidden);
        const shown = await page.evaluate(() =>
          ["endpoint-stream", "endpoint-maxlen", "endpoint-broker-username", "endpoint-broker-password"].map((id) =>
            (document.getElementById(id) as HTMLInputElement).value
          )
        );
        assert.deepEqual(shown, [stream, "1000", "default", ""]);
        assert.deepEqual((await formShows()).destination, ["redis"]);
        await page.$eval("#endpoint-maxlen", (el) => (el as HTMLInputElement).value = "");
        await page.type("#endpoint-maxlen", "500");
        await click(page, "#endpoint-form", "Save endpoint");
        await eventually(
          "the new length in the row",
          async () => (await rows(page, "endpoint-rows"))[0]?.[1].includes("trimmed to about 500 entries"),
        );
        const [row] = await ctx.sql<{ sealed_broker_credentials: string }[]>`
          select sealed_broker_credentials from webhook_endpoints where id = ${id}`;
        assert.match(row.sealed_broker_credentials, /^enc:v1:/);
        const [endpoint] = await call("GET", ENDPOINTS);
        assert.deepEqual(endpoint.broker_credentials, { username: "default", password: "****" });
        // still delivered with the credentials kept: the next event arrives too
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
        await eventually("a second entry in the stream", async () => (await reader.xlen(stream)) === 2);
      });

      await t.step("a broker that does not answer: the endpoint shows its last error, retried", async () => {
        // nothing listens on this port: every connection is refused
        const downUrl = `redis://127.0.0.1:${freePort()}/0`;
        const down = await call("POST", ENDPOINTS, {
          url: downUrl,
          destination: { stream: `${stream}:down` },
          enabled_events: ["identified"],
        });
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
        await eventually("the refused attempt recorded", async () => {
          const [d] = await ctx.sql<{ attempts: number }[]>`
            select attempts from webhook_deliveries where endpoint_id = ${down.id}`;
          return d?.attempts === 1;
        });
        await view(page, `#endpoint/${down.id}`);
        const notes = await eventually("the last failure among the notes", async () => {
          await view(page, "#overview");
          await view(page, `#endpoint/${down.id}`);
          return await page.waitForFunction(
            () => document.getElementById("endpoint-notes")!.textContent!.includes("Last failure"),
            { timeout: 1_000 },
          ).then(() => textOf(page, "#endpoint-notes"), () => false);
        });
        assert.match(
          String(notes),
          /^Next attempt \d\d:\d\d UTC \(in (9|10) min\) after connection refused \(ECONNREFUSED\)Last failure \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: connection refused \(ECONNREFUSED\)$/,
        );
        assert.equal((await settingsOf())["Broker credentials"], "none");
        // the overview says it needs attention, with the broker's error, as for an HTTP receiver
        await view(page, "#overview");
        await click(page, "#attention", "Refresh");
        await page.waitForFunction(
          (url) => document.getElementById("attention-list")!.textContent!.includes(url),
          { timeout: 10_000 },
          downUrl,
        );
        const attention = await textOf(page, "#attention-list");
        assert.match(
          attention,
          /1 retrying after a failed attempt \(connection refused \(ECONNREFUSED\)\), next attempt .*: fix the broker,/,
        );
        const listed = (await rows(page, "endpoint-rows")).find((r) => r[0] === downUrl);
        assert.match(listed![4], /last failure .* UTC: connection refused \(ECONNREFUSED\)$/);
        // its delivery's attempt was not acknowledged, and says why
        await view(page, `#endpoint/${down.id}`);
        await page.waitForFunction(() => document.querySelector("#endpoint-delivery-rows tr button"), {
          timeout: 10_000,
        });
        // clicked in the page: a read of the page still running may draw its rows again meanwhile
        await page.$eval("#endpoint-delivery-rows tr button", (b) => (b as HTMLButtonElement).click());
        // the delivery opened before, the other endpoint's, is replaced by this one's
        await page.waitForFunction(
          (url) =>
            !document.getElementById("delivery")!.hidden &&
            document.getElementById("delivery-facts")!.textContent!.includes(url),
          { timeout: 10_000 },
          downUrl,
        );
        const [[, , answer, , response]] = await rows(page, "attempt-rows");
        assert.deepEqual([answer, response], ["not acknowledged", "connection refused (ECONNREFUSED)"]);
        assert.match(await textOf(page, "#delivery-facts"), /Last errorconnection refused \(ECONNREFUSED\)/);
        assert.deepEqual(await fontDependentMarks(page), []);
        // both broker endpoints listed, and their pages, read at a phone's width too
        await page.setViewport({ width: 360, height: 740 });
        for (const hash of ["#overview", `#endpoint/${down.id}`]) {
          await view(page, hash);
          await assertReadable(page, `${hash} with broker endpoints at 360 px`);
        }
        assert.deepEqual(problems, []);
      });
    } finally {
      await reader.del(stream).catch(() => {});
      reader.disconnect();
      await browser.close();
      await server.shutdown();
      await ctx.close();
    }
  },
});
