/**
 * Portal links as a platform and its customer meet them (docs/webhooks.md, "Portal links"): a link made with the API
 * token, its code exchanged once for a session that sees the company's endpoints and nothing else, the page's framing
 * policy naming exactly the link's origins, and a code refused once used, expired or revoked.
 */
import assert from "node:assert/strict";
import { verify } from "hono/jwt";
import { eventually, newCompany, setup, TEST_JWT_SECRET, TEST_TOKENS, type TestContext } from "../support/helpers.ts";
import { HTML_CSP, htmlCspFramedBy } from "../../routes/policy/headers.ts";
import { MAX_KEPT_LINKS, prunePortalLinks } from "../../domain/integrators/portal_links.ts";
import {
  bytesOf,
  GIF_BASE64,
  operatorWordsIn,
  PNG_BASE64,
  pngOfSize,
  WEBP_BASE64,
} from "../support/portal_branding.ts";

const LINKS = "/api/v2/notifications/portal_links";
const SESSIONS = "/api/v2/notifications/portal_sessions";
const ENDPOINTS = "/api/v2/notifications/endpoints";
const UNAUTHORIZED = { errors: { detail: "Unauthorized" } };

/** The code after `#code=` of a link's url. */
const codeOf = (url: string) => new URL(url).hash.replace(/^#code=/, "");

/** POSTs a code to the exchange, without any bearer, as the console page does. */
async function exchange(ctx: TestContext, code: string) {
  const res = await ctx.app.request(SESSIONS, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** Calls the API with a portal session's token. */
async function asPortal(ctx: TestContext, jwt: string, method: string, path: string, body?: unknown) {
  const res = await ctx.app.request(path, {
    method,
    headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

/** The CSP of a link's console page. */
async function pagePolicy(ctx: TestContext, id: string): Promise<string> {
  const res = await ctx.app.request(`/console/portal/${id}`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /<script src="\/console\/portal\.js"><\/script>/);
  return res.headers.get("content-security-policy")!;
}

const frameAncestors = (csp: string) => csp.split("; ").find((d) => d.startsWith("frame-ancestors "));

Deno.test("portal links: a platform's customer manages the company's endpoints, once per link", async (t) => {
  const ctx = await setup("portal_links");
  try {
    const platform = await newCompany(ctx);
    const other = await newCompany(ctx);
    const own = await platform.post(ENDPOINTS, { url: "https://platform.example/hooks" });
    const theirs = await other.post(ENDPOINTS, { url: "https://other.example/hooks" });
    assert.equal(own.status, 201);
    assert.equal(theirs.status, 201);

    const made = await platform.post(LINKS, {
      allowed_origins: ["https://App.Example.com/", "https://dash.example.net:8443", "http://127.0.0.1:4001"],
    });
    let portalJwt = "";

    await t.step("the platform makes a link: a url with the code after #, origins in their one form", () => {
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const link = made.body.data;
      assert.equal(link.status, "active");
      assert.deepEqual(link.allowed_origins, [
        "https://app.example.com",
        "https://dash.example.net:8443",
        "http://127.0.0.1:4001",
      ]);
      assert.match(link.url, new RegExp(`^http://[^/]+/console/portal/${link.id}#code=plc_[A-Za-z0-9_-]{43}$`));
      assert.equal(codeOf(link.url), link.code);
      const expiresIn = (Date.parse(link.expires_at) - Date.now()) / 1000;
      assert.ok(expiresIn > 590 && expiresIn <= 600, `ten minutes by default, not ${expiresIn} s`);
      assert.equal(link.session_expires_in, 3600);
      assert.equal(link.used_at, null);
      assert.equal(made.headers.get("cache-control"), "no-store");
    });

    await t.step("only the code's hash is stored", async () => {
      const [row] = await ctx.sql`select code_hash from portal_links where id = ${made.body.data.id}`;
      const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(made.body.data.code)));
      assert.deepEqual(new Uint8Array(row.code_hash), hash);
    });

    await t.step(
      "its page may be framed by exactly the link's origins, the rest of the policy as /console's",
      async () => {
        const csp = await pagePolicy(ctx, made.body.data.id);
        assert.equal(
          frameAncestors(csp),
          "frame-ancestors https://app.example.com https://dash.example.net:8443 http://127.0.0.1:4001",
        );
        const withoutFraming = (p: string) => p.split("; ").filter((d) => !d.startsWith("frame-ancestors ")).join("; ");
        assert.equal(withoutFraming(csp), withoutFraming(HTML_CSP));
        const console = await ctx.app.request("/console");
        assert.equal(frameAncestors(console.headers.get("content-security-policy")!), "frame-ancestors 'none'");
      },
    );

    await t.step("the code opens a portal session, whose token no previous release would take", async () => {
      const opened = await exchange(ctx, made.body.data.code);
      assert.equal(opened.status, 201, JSON.stringify(opened.body));
      assert.equal(opened.body.data.portal_link_id, made.body.data.id);
      const lasts = (Date.parse(opened.body.data.expires_at) - Date.now()) / 1000;
      assert.ok(lasts > 3590 && lasts <= 3600, `an hour by default, not ${lasts} s`);
      portalJwt = opened.body.data.jwt;
      // an instance checking the service's own audience alone (the release before portal links) refuses it
      await assert.rejects(verify(portalJwt, TEST_JWT_SECRET, { alg: "HS256", aud: TEST_TOKENS.jwtAudience }));
      const shown = await platform.get(`${LINKS}/${made.body.data.id}`);
      assert.equal(shown.body.data.status, "used");
      assert.ok(shown.body.data.used_at);
      assert.equal(shown.body.data.session_expires_at, opened.body.data.expires_at);
      assert.equal(shown.body.data.code, undefined, "the code is shown once");
    });

    await t.step("the session sees and manages the company's endpoints, and nobody else's", async () => {
      const listed = await asPortal(ctx, portalJwt, "GET", ENDPOINTS);
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body.data.map((e: { id: string }) => e.id), [own.body.data.id]);
      assert.equal((await asPortal(ctx, portalJwt, "GET", `${ENDPOINTS}/${theirs.body.data.id}`)).status, 404);
      const added = await asPortal(ctx, portalJwt, "POST", ENDPOINTS, { url: "https://platform.example/more" });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      const updated = await asPortal(ctx, portalJwt, "PUT", `${ENDPOINTS}/${added.body.data.id}`, {
        enabled_events: ["identified"],
      });
      assert.equal(updated.status, 200);
      assert.equal((await asPortal(ctx, portalJwt, "GET", "/api/v2/notifications/events")).status, 200);
      assert.equal((await asPortal(ctx, portalJwt, "GET", "/api/v2/notifications/event_types")).status, 200);
      assert.equal((await platform.get(ENDPOINTS)).body.data.length, 2, "the platform sees what its customer added");
    });

    await t.step("outside the webhook routes the session is refused with 403, portal links included", async () => {
      const forbidden = {
        status: 403,
        body: {
          errors: { detail: "A portal session may only manage the company's webhook endpoints and their deliveries" },
        },
      };
      assert.deepEqual(await asPortal(ctx, portalJwt, "GET", "/api/v1/subject/people"), forbidden);
      assert.deepEqual(await asPortal(ctx, portalJwt, "GET", "/api/v1/transactions"), forbidden);
      assert.deepEqual(await asPortal(ctx, portalJwt, "POST", LINKS, {}), forbidden);
      assert.deepEqual(await asPortal(ctx, portalJwt, "DELETE", `${LINKS}/${made.body.data.id}`), forbidden);
    });

    await t.step("a used code is refused, as an unknown one is", async () => {
      const again = await exchange(ctx, made.body.data.code);
      assert.deepEqual({ status: again.status, body: again.body }, { status: 401, body: UNAUTHORIZED });
      const unknown = await exchange(ctx, `plc_${"A".repeat(43)}`);
      assert.deepEqual({ status: unknown.status, body: unknown.body }, { status: 401, body: UNAUTHORIZED });
      // the used link's page can still be framed while its session lasts: the customer may reload it
      assert.match(frameAncestors(await pagePolicy(ctx, made.body.data.id))!, /https:\/\/app\.example\.com/);
    });

    await t.step("of two exchanges of one code at once, one opens a session", async () => {
      const link = (await platform.post(LINKS, {})).body.data;
      const both = await Promise.all([exchange(ctx, link.code), exchange(ctx, link.code)]);
      assert.deepEqual(both.map((r) => r.status).sort(), [201, 401]);
      const [{ sessions }] = await ctx.sql`
        select count(*)::int as sessions from sessions
        where id = (select session_id from portal_links where id = ${link.id})`;
      assert.equal(sessions, 1);
    });

    await t.step("an expired code is refused, and its page may be framed by nobody", async () => {
      const link = (await platform.post(LINKS, { allowed_origins: ["https://app.example.com"], expires_in: 30 }))
        .body.data;
      assert.ok(Date.parse(link.expires_at) - Date.now() <= 30_000);
      await ctx.sql`update portal_links set expires_at = now() - interval '1 second' where id = ${link.id}`;
      const late = await exchange(ctx, link.code);
      assert.deepEqual({ status: late.status, body: late.body }, { status: 401, body: UNAUTHORIZED });
      assert.equal((await platform.get(`${LINKS}/${link.id}`)).body.data.status, "expired");
      assert.equal(frameAncestors(await pagePolicy(ctx, link.id)), "frame-ancestors 'none'");
    });

    await t.step("another company cannot see or revoke the link: 404, and it still opens", async () => {
      const link = (await platform.post(LINKS, {})).body.data;
      assert.equal((await other.get(`${LINKS}/${link.id}`)).status, 404);
      assert.equal((await other.delete(`${LINKS}/${link.id}`)).status, 404);
      assert.equal((await platform.get(`${LINKS}/${link.id}`)).body.data.status, "active");
      assert.equal((await exchange(ctx, link.code)).status, 201);
    });

    await t.step("a revoked code is refused", async () => {
      const link = (await platform.post(LINKS, { allowed_origins: ["https://app.example.com"] })).body.data;
      const revoked = await platform.delete(`${LINKS}/${link.id}`);
      assert.equal(revoked.status, 200);
      assert.equal(revoked.body.data.status, "revoked");
      assert.ok(revoked.body.data.revoked_at);
      const late = await exchange(ctx, link.code);
      assert.deepEqual({ status: late.status, body: late.body }, { status: 401, body: UNAUTHORIZED });
      assert.equal(frameAncestors(await pagePolicy(ctx, link.id)), "frame-ancestors 'none'");
      const twice = await platform.delete(`${LINKS}/${link.id}`);
      assert.equal(twice.body.data.revoked_at, revoked.body.data.revoked_at, "revoking again changes nothing");
    });

    await t.step("revoking a used link ends its session at once", async () => {
      assert.equal((await asPortal(ctx, portalJwt, "GET", ENDPOINTS)).status, 200);
      assert.equal((await platform.delete(`${LINKS}/${made.body.data.id}`)).status, 200);
      await eventually(
        "the portal token to be refused",
        async () => (await asPortal(ctx, portalJwt, "GET", ENDPOINTS)).status === 401,
        1000,
        5,
      );
      assert.equal(frameAncestors(await pagePolicy(ctx, made.body.data.id)), "frame-ancestors 'none'");
    });

    await t.step("a portal session signs out like a user's", async () => {
      const link = (await platform.post(LINKS, {})).body.data;
      const { jwt } = (await exchange(ctx, link.code)).body.data;
      assert.equal((await asPortal(ctx, jwt, "POST", "/api/v1/sign_out")).status, 204);
      await eventually(
        "the signed-out token to be refused",
        async () => (await asPortal(ctx, jwt, "GET", ENDPOINTS)).status === 401,
        1000,
        5,
      );
    });

    await t.step("origins and lifetimes out of bounds are refused, each named", async () => {
      const refused = await platform.post(LINKS, {
        allowed_origins: ["https://ok.example", "http://app.example.com", "https://app.example.com/embed", "*"],
        expires_in: 7200,
      });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.deepEqual(Object.keys(refused.body.errors).sort(), ["allowed_origins", "expires_in"], "all at once");
      assert.deepEqual(Object.keys(refused.body.errors.allowed_origins), ["1", "2", "3"]);
      assert.match(refused.body.errors.allowed_origins["1"][0], /^must use https/);
      assert.match(refused.body.errors.allowed_origins["2"][0], /^has invalid format: expected an https origin/);
      const origins = await platform.post(LINKS, { allowed_origins: ["https://ok.example", 42, "http://x.example"] });
      assert.equal(origins.status, 422);
      assert.deepEqual(Object.keys(origins.body.errors.allowed_origins), ["1", "2"]);
    });

    await t.step(
      "links are kept until a day after their session ends, and a company keeps a bounded number",
      async () => {
        const company = await newCompany(ctx);
        const kept = async () =>
          (await ctx.sql`select count(*)::int as n from portal_links where company_id = ${company.id}`)[0].n;
        assert.equal((await company.post(LINKS, {})).status, 201);
        // as if made long ago: one never used, one whose session ended two days ago, one whose session still runs
        await ctx.sql`
        insert into portal_links (id, company_id, code_hash, expires_at, session_seconds, used_at, session_expires_at)
        select gen_random_uuid(), ${company.id}, sha256(convert_to(g::text, 'UTF8')), now() - interval '3 days', 3600,
               case when g > 1 then now() - interval '3 days' end,
               case g when 2 then now() - interval '2 days' when 3 then now() + interval '1 hour' end
        from generate_series(1, 3) as g`;
        assert.equal(await kept(), 4);
        while (await prunePortalLinks(ctx.sql) > 0) { /* other tests' links are young: this ends */ }
        assert.equal(
          await kept(),
          2,
          "the unused one and the ended session's go; the running session's and today's stay",
        );
        await ctx.sql`
        insert into portal_links (id, company_id, code_hash, expires_at, session_seconds)
        select gen_random_uuid(), ${company.id}, sha256(convert_to(g::text || ${company.id}, 'UTF8')),
               now() + interval '10 minutes', 3600
        from generate_series(1, ${MAX_KEPT_LINKS - 2}) as g`;
        const refused = await company.post(LINKS, {});
        assert.equal(refused.status, 422);
        assert.match(refused.body.errors.detail, /^quota exceeded: at most 10000 portal links per company/);
        assert.equal((await platform.post(LINKS, {})).status, 201, "another company is not held back");
      },
    );

    await t.step("guessing codes from one address is throttled like failed sign-ins", async () => {
      let answer = { status: 0, headers: new Headers() };
      for (let i = 0; i < 12 && answer.status !== 429; i++) answer = await exchange(ctx, `plc_${"B".repeat(43)}`);
      assert.equal(answer.status, 429);
      assert.ok(Number(answer.headers.get("retry-after")) > 0);
      const link = (await platform.post(LINKS, {})).body.data;
      assert.equal((await exchange(ctx, link.code)).status, 429, "that address waits, even with a good code");
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("a portal link points at PUBLIC_BASE_URL, never at the Host a request names", async (t) => {
  /** POST portal_links as the company, to `url` (its host is what Deno.serve would take from the Host header). */
  const makeAt = async (ctx: TestContext, url: string, headers: Record<string, string> = {}) => {
    const token = (await newCompany(ctx)).token;
    const res = await ctx.app.request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      body: "{}",
    });
    return { status: res.status, body: await res.json(), headers: res.headers };
  };
  const forged = { host: "evil.example", "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" };
  const production = {
    APP_ENV: "production",
    JWT_SECRET: TEST_JWT_SECRET,
    SECRET_ENCRYPTION_KEY: crypto.getRandomValues(new Uint8Array(32)).toHex(),
    WEBHOOK_ALLOW_PRIVATE_URLS: "false",
  };

  await t.step("with PUBLIC_BASE_URL, a forged Host changes nothing: the link is under that address", async () => {
    const ctx = await setup("portal_links_base_url", { env: { PUBLIC_BASE_URL: "https://Payments.Example.com/api/" } });
    try {
      const made = await makeAt(ctx, `http://evil.example${LINKS}`, forged);
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const { id, code, url } = made.body.data;
      assert.equal(url, `https://payments.example.com/api/console/portal/${id}#code=${code}`);
    } finally {
      await ctx.close();
    }
  });

  await t.step(
    "in production without PUBLIC_BASE_URL the service starts, and a link is refused naming it",
    async () => {
      const ctx = await setup("portal_links_production_no_base", { env: production });
      try {
        const made = await makeAt(ctx, `http://evil.example${LINKS}`, forged);
        assert.equal(made.status, 503, JSON.stringify(made.body));
        assert.match(made.body.errors.detail, /\bPUBLIC_BASE_URL\b/);
        assert.equal(made.headers.get("retry-after"), null, "the operator's to fix: waiting changes nothing");
        const [{ n }] = await ctx.sql`select count(*)::int as n from portal_links`;
        assert.equal(n, 0, "no link was made");
        assert.equal((await (await newCompany(ctx)).get(ENDPOINTS)).status, 200, "everything else is served");
      } finally {
        await ctx.close();
      }
    },
  );

  await t.step("in production with PUBLIC_BASE_URL, the link is under it", async () => {
    const env = { ...production, PUBLIC_BASE_URL: "https://payments.example.com" };
    const ctx = await setup("portal_links_production_base", { env });
    try {
      const made = await makeAt(ctx, `http://evil.example${LINKS}`, forged);
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.ok(made.body.data.url.startsWith("https://payments.example.com/console/portal/"), made.body.data.url);
    } finally {
      await ctx.close();
    }
  });

  await t.step(
    "in development without PUBLIC_BASE_URL, the link is under the address the request came to",
    async () => {
      const ctx = await setup("portal_links_development_no_base");
      try {
        assert.equal(ctx.config.appEnv, "development");
        const made = await makeAt(ctx, `http://127.0.0.1:4000${LINKS}`);
        assert.equal(made.status, 201, JSON.stringify(made.body));
        assert.ok(made.body.data.url.startsWith("http://127.0.0.1:4000/console/portal/"), made.body.data.url);
      } finally {
        await ctx.close();
      }
    },
  );
});

/** The text of an HTML page as a reader gets it: its title and body, tags and scripts gone. */
const pageText = (html: string) =>
  html.replace(/<script[^>]*>[^<]*<\/script>/g, " ").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

Deno.test("a branded portal link wears the platform's name, colour and logo, served by the service itself", async (t) => {
  const ctx = await setup("portal_branding");
  try {
    const platform = await newCompany(ctx);
    const branding = {
      name: "Acme Pay",
      accent_color: "#0A7D4F",
      support_url: "https://acme.example/support",
      logo: { file_type: "image/png", file_data: PNG_BASE64 },
    };
    const made = await platform.post(LINKS, { allowed_origins: ["https://app.acme.example"], branding });
    const id = made.body.data?.id as string;

    await t.step("the link keeps its branding, and says where its logo is served", () => {
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.deepEqual(made.body.data.branding, {
        name: "Acme Pay",
        accent_color: "#0a7d4f",
        support_url: "https://acme.example/support",
        logo_url: `/console/portal/${id}/logo`,
      });
    });

    await t.step("its page carries the platform's name and none of the operator's words", async () => {
      const res = await ctx.app.request(`/console/portal/${id}`);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.match(html, /<title>Acme Pay<\/title>/);
      assert.match(html, /<h1 class="brand logo"><img src="\/console\/portal\/[^"]+\/logo"[^>]*>Acme Pay<\/h1>/);
      assert.ok(html.includes(`href="/console/portal/${id}/brand.css"`), "the accent's stylesheet");
      assert.ok(html.includes('href="https://acme.example/support"'), "the support link");
      assert.deepEqual(operatorWordsIn(pageText(html)), []);
      assert.ok(pageText(html).includes("Close"));
      // the policy is the portal's as it was: images and styles from this origin only, framed by the link's origin
      assert.equal(res.headers.get("content-security-policy"), htmlCspFramedBy("https://app.acme.example"));
    });

    await t.step("its logo is served from the service, as the type its bytes are, never sniffed", async () => {
      const res = await ctx.app.request(`/console/portal/${id}/logo`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/png");
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytesOf(PNG_BASE64));
      const webp = await platform.post(LINKS, {
        branding: { logo: { file_type: "image/webp", file_data: WEBP_BASE64 } },
      });
      assert.equal(webp.status, 201, JSON.stringify(webp.body));
      const served = await ctx.app.request(webp.body.data.branding.logo_url);
      assert.equal(served.headers.get("content-type"), "image/webp");
      await served.body?.cancel();
    });

    await t.step("its accent is a stylesheet of the service, with a text colour that reads on it", async () => {
      const res = await ctx.app.request(`/console/portal/${id}/brand.css`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "text/css; charset=utf-8");
      const css = await res.text();
      assert.match(css, /--brand: #0a7d4f;/);
      assert.match(css, /--brand-text: #ffffff;/);
    });

    await t.step("a link without branding wears no one's name, and has no logo or stylesheet", async () => {
      const plain = await platform.post(LINKS, {});
      assert.equal(plain.status, 201);
      assert.deepEqual(plain.body.data.branding, { name: null, accent_color: null, support_url: null, logo_url: null });
      const html = await (await ctx.app.request(`/console/portal/${plain.body.data.id}`)).text();
      assert.match(html, /<title>Webhooks<\/title>/);
      assert.deepEqual(operatorWordsIn(pageText(html)), []);
      for (const path of ["logo", "brand.css"]) {
        const res = await ctx.app.request(`/console/portal/${plain.body.data.id}/${path}`);
        assert.equal(res.status, 404, path);
        await res.body?.cancel();
      }
    });

    await t.step("a logo that is not a PNG or WebP, or is over 64 KiB, is refused naming the field", async () => {
      const refusedWith = async (logo: unknown) => {
        const res = await platform.post(LINKS, { branding: { logo } });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        return res.body.errors.branding.logo;
      };
      const gif = await refusedWith({ file_type: "image/png", file_data: GIF_BASE64 });
      assert.deepEqual(gif, { file_data: ["must be a PNG or a WebP image; these bytes are image/gif"] });
      const svg = btoa('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
      assert.match((await refusedWith({ file_type: "image/png", file_data: svg })).file_data[0], /PNG or a WebP/);
      assert.ok((await refusedWith({ file_type: "image/svg+xml", file_data: svg })).file_type, "an SVG's type");
      const big = await refusedWith({ file_type: "image/png", file_data: pngOfSize(65_537) });
      assert.deepEqual(big, { file_data: ["must be at most 65536 bytes (64 KiB); this one is 65537"] });
      const claimed = await refusedWith({ file_type: "image/webp", file_data: PNG_BASE64 });
      assert.deepEqual(claimed, { file_data: ["is image/png, not the image/webp file_type says"] });
      assert.deepEqual(await refusedWith({ file_type: "image/png", file_data: "not base64!" }), {
        file_data: ["must be the image's bytes in base64"],
      });
      const atBound = await platform.post(LINKS, {
        branding: { logo: { file_type: "image/png", file_data: pngOfSize(65_536) } },
      });
      assert.equal(atBound.status, 201, "64 KiB exactly is taken");
    });

    await t.step("a name, colour or support address out of form is refused, each named", async () => {
      const res = await platform.post(LINKS, {
        branding: { name: "x".repeat(61), accent_color: "red", support_url: "http://acme.example/support" },
      });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body.errors.branding).sort(), ["accent_color", "name", "support_url"]);
      assert.deepEqual(res.body.errors.branding.accent_color, ["must be a colour as #rrggbb"]);
    });

    await t.step("a revoked link's logo is no longer served", async () => {
      assert.equal((await platform.delete(`${LINKS}/${id}`)).status, 200);
      const res = await ctx.app.request(`/console/portal/${id}/logo`);
      assert.equal(res.status, 404);
      await res.body?.cancel();
    });
  } finally {
    await ctx.close();
  }
});

Deno.test("a portal session does what an endpoint owner does, and nothing of the platform's", async (t) => {
  const ctx = await setup("portal_owner");
  try {
    const platform = await newCompany(ctx);
    const platformOwn = await platform.post(ENDPOINTS, { url: "https://platform.example/hooks" });
    const made = await platform.post(LINKS, {});
    const jwt = (await exchange(ctx, made.body.data.code)).body.data.jwt as string;
    const call = (method: string, path: string, body?: unknown) => asPortal(ctx, jwt, method, path, body);

    await t.step("create, edit, rotate, send a test, see deliveries, retry, disable, enable, recover", async () => {
      const created = await call("POST", ENDPOINTS, { url: "https://customer.example/hooks" });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const ep = `${ENDPOINTS}/${created.body.data.id}`;
      assert.equal((await call("PUT", ep, { enabled_events: ["identified"] })).status, 200);
      assert.equal((await call("POST", `${ep}/rotate_secret`)).status, 200);
      const sent = await call("POST", `${ep}/test`, { event_type: "identified" });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const listed = await call("GET", `/api/v2/notifications/events?endpoint_id=${created.body.data.id}`);
      assert.equal(listed.status, 200);
      assert.equal((await call("GET", `/api/v2/notifications/events/${sent.body.data.id}`)).status, 200);
      const retried = await call("POST", `/api/v2/notifications/events/${sent.body.data.id}/retry`);
      assert.notEqual(retried.status, 403, JSON.stringify(retried.body));
      assert.equal((await call("DELETE", ep)).status, 200);
      assert.equal((await call("POST", `${ep}/enable`)).status, 200);
      const recovered = await call("POST", `${ep}/recover`, { since: "2026-01-01T00:00:00Z" });
      assert.equal(recovered.status, 202, JSON.stringify(recovered.body));
    });

    await t.step("disabling every endpoint of the company at once is the platform's: 403", async () => {
      const refused = await call("DELETE", ENDPOINTS);
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      const own = await platform.get(`${ENDPOINTS}/${platformOwn.body.data.id}`);
      assert.equal(own.body.data.status, "active", "the platform's own endpoint untouched");
    });
  } finally {
    await ctx.close();
  }
});
