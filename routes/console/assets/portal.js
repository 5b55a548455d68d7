// The console page of a portal link (docs/webhooks.md, "Portal links"). Runs first, before the console's own script:
// it takes the single-use code from after `#` out of the address bar, exchanges it for a portal session, and keeps the
// session's token where the console keeps a signed-in user's (this tab's sessionStorage, never a URL), then opens the
// page again, which the console now shows signed in. A file of its own so that the console's script knows nothing of
// portals beyond finding a token.
"use strict";

(() => {
  const TOKEN = "payments-console-token";
  const root = document.documentElement;
  const code = new URLSearchParams(location.hash.slice(1)).get("code");

  /** Puts `message` where the page would be, once there is a page: no sign-in form, a portal has no password. */
  const refuse = (message) => {
    const show = () => {
      const section = document.createElement("section");
      section.className = "card narrow";
      section.id = "portal-refused";
      const title = document.createElement("h2");
      title.textContent = "This link no longer opens";
      const text = document.createElement("p");
      text.setAttribute("role", "alert");
      text.textContent = message;
      section.append(title, text);
      (document.querySelector("main") ?? document.body).replaceChildren(section);
      root.hidden = false;
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", show);
    else show();
  };

  if (!code) {
    // opened again without a code: the session of this tab, if it has one, is the console's to use
    if (!sessionStorage.getItem(TOKEN)) {
      refuse("Its session has ended, or it was opened in another tab. Ask for a new link where you found this one.");
    }
    return;
  }
  // out of the address bar and the history at once: the code is spent by the exchange, a reload must not send it again
  history.replaceState(null, "", location.pathname + location.search);
  sessionStorage.removeItem(TOKEN);
  root.hidden = true; // nothing of the page until it opens signed in, or says why not
  fetch("/api/v2/notifications/portal_sessions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  }).then(async (res) => {
    const payload = await res.json().catch(() => null);
    if (res.status === 429) throw new Error("Too many attempts from this address: try again in a few minutes.");
    if (!res.ok || !payload?.data?.jwt) {
      throw new Error("It has expired, was revoked, or was used already. Ask for a new link where you found this one.");
    }
    sessionStorage.setItem(TOKEN, payload.data.jwt);
    location.replace(location.pathname + location.search);
  }).catch((err) => refuse(err.message));
})();
