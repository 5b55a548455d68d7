/// <reference lib="dom" />
/**
 * The console's pages in a real browser, for an integrator with three endpoints: one that answers, one whose receiver
 * is down (connection refused, so its delivery is retried) and one disabled. What needs attention, the endpoint rows'
 * settings, an endpoint's own page, the search by delivery, event and transaction id, the chart's hours, marks that
 * need no font, and axe-core at 1280 and 360 px. A file of its own: console_test.ts tells the first-hour story.
 */
// The functions handed to page.evaluate run in the browser: they are typed against the DOM.
import assert from "node:assert/strict";
import { newId } from "../../domain/basics/ids.ts";
import { emitEvent } from "../../domain/webhooks/outbox/events.ts";
import { chargeFilterTime } from "../../domain/webhooks/outbox/filter_time.ts";
import { freePort } from "../support/free_port.ts";
import { eventually, setup } from "../support/helpers.ts";
import { startReceiver } from "../support/webhook_receiver.ts";
import {
  assertReadable,
  click,
  fontDependentMarks,
  haveChromium,
  launchBrowser,
  rows,
  screenshot,
  search,
  servedConsole,
  signIn,
  textOf,
  view,
} from "../support/console_page.ts";
import { ENDPOINTS } from "../support/endpoints.ts";

Deno.test({
  name: "the console's pages: attention, an endpoint's page, search by id, the chart's hours, at 1280 and 360 px",
  ignore: !haveChromium,
  fn: async (t) => {
    // the second attempt of a refused delivery is 10 minutes away: it stays pending and retrying throughout
    const ctx = await setup("console_pages", { worker: true, env: { WEBHOOK_RETRY_SCHEDULE: "600" } });
    const rx = startReceiver(() => new Response("ok"));
    const { server, base, companyId, username, password, call } = await servedConsole(ctx, "pages");
    // nothing listens on this port: every attempt is refused
    const downUrl = `http://127.0.0.1:${freePort()}/down`;
    const up = await call("POST", ENDPOINTS, { url: `${rx.url}/up`, enabled_events: ["identified", "wire_created"] });
    const down = await call("POST", ENDPOINTS, {
      url: downUrl,
      enabled_events: ["identified"],
      signature_scheme: "ed25519",
    });
    const off = await call("POST", ENDPOINTS, { url: `${rx.url}/off` });
    await call("DELETE", `${ENDPOINTS}/${off.id}`);
    const transactionId = newId();
    const identified = await ctx.sql.begin((tx) =>
      emitEvent(tx, companyId, "identified", { transaction_id: transactionId })
    );
    await ctx.sql.begin((tx) =>
      emitEvent(tx, companyId, "wire_created", { wire_id: newId(), transaction_ids: [newId(), transactionId] })
    );
    await ctx.sql.begin((tx) => emitEvent(tx, companyId, "payment_approved", { transaction_id: newId() }));
    await eventually("both events arrived where the receiver answers", () => rx.at("/up").length === 2);
    const [refused] = await eventually("the refused attempt recorded", async () => {
      const found = await ctx.sql<{ id: string; last_error: string }[]>`
        select id, last_error from webhook_deliveries
        where company_id = ${companyId} and endpoint_id = ${down.id} and attempts = 1 and status = 'pending'`;
      return found.length === 1 && found;
    });
    assert.match(refused.last_error, /ECONNREFUSED/);

    const browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 860 });
    const problems: string[] = [];
    page.on("console", (m) => m.text().includes("Content Security Policy") && problems.push(m.text()));
    page.on("pageerror", (err) => problems.push(String(err)));
    page.on("requestfailed", (req) => problems.push(`${req.url()}: ${req.failure()?.errorText}`));
    try {
      await page.goto(`${base}/console`);
      await signIn(page, username, password);

      await t.step(
        "an endpoint being retried after ECONNREFUSED needs attention, with its error and next attempt",
        async () => {
          await page.waitForFunction(
            (url) => document.getElementById("attention-list")!.textContent!.includes(url),
            { timeout: 5_000 },
            downUrl,
          ).catch(async (err) => {
            throw new Error(
              `${err.message}; the page said "${await textOf(page, "#notice")}"; ${problems.join(" | ")}`,
            );
          });
          const items = await page.$$eval(
            "#attention-list li",
            (lis) => lis.map((li) => ({ tone: (li as HTMLElement).dataset.tone, text: li.textContent })),
          );
          const retrying = items.find((i) => i.text!.startsWith(downUrl));
          assert.ok(retrying, JSON.stringify(items));
          assert.equal(retrying.tone, "pending");
          assert.match(
            retrying.text!,
            /1 retrying after a failed attempt \(connection refused \(ECONNREFUSED\)\), next attempt \d\d:\d\d UTC \(in (9|10) min\)/,
          );
          assert.equal(await page.$eval("#attention-empty", (el) => (el as HTMLElement).hidden), true);
          assert.equal(await textOf(page, "#stat-pending"), "1");
        },
      );

      await t.step(
        "each endpoint row says its transport, delivery mode, signature scheme and event types",
        async () => {
          const listed = new Map((await rows(page, "endpoint-rows")).map((r) => [r[0], r[1]]));
          // a loopback receiver's URL is plain http (allowed in tests): its transport says so
          assert.equal(listed.get(`${rx.url}/up`), "HTTPparallelhmac-sha256, shared secretidentified wire_created");
          assert.equal(listed.get(downUrl), "HTTPparalleled25519, public keyidentified");
          assert.equal(listed.get(`${rx.url}/off`), "HTTPparallelhmac-sha256, shared secretevery event type");
        },
      );

      await t.step("no mark depends on the reader's fonts, the disabled badge's included", async () => {
        const disabled = await page.$eval("#endpoint-rows .badge.disabled", (b) => getComputedStyle(b, "::before"));
        assert.ok(disabled, "a disabled badge is on the page");
        assert.deepEqual(await fontDependentMarks(page), []);
        // its pause mark is drawn: a box with two side borders, as wide as it says
        const mark = await page.$eval("#endpoint-rows .badge.disabled", (b) => {
          const s = getComputedStyle(b, "::before");
          return { content: s.content, left: s.borderLeftWidth, right: s.borderRightWidth, width: s.width };
        });
        assert.equal(mark.content, '""');
        assert.notEqual(mark.left, "0px");
        assert.notEqual(mark.right, "0px");
      });

      await t.step(
        "an endpoint's page: settings, event types, scheme, stats, deliveries and their attempts",
        async () => {
          // from its URL in the list, as a person follows it
          await page.click(`#endpoint-rows tr[data-id="${up.id}"] a`);
          await page.waitForFunction(() => !document.getElementById("view-endpoint")!.hidden, { timeout: 5_000 });
          assert.equal(new URL(page.url()).hash, `#endpoint/${up.id}`);
          await page.waitForFunction(
            (url) => document.getElementById("endpoint-title")!.textContent === url,
            { timeout: 5_000 },
            `${rx.url}/up`,
          );
          assert.equal(await page.evaluate(() => document.activeElement?.id), "endpoint-title");
          const settings = await page.$$eval(
            "#endpoint-settings dt",
            (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent, dt.nextElementSibling!.textContent])),
          );
          assert.equal(settings["Id"], up.id);
          assert.equal(settings["Transport"], "HTTP");
          assert.equal(settings["Event types"], "identified wire_created");
          assert.equal(settings["Signature scheme"], "hmac-sha256, shared secret");
          assert.equal(settings["Delivery mode"], "parallel");
          assert.equal(settings["Filter"], "none: every event of these types");
          assert.equal(settings["Client certificate"], "none");
          assert.equal(settings["OAuth2"], "none: no bearer token");
          assert.equal(settings["Payload version"], "2026-11-23");
          assert.match(settings["Created"], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
          assert.match(await textOf(page, "#endpoint-status"), /^active/);
          const stats = await page.$$eval("#endpoint-stats .stat", (divs) =>
            Object.fromEntries(
              divs.map((d) => [d.querySelector("dt")!.textContent, d.querySelector("dd")!.textContent]),
            ));
          assert.equal(stats["Attempts (24 h)"], "2");
          assert.equal(stats["Succeeded"], "100%");
          assert.match(stats["p50 / p95"], /^\d+ \/ \d+ ms$/);
          assert.deepEqual([stats["Pending"], stats["Failed"]], ["0", "0"]);
          const listed = await rows(page, "endpoint-delivery-rows");
          assert.deepEqual(listed.map((r) => [r[1], r[2]]), [["wire_created", "succeeded"], [
            "identified",
            "succeeded",
          ]]);
          assert.match(listed[0][3], /^1 attempt$/);
          // the secret signs; it is shown once, when made or rotated, never on a page read later
          assert.ok(!(await textOf(page, "body")).includes(up.secret), "the signing secret is not on the page");
          // a delivery opens under the list, with its attempt
          await page.click("#endpoint-delivery-rows tr button");
          await page.waitForFunction(
            () =>
              document.querySelector("#endpoint-page #delivery:not([hidden])") &&
              document.querySelector("#attempt-rows tr"),
            { timeout: 5_000 },
          );
          const [[number, , status]] = await rows(page, "attempt-rows");
          assert.deepEqual([number, status], ["1", "200"]);
          await assertReadable(page, "an endpoint's page, a delivery open");
        },
      );

      await t.step(
        "the page of the endpoint being retried: its scheme, key, pending attempt and next try",
        async () => {
          await view(page, `#endpoint/${down.id}`);
          await page.waitForFunction(
            (url) => document.getElementById("endpoint-title")!.textContent === url,
            { timeout: 5_000 },
            downUrl,
          );
          const settings = await textOf(page, "#endpoint-settings");
          assert.ok(settings.includes(`Signature schemeed25519, public key ${down.public_key}`), settings);
          assert.ok(settings.includes("Event typesidentified"), settings);
          const stats = await textOf(page, "#endpoint-stats");
          assert.match(stats, /Pending1, 1 retrying/);
          assert.match(stats, /Succeedednone yet|Succeeded0%/);
          assert.match(
            await textOf(page, "#endpoint-notes"),
            /^Next attempt \d\d:\d\d UTC \(in (9|10) min\) after connection refused \(ECONNREFUSED\)/,
          );
          const [[, type, status, attempts]] = await rows(page, "endpoint-delivery-rows");
          assert.deepEqual([type, status], ["identified", "pending"]);
          assert.match(attempts, /^1 attempt, next \d\d:\d\d UTC .*connection refused \(ECONNREFUSED\)$/);
          // the previous endpoint's delivery is not this page's
          assert.equal(await page.$eval("#delivery", (el) => (el as HTMLElement).hidden), true);
          await screenshot(page, "endpoint", "body");
          await assertReadable(page, "the page of an endpoint being retried");
          // its actions are on its page, and what they answer shows there: a rotated key pair's new public key
          await click(page, "#endpoint-actions", "Rotate secret");
          await page.waitForFunction(() => document.querySelector("#endpoint-page #endpoint-secret:not([hidden])"), {
            timeout: 5_000,
          });
          const [rotated] = await ctx.sql<{ public_key: string }[]>`
          select public_key from webhook_endpoints where id = ${down.id}`;
          assert.notEqual(rotated.public_key, down.public_key);
          const shownKey = await textOf(page, "#endpoint-secret");
          assert.ok(shownKey.startsWith("Public key") && shownKey.endsWith(`: ${rotated.public_key}`), shownKey);
        },
      );

      await t.step("search: an event id finds its deliveries, one per endpoint", async () => {
        // a filter left on the log does not hide what the id has
        await page.select("#filter-status", "failed");
        await search(page, identified.id);
        assert.equal(
          await textOf(page, "#search-summary"),
          `Event ${identified.id} (identified): 2 deliveries, one per endpoint`,
        );
        const found = await rows(page, "delivery-rows");
        const expected = [["identified", downUrl], ["identified", `${rx.url}/up`]];
        assert.deepEqual(found.map((r) => [r[1], r[3]]).sort(), expected.sort());
      });

      await t.step("search: a transaction id finds the deliveries of every event about it", async () => {
        await search(page, transactionId.toUpperCase());
        assert.equal(
          await textOf(page, "#search-summary"),
          `Transaction ${transactionId}: 2 events about it, and their deliveries`,
        );
        const found = await rows(page, "delivery-rows");
        assert.deepEqual(found.map((r) => r[1]), ["wire_created", "identified", "identified"]);
        await screenshot(page, "search", "#search-result");
        await assertReadable(page, "the log, searched by transaction id");
      });

      await t.step("search: a delivery record's id opens it; an unknown id says nothing has it", async () => {
        await search(page, refused.id);
        assert.match(
          await textOf(page, "#search-summary"),
          new RegExp(`^Delivery record ${refused.id}, of event ${identified.id}`),
        );
        await page.waitForFunction(() => !document.getElementById("delivery")!.hidden, { timeout: 5_000 });
        assert.match(await textOf(page, "#delivery-facts"), new RegExp(`Id${refused.id}`));
        const unknown = newId();
        await search(page, unknown);
        assert.equal(
          await textOf(page, "#search-summary"),
          `Nothing found for ${unknown}: no delivery record, event or transaction of yours has this id.`,
        );
        assert.deepEqual(await rows(page, "delivery-rows"), []);
        await search(page, "not an id");
        assert.match(await textOf(page, "#search-summary"), /^An id is 36 characters/);
        await page.$eval("#search-clear", (b) => (b as HTMLButtonElement).click());
        await page.waitForFunction(() => document.querySelectorAll("#delivery-rows tr").length === 3, {
          timeout: 5_000,
        });
        assert.equal(await page.$eval("#search-result", (el) => (el as HTMLElement).hidden), true);
      });

      await t.step("the chart's bars are labelled by the UTC hour their deliveries were made in", async () => {
        const records = await ctx.sql<{ inserted_at: Date; status: string }[]>`
          select inserted_at, status from webhook_deliveries where company_id = ${companyId}`;
        const expected = new Map<string, number>();
        for (const r of records) {
          const hour = r.inserted_at.getUTCHours();
          const label = `${String(hour).padStart(2, "0")}:00–${String((hour + 1) % 24).padStart(2, "0")}:00 UTC`;
          const key = `${label}: ${r.status}`;
          expected.set(key, (expected.get(key) ?? 0) + 1);
        }
        const titles = await page.$$eval("#chart rect title", (ts) => ts.map((t) => t.textContent!));
        const shown = new Map(titles.map((t) => {
          const [, key, n, status] = /^(.+): (\d+) (\w+)$/.exec(t)!;
          return [`${key}: ${status}`, Number(n)];
        }));
        assert.deepEqual(shown, expected);
      });

      await t.step("an endpoint's page shows how often its filter could not decide, and why", async () => {
        // a field only identified events have: a wire_created event lacks it, so the filter errs on that one
        await call("PUT", `${ENDPOINTS}/${up.id}`, { filter: 'data.transaction_id.startsWith("0")' });
        await ctx.sql.begin((tx) =>
          emitEvent(tx, companyId, "wire_created", { wire_id: newId(), transaction_ids: [newId()] })
        );
        const notes = await eventually("the filter's error among the notes", async () => {
          // the page reads the stats when it is opened: opened again until the count is there
          await view(page, "#overview");
          await view(page, `#endpoint/${up.id}`);
          return await page.waitForFunction(
            () => document.getElementById("endpoint-notes")!.textContent!.includes("Filter failed"),
            { timeout: 2_000 },
          ).then(() => textOf(page, "#endpoint-notes"), () => false);
        });
        assert.match(
          String(notes),
          /Filter failed on 1 event; last \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: line 1, column 6: No such key: transaction_id/,
        );
        // the company's filter time spent (docs/webhooks.md, "What a company's filters may spend"): an event's record
        // for this endpoint waits for its filter, and the page says so
        chargeFilterTime(companyId, 1_000);
        await ctx.sql.begin((tx) => emitEvent(tx, companyId, "identified", { transaction_id: newId() }));
        const deferred = await eventually("the deferred record among the notes", async () => {
          await view(page, "#overview");
          await view(page, `#endpoint/${up.id}`);
          return await page.waitForFunction(
            () => document.getElementById("endpoint-notes")!.textContent!.includes("Filter deferred"),
            { timeout: 2_000 },
          ).then(() => textOf(page, "#endpoint-notes"), () => false);
        });
        assert.match(
          String(deferred),
          /Filter deferred on 1 event \(filter time spent\): 0 refused then, 1 waiting for their filter/,
        );
        await call("PUT", `${ENDPOINTS}/${up.id}`, { filter: null });
      });

      await t.step("the overview and the catalogue read at 360 px, and nothing went wrong on the page", async () => {
        await page.setViewport({ width: 360, height: 740 });
        for (const hash of ["#overview", "#log", `#endpoint/${up.id}`, "#catalogue"]) {
          await view(page, hash);
          await assertReadable(page, `${hash} at 360 px`);
        }
        await view(page, "#overview");
        await page.setViewport({ width: 1280, height: 860 });
        await assertReadable(page, "the overview at 1280 px");
        assert.deepEqual(await fontDependentMarks(page), []);
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
