// A page for providers-chromium.test.mjs: postwire/providers' entries bundled for the
// browser; verifies the deliveries of /cases.json (signed in Node by the providers' SDKs),
// a tampered copy of each, and reports in window.__postwireProviders.
import * as stripe from "postwire/providers/stripe";
import * as github from "postwire/providers/github";
import { verify } from "postwire/providers";

const code = (fn) => {
  try {
    fn();
    return "accepted";
  } catch (e) {
    return e.name === "WebhookVerificationError" ? e.code : `uncaught ${e}`;
  }
};

(async () => {
  try {
    const cases = await (await fetch("/cases.json")).json();
    const out = {};
    for (const [name, d] of Object.entries(cases)) {
      const entry = name === "stripe" ? stripe.verify : name === "github" ? github.verify : (b, h, o) => verify(b, h, { provider: name, ...o });
      const got = entry(d.body, new Headers(d.headers), d.options);
      out[name] = { id: got.id, type: got.type, tampered: code(() => entry(d.body + " ", d.headers, d.options)) };
    }
    window.__postwireProviders = { out, hasBuffer: typeof Buffer !== "undefined" };
  } catch (e) {
    window.__postwireProviders = { error: String(e?.stack ?? e) };
  }
})();
