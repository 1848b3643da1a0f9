// Known answers for postwire_core::providers, from the providers' own npm SDKs.
//
// For each provider, requests are signed with the official SDK where it can sign
// (stripe's generateTestHeaderString, @octokit/webhooks-methods' sign, twilio's
// getExpectedTwilioSignature, starkbank-ecdsa as @sendgrid/eventwebhook uses it), otherwise
// with node:crypto per the provider's docs, and every request, valid or mangled, is then
// given to the SDK's own verifier. providers.json records the SDK's verdict next to
// postwire's expected one (written here by hand, checked by
// crates/postwire-core/tests/providers.rs), with the SDK's name and version.
//
// Two rules are enforced here, at generation time:
// - postwire never accepts what the SDK rejects: a case whose SDK verdict is "reject" must
//   expect an error;
// - where postwire rejects what the SDK accepts, the case says why (`stricter`), and
//   docs/providers.md lists each such choice.
//
// Deterministic: fixed secrets and keys, a fixed `now`, a seeded generator for bodies,
// RFC 6979 ECDSA (starkbank-ecdsa) and ed25519, so `node generate.mjs` twice writes the same
// file (scripts/test.sh's part_vectors regenerates it and runs `git diff --exit-code`).
//
// Headers are given to each SDK as a Node HTTP server hands them over (names lower-cased,
// values trimmed, repeated headers joined with ", "); the Rust test joins repeated headers
// the same way, so both sides judge the same request.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import querystring from "node:querystring";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const require = createRequire(path.join(root, "package.json"));

const Stripe = require("stripe");
const octokit = await import("@octokit/webhooks-methods");
require("@shopify/shopify-api/adapters/web-api");
const shopifyLib = require("@shopify/shopify-api");
const bolt = require("@slack/bolt");
const twilio = require("twilio");
const paddle = require("@paddle/paddle-node-sdk");
const { LinearWebhookClient } = await import("@linear/sdk/webhooks");
const { EventWebhook } = require("@sendgrid/eventwebhook");
// The ECDSA library @sendgrid/eventwebhook verifies with, resolved from the SDK itself.
const sendgridRequire = createRequire(require.resolve("@sendgrid/eventwebhook"));
const ecdsa = sendgridRequire("starkbank-ecdsa");
const bigInteger = createRequire(sendgridRequire.resolve("starkbank-ecdsa"))("big-integer");
const discord = require("discord-interactions");
const { Webhook: StandardWebhook } = require("standardwebhooks");

const NOW = 1_700_000_000;

function sdkInfo(name) {
  // Read from node_modules directly: several packages do not export their package.json.
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8"));
  return { name, version: pkg.version };
}

// --- deterministic helpers ---------------------------------------------------------------

/** mulberry32: a small seeded generator, so random-looking bodies are the same every run. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = seeded(49);
const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:/é€😀\\\"";
function randomText(len) {
  let s = "";
  for (let i = 0; i < len; i++) s += [...ALPHABET][Math.floor(rand() * [...ALPHABET].length)];
  return s;
}

const hmac = (alg, key, data, enc) => crypto.createHmac(alg, key).update(data).digest(enc);
const sha256hex = (...parts) => {
  const h = crypto.createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest("hex");
};
/** Changes one byte of a string body (the first `a`..`z` after `from`), keeping it UTF-8. */
function tamper(body, from = 0) {
  const b = Buffer.from(body);
  for (let i = from; i < b.length; i++) {
    if (b[i] >= 0x61 && b[i] <= 0x7a) {
      b[i] = b[i] === 0x7a ? 0x61 : b[i] + 1;
      return b.toString();
    }
  }
  throw new Error("nothing to tamper with");
}
const upper = (s) => s.toUpperCase();

/** As a Node HTTP server hands headers over: lower-case names, trimmed values, repeats joined. */
function nodeHeaders(pairs) {
  const out = {};
  for (const [k, v] of pairs) {
    const name = k.toLowerCase();
    const value = v.replace(/^[ \t]+|[ \t]+$/g, "");
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}

async function withNow(secs, fn) {
  const RealDate = globalThis.Date;
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(secs * 1000);
      else super(...args);
    }
    static now() {
      return secs * 1000;
    }
  }
  globalThis.Date = FixedDate;
  try {
    return await fn();
  } finally {
    globalThis.Date = RealDate;
  }
}

// --- the output ------------------------------------------------------------------------

const out = {
  comment:
    "Generated by tests/vectors/providers/generate.mjs; do not edit. `sdk` is the provider SDK's verdict, `expect` postwire's: an object for an accepted delivery, an error code otherwise; `stricter` says why postwire refuses what the SDK accepts.",
  now: NOW,
  providers: {},
};

/**
 * One provider's vectors. `verify(headers, bodyBuffer, now, keys)` runs the SDK and
 * answers true (accepted) or false (refused, or threw).
 */
function provider(name, { sdk, keys, settings, verify }) {
  const entry = { sdk: sdkInfo(sdk), keys, ...(settings ? { settings } : {}), cases: [] };
  out.providers[name] = entry;
  const pending = [];
  const add = (caseName, c) => {
    pending.push(async () => {
        const body = Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body);
        const now = c.now ?? NOW;
        const caseKeys = c.keys ?? keys;
        let accepted = false;
        try {
          accepted = (await withNow(now, () => verify(nodeHeaders(c.headers), body, now, caseKeys))) === true;
        } catch {
          accepted = false;
        }
        const verdict = accepted ? "accept" : "reject";
        const expectOk = typeof c.expect === "object";
        if (!accepted && expectOk) {
          throw new Error(`${name}/${caseName}: the SDK rejects what postwire is expected to accept`);
        }
        if (accepted && !expectOk && !c.stricter) {
          throw new Error(`${name}/${caseName}: the SDK accepts, postwire refuses (${c.expect}), and no reason is given`);
        }
        if (!accepted && c.stricter) {
          throw new Error(`${name}/${caseName}: marked stricter, but the SDK rejects it too`);
        }
        const utf8 = Buffer.from(body.toString("utf8")).equals(body);
        return {
          name: caseName,
          headers: c.headers,
          ...(utf8 ? { body: body.toString("utf8") } : { body_base64: body.toString("base64") }),
          ...(c.keys ? { keys: c.keys } : {}),
          ...(c.now !== undefined ? { now: c.now } : {}),
          sdk: verdict,
          expect: c.expect,
          ...(c.stricter ? { stricter: c.stricter } : {}),
        };
    });
  };
  return {
    add,
    done: async () => {
      // One at a time: each case fixes the global clock while its SDK runs.
      for (const run of pending) entry.cases.push(await run());
    },
  };
}

/** The SDK's verdict with several secrets, as its users do during a rotation: any one accepts. */
const anyKey = async (keys, f) => {
  for (const k of keys) {
    try {
      if ((await f(k)) === true) return true;
    } catch {
      // this key refuses it; try the next
    }
  }
  return false;
};

// --- Stripe ------------------------------------------------------------------------------

const stripeClient = new Stripe("sk_test_postwire_vectors_only");
{
  const s1 = "whsec_postwireVectorStripeSecret000000000001";
  const s2 = "whsec_postwireVectorStripeSecretRolled000002";
  const p = provider("stripe", {
    sdk: "stripe",
    keys: [s1],
    verify: (h, body, now, keys) =>
      anyKey(keys, (k) => {
        stripeClient.webhooks.constructEvent(body, h["stripe-signature"], k, 300, undefined, now * 1000);
        return true;
      }),
  });
  const sig = (secret, t, body) => hmac("sha256", secret, Buffer.concat([Buffer.from(`${t}.`), Buffer.from(body)]), "hex");
  const header = (secret, t, body) => stripeClient.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: t });
  const ev = (id, type, extra = "") => `{"id":"${id}","object":"event","type":"${type}"${extra},"data":{"object":{"id":"in_1"}}}`;
  const t = NOW - 10;
  const body = ev("evt_1PostwireVector", "invoice.paid");
  const ok = (id, type, ts = t) => ({ id, event_type: type, timestamp: ts });
  p.add("valid", { headers: [["Stripe-Signature", header(s1, t, body)]], body, expect: ok("evt_1PostwireVector", "invoice.paid") });
  p.add("valid, header name in capitals", { headers: [["STRIPE-SIGNATURE", header(s1, t, body)]], body, expect: ok("evt_1PostwireVector", "invoice.paid") });
  p.add("valid, spaces around the header value", { headers: [["stripe-signature", `  ${header(s1, t, body)}\t`]], body, expect: ok("evt_1PostwireVector", "invoice.paid") });
  for (let i = 0; i < 4; i++) {
    const b = JSON.stringify({ id: `evt_seeded_${i}`, type: "customer.updated", data: { note: randomText(20 + i * 37) } });
    p.add(`valid, seeded body ${i}`, { headers: [["Stripe-Signature", header(s1, t, b)]], body: b, expect: ok(`evt_seeded_${i}`, "customer.updated") });
  }
  p.add("rotation: v1 of the old and the new secret, verifier holds the new one", {
    headers: [["Stripe-Signature", `t=${t},v1=${sig(s1, t, body)},v1=${sig(s2, t, body)}`]],
    body,
    keys: [s2],
    expect: ok("evt_1PostwireVector", "invoice.paid"),
  });
  p.add("rotation: verifier holds both secrets, header signed by the second", {
    headers: [["Stripe-Signature", `t=${t},v1=${sig(s2, t, body)}`]],
    body,
    keys: [s1, s2],
    expect: ok("evt_1PostwireVector", "invoice.paid"),
  });
  p.add("v0 entry beside v1", { headers: [["Stripe-Signature", `t=${t},v1=${sig(s1, t, body)},v0=${"0".repeat(64)}`]], body, expect: ok("evt_1PostwireVector", "invoice.paid") });
  p.add("a wrong v1 and a right one", { headers: [["Stripe-Signature", `t=${t},v1=${"ab".repeat(32)},v1=${sig(s1, t, body)}`]], body, expect: ok("evt_1PostwireVector", "invoice.paid") });
  p.add("timestamp exactly at the tolerance", { headers: [["Stripe-Signature", header(s1, NOW - 300, body)]], body, expect: ok("evt_1PostwireVector", "invoice.paid", NOW - 300) });
  p.add("tampered body", { headers: [["Stripe-Signature", header(s1, t, body)]], body: tamper(body, 8), expect: "invalid_signature" });
  p.add("wrong secret", { headers: [["Stripe-Signature", header(s2, t, body)]], body, expect: "invalid_signature" });
  p.add("stale timestamp", { headers: [["Stripe-Signature", header(s1, NOW - 301, body)]], body, expect: "timestamp_too_old" });
  p.add("future timestamp beyond the tolerance", {
    headers: [["Stripe-Signature", header(s1, NOW + 301, body)]],
    body,
    expect: "timestamp_too_new",
    stricter: "the SDK bounds the past only; a timestamp far in the future is a skewed clock or a pre-signed replay",
  });
  p.add("timestamp with trailing text, signed over its number", {
    headers: [["Stripe-Signature", `t=${t}abc,v1=${sig(s1, t, body)}`]],
    body,
    expect: "invalid_header",
    stricter: "the SDK's parseInt reads `1699999990abc` as a number; a timestamp is digits only",
  });
  p.add("timestamp with a leading zero, signed over its number", {
    headers: [["Stripe-Signature", `t=0${t},v1=${sig(s1, t, body)}`]],
    body,
    expect: "invalid_header",
    stricter: "the SDK signs the number parseInt reads back, not the text sent; a timestamp is canonical digits",
  });
  p.add("timestamp not a number", { headers: [["Stripe-Signature", `t=soon,v1=${sig(s1, t, body)}`]], body, expect: "invalid_header" });
  p.add("two t= entries, signed over the last", {
    headers: [["Stripe-Signature", `t=${NOW - 1000},t=${t},v1=${sig(s1, t, body)}`]],
    body,
    expect: "invalid_header",
    stricter: "the SDK keeps the last `t`; two timestamps in one header are ambiguous",
  });
  p.add("signature in upper-case hex", { headers: [["Stripe-Signature", `t=${t},v1=${upper(sig(s1, t, body))}`]], body, expect: "invalid_header" });
  p.add("signature truncated", { headers: [["Stripe-Signature", `t=${t},v1=${sig(s1, t, body).slice(0, 62)}`]], body, expect: "invalid_header" });
  p.add("space after the comma", { headers: [["Stripe-Signature", `t=${t}, v1=${sig(s1, t, body)}`]], body, expect: "invalid_header" });
  p.add("no v1 entry", { headers: [["Stripe-Signature", `t=${t}`]], body, expect: "invalid_header" });
  p.add("no t entry", { headers: [["Stripe-Signature", `v1=${sig(s1, t, body)}`]], body, expect: "invalid_header" });
  p.add("header missing", { headers: [["content-type", "application/json"]], body, expect: "missing_header" });
  p.add("a GitHub signature instead", { headers: [["X-Hub-Signature-256", `sha256=${hmac("sha256", s1, body, "hex")}`]], body, expect: "missing_header" });
  p.add("a second Stripe-Signature header, joined to the first", {
    headers: [["Stripe-Signature", header(s1, t, body)], ["Stripe-Signature", "garbage"]],
    body,
    expect: "invalid_header",
    stricter: "the SDK skips an entry without `=`; a malformed entry means the header is not Stripe's as sent",
  });
  const notJson = "not json";
  p.add("signed body that is not JSON", { headers: [["Stripe-Signature", header(s1, t, notJson)]], body: notJson, expect: "invalid_payload" });
  const noId = `{"object":"event","type":"invoice.paid"}`;
  p.add("signed event without an id", {
    headers: [["Stripe-Signature", header(s1, t, noId)]],
    body: noId,
    expect: "invalid_payload",
    stricter: "the event id is what de-duplicates; an event without one cannot be processed once",
  });
  const latin1 = Buffer.concat([Buffer.from(`{"id":"evt_x","type":"a","n":"`), Buffer.from([0xe9]), Buffer.from(`"}`)]);
  p.add("body not UTF-8, signed over its bytes", {
    headers: [["Stripe-Signature", `t=${t},v1=${sig(s1, t, latin1)}`]],
    body: latin1,
    expect: "invalid_payload",
  });
  await p.done();
}

// --- GitHub ------------------------------------------------------------------------------

{
  const s1 = "postwire-vector-github-secret";
  const p = provider("github", {
    sdk: "@octokit/webhooks-methods",
    keys: [s1],
    verify: (h, body, _now, keys) => anyKey(keys, (k) => octokit.verify(k, body.toString("utf8"), h["x-hub-signature-256"])),
  });
  const body = `{"action":"opened","number":1,"repository":{"full_name":"octo/hello"}}`;
  const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
  const hdrs = async (secret, b, extra = []) => [
    ["X-Hub-Signature-256", await octokit.sign(secret, b)],
    ["X-GitHub-Delivery", delivery],
    ["X-GitHub-Event", "pull_request"],
    ...extra,
  ];
  const ok = { id: delivery, event_type: "pull_request", timestamp: null };
  p.add("valid", { headers: await hdrs(s1, body), body, expect: ok });
  p.add("valid, header names in lower case", { headers: (await hdrs(s1, body)).map(([k, v]) => [k.toLowerCase(), v]), body, expect: ok });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify({ zen: randomText(30 + 50 * i), hook_id: i });
    p.add(`valid, seeded body ${i}`, { headers: await hdrs(s1, b), body: b, expect: ok });
  }
  p.add("rotation: verifier holds the old and the new secret", { headers: await hdrs("github-rolled-secret", body), body, keys: [s1, "github-rolled-secret"], expect: ok });
  p.add("tampered body", { headers: await hdrs(s1, body), body: tamper(body), expect: "invalid_signature" });
  p.add("wrong secret", { headers: await hdrs("another-secret", body), body, expect: "invalid_signature" });
  const good = await octokit.sign(s1, body);
  const withSig = (v) => [["X-Hub-Signature-256", v], ["X-GitHub-Delivery", delivery], ["X-GitHub-Event", "pull_request"]];
  p.add("upper-case hex", { headers: withSig(`sha256=${upper(good.slice(7))}`), body, expect: "invalid_header" });
  p.add("prefix in capitals", { headers: withSig(`SHA256=${good.slice(7)}`), body, expect: "invalid_header" });
  p.add("truncated", { headers: withSig(good.slice(0, -2)), body, expect: "invalid_header" });
  p.add("no prefix", { headers: withSig(good.slice(7)), body, expect: "invalid_header" });
  p.add("legacy SHA-1 header only", {
    headers: [["X-Hub-Signature", `sha1=${hmac("sha1", s1, body, "hex")}`], ["X-GitHub-Delivery", delivery], ["X-GitHub-Event", "pull_request"]],
    body,
    expect: "missing_header",
  });
  p.add("signature header repeated", { headers: [...(await hdrs(s1, body)), ["X-Hub-Signature-256", good]], body, expect: "invalid_header" });
  p.add("no X-GitHub-Delivery", {
    headers: [["X-Hub-Signature-256", good], ["X-GitHub-Event", "pull_request"]],
    body,
    expect: "missing_header",
    stricter: "the delivery id is the only replay protection GitHub's scheme has (no timestamp); GitHub always sends it",
  });
  p.add("no X-GitHub-Event", {
    headers: [["X-Hub-Signature-256", good], ["X-GitHub-Delivery", delivery]],
    body,
    expect: "missing_header",
    stricter: "the event type routes the delivery; GitHub always sends it",
  });
  p.add("a Stripe signature instead", { headers: [["Stripe-Signature", `t=${NOW},v1=${"0".repeat(64)}`]], body, expect: "missing_header" });
  await p.done();
}

// --- Shopify -----------------------------------------------------------------------------

{
  const s1 = "shpss_postwirevectorshopifysecret0001";
  const apps = new Map();
  const app = (secret) => {
    if (!apps.has(secret)) {
      apps.set(
        secret,
        shopifyLib.shopifyApi({
          apiKey: "postwire-vectors",
          apiSecretKey: secret,
          scopes: [],
          hostName: "vectors.postwire.invalid",
          apiVersion: shopifyLib.ApiVersion.January26,
          isEmbeddedApp: false,
          logger: { level: shopifyLib.LogSeverity.Error, log: () => {} },
        }),
      );
    }
    return apps.get(secret);
  };
  const p = provider("shopify", {
    sdk: "@shopify/shopify-api",
    keys: [s1],
    verify: (h, body, _now, keys) =>
      anyKey(keys, async (k) => {
        const rawRequest = new Request("https://vectors.postwire.invalid/webhooks", { method: "POST", headers: h, body });
        const r = await app(k).webhooks.validate({ rawBody: body.toString("utf8"), rawRequest });
        return r.valid === true;
      }),
  });
  const body = `{"id":820982911946154508,"email":"jon@example.com","closed_at":null}`;
  const id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043";
  const classic = (v, extra = []) => [
    ["X-Shopify-Hmac-Sha256", v],
    ["X-Shopify-Topic", "orders/create"],
    ["X-Shopify-Shop-Domain", "example.myshopify.com"],
    ["X-Shopify-API-Version", "2026-01"],
    ["X-Shopify-Webhook-Id", id],
    ...extra,
  ];
  const good = hmac("sha256", s1, body, "base64");
  const ok = { id, event_type: "orders/create", timestamp: null };
  p.add("valid", { headers: classic(good), body, expect: ok });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify({ id: i, note: randomText(40 + 60 * i) });
    p.add(`valid, seeded body ${i}`, { headers: classic(hmac("sha256", s1, b, "base64")), body: b, expect: ok });
  }
  p.add("valid, event subscription headers", {
    headers: [
      ["shopify-hmac-sha256", good],
      ["shopify-topic", "orders/create"],
      ["shopify-shop-domain", "example.myshopify.com"],
      ["shopify-api-version", "2026-01"],
      ["shopify-webhook-id", id],
    ],
    body,
    expect: ok,
  });
  p.add("rotation: verifier holds the old and the new secret", { headers: classic(hmac("sha256", "shpss_rolled", body, "base64")), body, keys: [s1, "shpss_rolled"], expect: ok });
  p.add("tampered body", { headers: classic(good), body: tamper(body), expect: "invalid_signature" });
  p.add("wrong secret", { headers: classic(hmac("sha256", "shpss_other", body, "base64")), body, expect: "invalid_signature" });
  p.add("base64 without padding", { headers: classic(good.replace(/=+$/, "")), body, expect: "invalid_header" });
  p.add("hex instead of base64", { headers: classic(hmac("sha256", s1, body, "hex")), body, expect: "invalid_header" });
  // The secret and body are fixed; this body's tag has a `+` or `/`, so its base64url differs.
  if (!/[+/]/.test(good)) throw new Error("shopify: pick a body whose tag has + or /");
  p.add("base64url alphabet", { headers: classic(hmac("sha256", s1, body, "base64url") + "="), body, expect: "invalid_header" });
  p.add("no webhook id", {
    headers: classic(good).filter(([k]) => k !== "X-Shopify-Webhook-Id"),
    body,
    expect: "missing_header",
  });
  p.add("no topic", { headers: classic(good).filter(([k]) => k !== "X-Shopify-Topic"), body, expect: "missing_header" });
  p.add("no HMAC header", { headers: classic(good).filter(([k]) => k !== "X-Shopify-Hmac-Sha256"), body, expect: "missing_header" });
  p.add("empty body", { headers: classic(hmac("sha256", s1, "", "base64")), body: "", expect: "invalid_payload" });
  p.add("HMAC header repeated", { headers: classic(good, [["X-Shopify-Hmac-Sha256", good]]), body, expect: "invalid_header" });
  await p.done();
}

// --- Slack -------------------------------------------------------------------------------

{
  const s1 = "8f742231b10e8888abcd99yyyzzz85a5";
  const p = provider("slack", {
    sdk: "@slack/bolt",
    keys: [s1],
    verify: (h, body, now, keys) =>
      anyKey(keys, (k) => {
        bolt.verifySlackRequest({
          signingSecret: k,
          body: body.toString("utf8"),
          headers: { "x-slack-signature": h["x-slack-signature"], "x-slack-request-timestamp": Number(h["x-slack-request-timestamp"]) },
          nowMilliseconds: now * 1000,
        });
        return true;
      }),
  });
  const sig = (secret, ts, body) => `v0=${hmac("sha256", secret, Buffer.concat([Buffer.from(`v0:${ts}:`), Buffer.from(body)]), "hex")}`;
  const hdrs = (secret, ts, body, tsText = String(ts)) => [
    ["X-Slack-Signature", sig(secret, ts, body)],
    ["X-Slack-Request-Timestamp", tsText],
  ];
  const t = NOW - 20;
  const event = `{"token":"x","team_id":"T1","type":"event_callback","event_id":"Ev0PostwireVec","event":{"type":"app_mention","text":"hi"}}`;
  p.add("valid event callback", { headers: hdrs(s1, t, event), body: event, expect: { id: "Ev0PostwireVec", event_type: "app_mention", timestamp: t } });
  const challenge = `{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`;
  p.add("url_verification: derived id, envelope type", {
    headers: hdrs(s1, t, challenge),
    body: challenge,
    expect: { id: `slack_${sha256hex(`${t}:`, challenge)}`, event_type: "url_verification", timestamp: t },
  });
  const slash = "token=x&team_id=T1&command=%2Fweather&text=94070&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1&trigger_id=13345224609.738474920.8088930838d88f008e0";
  p.add("slash command (form body): trigger_id and command", {
    headers: hdrs(s1, t, slash),
    body: slash,
    expect: { id: "13345224609.738474920.8088930838d88f008e0", event_type: "/weather", timestamp: t },
  });
  const interactive = `payload=${encodeURIComponent('{"type":"block_actions"}')}`;
  p.add("interactivity (form body without trigger_id): derived id, no type", {
    headers: hdrs(s1, t, interactive),
    body: interactive,
    expect: { id: `slack_${sha256hex(`${t}:`, interactive)}`, event_type: null, timestamp: t },
  });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify({ type: "event_callback", event_id: `Ev${i}Seeded`, event: { type: "message", text: randomText(25 + 40 * i) } });
    p.add(`valid, seeded body ${i}`, { headers: hdrs(s1, t, b), body: b, expect: { id: `Ev${i}Seeded`, event_type: "message", timestamp: t } });
  }
  p.add("timestamp exactly at the tolerance", { headers: hdrs(s1, NOW - 300, event), body: event, expect: { id: "Ev0PostwireVec", event_type: "app_mention", timestamp: NOW - 300 } });
  p.add("tampered body", { headers: hdrs(s1, t, event), body: tamper(event, 10), expect: "invalid_signature" });
  p.add("wrong secret", { headers: hdrs("another-signing-secret", t, event), body: event, expect: "invalid_signature" });
  p.add("stale timestamp", { headers: hdrs(s1, NOW - 301, event), body: event, expect: "timestamp_too_old" });
  p.add("future timestamp beyond the tolerance", {
    headers: hdrs(s1, NOW + 3600, event),
    body: event,
    expect: "timestamp_too_new",
    stricter: "the SDK bounds the past only; a timestamp an hour ahead is a skewed clock or a pre-signed replay",
  });
  p.add("timestamp in exponent form, signed over its number", {
    headers: hdrs(s1, 1700000000 - 20, event, "1.69999998e9"),
    body: event,
    expect: "invalid_header",
    stricter: "the SDK reads the header with Number(); a timestamp is digits only",
  });
  p.add("timestamp with a leading zero, signed over its number", {
    headers: hdrs(s1, t, event, `0${t}`),
    body: event,
    expect: "invalid_header",
    stricter: "the SDK signs the number Number() reads back, not the text sent",
  });
  p.add("timestamp not a number", { headers: hdrs(s1, t, event, "yesterday"), body: event, expect: "invalid_header" });
  const good = sig(s1, t, event);
  p.add("upper-case hex", { headers: [["X-Slack-Signature", `v0=${upper(good.slice(3))}`], ["X-Slack-Request-Timestamp", String(t)]], body: event, expect: "invalid_header" });
  p.add("unknown version v1", { headers: [["X-Slack-Signature", `v1=${good.slice(3)}`], ["X-Slack-Request-Timestamp", String(t)]], body: event, expect: "invalid_header" });
  p.add("truncated", { headers: [["X-Slack-Signature", good.slice(0, -1)], ["X-Slack-Request-Timestamp", String(t)]], body: event, expect: "invalid_header" });
  p.add("no timestamp header", { headers: [["X-Slack-Signature", good]], body: event, expect: "missing_header" });
  p.add("no signature header", { headers: [["X-Slack-Request-Timestamp", String(t)]], body: event, expect: "missing_header" });
  p.add("a Paddle signature instead", { headers: [["Paddle-Signature", `ts=${t};h1=${good.slice(3)}`]], body: event, expect: "missing_header" });
  await p.done();
}

// --- Twilio ------------------------------------------------------------------------------

{
  const token = "12345678901234567890123456789012";
  const url = "https://vectors.postwire.invalid/twilio/sms?route=a%20b";
  const p = provider("twilio", {
    sdk: "twilio",
    keys: [token],
    settings: { url },
    verify: (h, body, _now, keys) =>
      anyKey(keys, (k) => {
        const algorithm = twilio.getSignatureAlgorithm(h["x-twilio-webhooks-signature-settings"]);
        const params = { ...querystring.parse(body.toString("utf8")) };
        const warn = console.warn; // the SDK warns about an unknown algorithm as it refuses it
        console.warn = () => {};
        try {
          return twilio.validateRequest(k, h["x-twilio-signature"], url, params, algorithm);
        } finally {
          console.warn = warn;
        }
      }),
  });
  const signFor = (tok, u, body, algorithm) => twilio.getExpectedTwilioSignature(tok, u, { ...querystring.parse(body) }, algorithm);
  const body = "AccountSid=AC0001&Body=Hello+w%C3%B6rld%21&From=%2B14155550100&MessageSid=SM0001&To=%2B14155550199&NumMedia=0";
  const signed = (u, b) => {
    const params = querystring.parse(b);
    return Object.keys(params)
      .sort()
      .reduce((acc, k) => acc + (Array.isArray(params[k]) ? [...new Set(params[k])].sort().map((v) => k + v).join("") : k + params[k]), u);
  };
  const derived = (b) => `twilio_${sha256hex(signed(url, b))}`;
  p.add("valid", { headers: [["X-Twilio-Signature", signFor(token, url, body)]], body, expect: { id: derived(body), event_type: null, timestamp: null } });
  p.add("valid, idempotency token as id", {
    headers: [["X-Twilio-Signature", signFor(token, url, body)], ["I-Twilio-Idempotency-Token", "idem-0001"]],
    body,
    expect: { id: "idem-0001", event_type: null, timestamp: null },
  });
  p.add("valid, HMAC-SHA256 named in the settings header", {
    headers: [["X-Twilio-Signature", signFor(token, url, body, "HMAC_SHA256")], ["X-Twilio-Webhooks-Signature-Settings", "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256"]],
    body,
    expect: { id: derived(body), event_type: null, timestamp: null },
  });
  const repeated = "To=%2B1&Media=b&Media=a&Media=b&From=%2B2";
  p.add("valid, repeated parameter (distinct values, sorted)", { headers: [["X-Twilio-Signature", signFor(token, url, repeated)]], body: repeated, expect: { id: derived(repeated), event_type: null, timestamp: null } });
  p.add("valid, empty body", { headers: [["X-Twilio-Signature", signFor(token, url, "")]], body: "", expect: { id: derived(""), event_type: null, timestamp: null } });
  for (let i = 0; i < 3; i++) {
    const b = querystring.stringify({ CallSid: `CA${i}`, Note: randomText(20 + 30 * i), Digits: String(i) });
    p.add(`valid, seeded body ${i}`, { headers: [["X-Twilio-Signature", signFor(token, url, b)]], body: b, expect: { id: derived(b), event_type: null, timestamp: null } });
  }
  p.add("tampered parameter", { headers: [["X-Twilio-Signature", signFor(token, url, body)]], body: body.replace("Hello", "Hellp"), expect: "invalid_signature" });
  p.add("wrong auth token", { headers: [["X-Twilio-Signature", signFor("00000000000000000000000000000000", url, body)]], body, expect: "invalid_signature" });
  p.add("signed for another URL", { headers: [["X-Twilio-Signature", signFor(token, "https://attacker.invalid/twilio/sms?route=a%20b", body)]], body, expect: "invalid_signature" });
  p.add("signed with the default port in the URL", {
    headers: [["X-Twilio-Signature", signFor(token, "https://vectors.postwire.invalid:443/twilio/sms?route=a%20b", body)]],
    body,
    expect: "invalid_signature",
    stricter: "the SDK also tries the URL with and without its default port; postwire checks the configured URL alone",
  });
  p.add("SHA-256 signature without the settings header", { headers: [["X-Twilio-Signature", signFor(token, url, body, "HMAC_SHA256")]], body, expect: "invalid_header" });
  p.add("unknown algorithm in the settings header", {
    headers: [["X-Twilio-Signature", signFor(token, url, body)], ["X-Twilio-Webhooks-Signature-Settings", "algorithm=HMAC_MD5"]],
    body,
    expect: "invalid_header",
  });
  p.add("base64 without padding", { headers: [["X-Twilio-Signature", signFor(token, url, body).replace(/=+$/, "")]], body, expect: "invalid_header" });
  p.add("no signature header", { headers: [["Content-Type", "application/x-www-form-urlencoded"]], body, expect: "missing_header" });
  const badPercent = "Body=100%&From=x";
  p.add("malformed percent escape, signed as Node decodes it", {
    headers: [["X-Twilio-Signature", signFor(token, url, badPercent)]],
    body: badPercent,
    expect: "invalid_payload",
    stricter: "Node's querystring keeps a malformed `%` escape as it is; postwire refuses a form body that is not well-formed",
  });
  await p.done();
}

// --- Paddle ------------------------------------------------------------------------------

{
  const s1 = "pdl_ntfset_01postwirevectors_secretkey0001";
  // The SDK picks its crypto provider when a client is made; without one it refuses everything.
  const webhooks = new paddle.Paddle("pdl_sdbx_apikey_postwire_vectors_only").webhooks;
  const p = provider("paddle", {
    sdk: "@paddle/paddle-node-sdk",
    keys: [s1],
    verify: (h, body, _now, keys) => anyKey(keys, (k) => webhooks.isSignatureValid(body.toString("utf8"), k, h["paddle-signature"])),
  });
  const sig = (secret, ts, body) => hmac("sha256", secret, Buffer.concat([Buffer.from(`${ts}:`), Buffer.from(body)]), "hex");
  const body = `{"event_id":"evt_01postwirevector","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:18Z","notification_id":"ntf_01","data":{}}`;
  const t = NOW - 2;
  const ok = (ts = t) => ({ id: "evt_01postwirevector", event_type: "transaction.completed", timestamp: ts });
  p.add("valid", { headers: [["Paddle-Signature", `ts=${t};h1=${sig(s1, t, body)}`]], body, expect: ok() });
  p.add("valid, h1 before ts", { headers: [["Paddle-Signature", `h1=${sig(s1, t, body)};ts=${t}`]], body, expect: ok() });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify({ event_id: `evt_seeded_${i}`, event_type: "subscription.updated", data: { note: randomText(30 + 45 * i) } });
    p.add(`valid, seeded body ${i}`, { headers: [["Paddle-Signature", `ts=${t};h1=${sig(s1, t, b)}`]], body: b, expect: { id: `evt_seeded_${i}`, event_type: "subscription.updated", timestamp: t } });
  }
  p.add("timestamp exactly at the tolerance (5 s)", { headers: [["Paddle-Signature", `ts=${NOW - 5};h1=${sig(s1, NOW - 5, body)}`]], body, expect: ok(NOW - 5) });
  p.add("tampered body", { headers: [["Paddle-Signature", `ts=${t};h1=${sig(s1, t, body)}`]], body: tamper(body, 15), expect: "invalid_signature" });
  p.add("wrong secret", { headers: [["Paddle-Signature", `ts=${t};h1=${sig("pdl_ntfset_other", t, body)}`]], body, expect: "invalid_signature" });
  p.add("stale timestamp", { headers: [["Paddle-Signature", `ts=${NOW - 6};h1=${sig(s1, NOW - 6, body)}`]], body, expect: "timestamp_too_old" });
  p.add("future timestamp beyond the tolerance", {
    headers: [["Paddle-Signature", `ts=${NOW + 600};h1=${sig(s1, NOW + 600, body)}`]],
    body,
    expect: "timestamp_too_new",
    stricter: "the SDK bounds the past only",
  });
  p.add("timestamp with trailing text, signed over its number", {
    headers: [["Paddle-Signature", `ts=${t}x;h1=${sig(s1, t, body)}`]],
    body,
    expect: "invalid_header",
    stricter: "the SDK's parseInt reads trailing text; a timestamp is digits only",
  });
  p.add("two h1 entries, the last one right", {
    headers: [["Paddle-Signature", `ts=${t};h1=${"0".repeat(64)};h1=${sig(s1, t, body)}`]],
    body,
    expect: "invalid_header",
    stricter: "the SDK keeps the last `h1`; postwire refuses an ambiguous header rather than pick one",
  });
  p.add("upper-case hex", { headers: [["Paddle-Signature", `ts=${t};h1=${upper(sig(s1, t, body))}`]], body, expect: "invalid_header" });
  p.add("space after the semicolon", { headers: [["Paddle-Signature", `ts=${t}; h1=${sig(s1, t, body)}`]], body, expect: "invalid_header" });
  p.add("no h1", { headers: [["Paddle-Signature", `ts=${t}`]], body, expect: "invalid_header" });
  p.add("header missing", { headers: [["X-Other", "1"]], body, expect: "missing_header" });
  const notJson = "[]";
  p.add("signed body without event_id", {
    headers: [["Paddle-Signature", `ts=${t};h1=${sig(s1, t, notJson)}`]],
    body: notJson,
    expect: "invalid_payload",
    stricter: "the event id is what de-duplicates; a body without one cannot be processed once",
  });
  await p.done();
}

// --- Linear ------------------------------------------------------------------------------

{
  const s1 = "lin_wh_postwirevectorsecret0001";
  const p = provider("linear", {
    sdk: "@linear/sdk",
    keys: [s1],
    verify: (h, body, _now, keys) =>
      anyKey(keys, (k) => {
        new LinearWebhookClient(k).parseVerifiedPayload(body, h["linear-signature"], h["linear-timestamp"]);
        return true;
      }),
  });
  const ms = (NOW - 30) * 1000 + 250;
  const make = (ts, extra = "") => `{"action":"create","type":"Issue","data":{"id":"iss_1"},"webhookTimestamp":${ts}${extra},"webhookId":"wh_1"}`;
  const body = make(ms);
  const sig = (secret, b) => hmac("sha256", secret, b, "hex");
  const ok = (b, ts = ms, id = "5c2f4b8e-linear-delivery") => ({ id, event_type: "Issue", timestamp: Math.floor(ts / 1000) });
  const hdrs = (secret, b, extra = [["Linear-Delivery", "5c2f4b8e-linear-delivery"]]) => [["Linear-Signature", sig(secret, b)], ...extra];
  p.add("valid", { headers: hdrs(s1, body), body, expect: ok(body) });
  p.add("valid, no Linear-Delivery: derived id", { headers: hdrs(s1, body, []), body, expect: ok(body, ms, `linear_${sha256hex(body)}`) });
  for (let i = 0; i < 3; i++) {
    const b = make(ms, `,"note":${JSON.stringify(randomText(30 + 40 * i))}`);
    p.add(`valid, seeded body ${i}`, { headers: hdrs(s1, b), body: b, expect: ok(b) });
  }
  const edge = make(NOW * 1000 - 60_000);
  p.add("timestamp exactly at the tolerance (60 s)", { headers: hdrs(s1, edge), body: edge, expect: ok(edge, NOW * 1000 - 60_000) });
  const stale = make(NOW * 1000 - 60_001);
  p.add("stale by one millisecond", { headers: hdrs(s1, stale), body: stale, expect: "timestamp_too_old" });
  const future = make(NOW * 1000 + 61_000);
  p.add("future timestamp beyond the tolerance", { headers: hdrs(s1, future), body: future, expect: "timestamp_too_new" });
  p.add("tampered body", { headers: hdrs(s1, body), body: tamper(body, 3), expect: "invalid_signature" });
  p.add("wrong secret", { headers: hdrs("lin_wh_other", body), body, expect: "invalid_signature" });
  p.add("upper-case hex", { headers: [["Linear-Signature", upper(sig(s1, body))]], body, expect: "invalid_header" });
  p.add("sha256= prefix", { headers: [["Linear-Signature", `sha256=${sig(s1, body)}`]], body, expect: "invalid_header" });
  p.add("no signature header", { headers: [["Linear-Delivery", "x"]], body, expect: "missing_header" });
  const noTs = `{"action":"create","type":"Issue","data":{}}`;
  p.add("signed body without webhookTimestamp", { headers: hdrs(s1, noTs), body: noTs, expect: "invalid_payload" });
  const strTs = make(`"${ms}"`);
  p.add("webhookTimestamp as a string", { headers: hdrs(s1, strTs), body: strTs, expect: "invalid_payload" });
  const floatTs = make(`${ms}.5`);
  p.add("webhookTimestamp with a fraction", {
    headers: hdrs(s1, floatTs),
    body: floatTs,
    expect: "invalid_payload",
    stricter: "the SDK takes any finite number; Linear sends whole milliseconds",
  });
  await p.done();
}

// --- SendGrid ----------------------------------------------------------------------------

{
  // A fixed P-256 key: the private scalar is a constant, the public key derived from it.
  const d = Buffer.from(sha256hex("postwire sendgrid vector key"), "hex");
  const ecdh = crypto.createECDH("prime256v1");
  ecdh.setPrivateKey(d);
  const pub = ecdh.getPublicKey();
  const jwk = { kty: "EC", crv: "P-256", d: d.toString("base64url"), x: pub.subarray(1, 33).toString("base64url"), y: pub.subarray(33).toString("base64url") };
  const keyObject = crypto.createPrivateKey({ key: jwk, format: "jwk" });
  const spki = crypto.createPublicKey(keyObject).export({ type: "spki", format: "der" }).toString("base64");
  const sec1Pem = keyObject.export({ type: "sec1", format: "pem" });
  const signer = ecdsa.PrivateKey.fromPem(sec1Pem);
  const other = ecdsa.PrivateKey.fromPem(
    crypto
      .createPrivateKey({ key: (() => {
        const e = crypto.createECDH("prime256v1");
        const dd = Buffer.from(sha256hex("another sendgrid key"), "hex");
        e.setPrivateKey(dd);
        const pp = e.getPublicKey();
        return { kty: "EC", crv: "P-256", d: dd.toString("base64url"), x: pp.subarray(1, 33).toString("base64url"), y: pp.subarray(33).toString("base64url") };
      })(), format: "jwk" })
      .export({ type: "sec1", format: "pem" }),
  );
  const ew = new EventWebhook();
  const pem = (b64) => `-----BEGIN PUBLIC KEY-----\n${b64.match(/.{1,64}/g).join("\n")}\n-----END PUBLIC KEY-----\n`;
  const p = provider("sendgrid", {
    sdk: "@sendgrid/eventwebhook",
    keys: [spki],
    verify: (h, body, _now, keys) =>
      anyKey(keys, (k) =>
        ew.verifySignature(
          ew.convertPublicKeyToECDSA(pem(k)),
          body.toString("utf8"),
          h["x-twilio-email-event-webhook-signature"],
          h["x-twilio-email-event-webhook-timestamp"],
        ),
      ),
  });
  // starkbank-ecdsa hedges RFC 6979 with random bytes; fixed ones keep the file the same
  // from run to run (the nonce stays secret-derived, as RFC 6979 alone makes it).
  const nodeCrypto = require("crypto");
  const sign = (key, ts, body) => {
    const randomBytes = nodeCrypto.randomBytes;
    nodeCrypto.randomBytes = (n) => Buffer.alloc(n, 0x49);
    try {
      return ecdsa.Ecdsa.sign(`${ts}${body}`, key).toBase64();
    } finally {
      nodeCrypto.randomBytes = randomBytes;
    }
  };
  const t = NOW - 40;
  const body = `[{"email":"a@example.com","timestamp":1699999900,"event":"delivered","sg_event_id":"sg_1","sg_message_id":"m_1"}]\r\n`;
  const hdrs = (sig, ts = t) => [["X-Twilio-Email-Event-Webhook-Signature", sig], ["X-Twilio-Email-Event-Webhook-Timestamp", String(ts)]];
  const ok = (b, ts = t) => ({ id: `sendgrid_${sha256hex(b)}`, event_type: null, timestamp: ts });
  const good = sign(signer, t, body);
  p.add("valid", { headers: hdrs(good), body, expect: ok(body) });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify([{ email: "b@example.com", event: "open", sg_event_id: `sg_seeded_${i}`, ua: randomText(20 + 40 * i) }]);
    p.add(`valid, seeded body ${i}`, { headers: hdrs(sign(signer, t, b)), body: b, expect: ok(b) });
  }
  // ECDSA signatures are malleable: (r, n - s) verifies too. The SDK accepts it; so does
  // postwire (SendGrid does not promise low-s), and the id comes from the body, not the signature.
  const parsed = ecdsa.Signature.fromBase64(good);
  const n = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
  const highS = new ecdsa.Signature(parsed.r, bigInteger((n - BigInt(parsed.s.toString())).toString()));
  p.add("the same signature with s replaced by n - s", { headers: hdrs(highS.toBase64()), body, expect: ok(body) });
  p.add("tampered body", { headers: hdrs(good), body: tamper(body, 5), expect: "invalid_signature" });
  p.add("signed by another key", { headers: hdrs(sign(other, t, body)), body, expect: "invalid_signature" });
  p.add("timestamp changed", { headers: hdrs(good, t + 1), body, expect: "invalid_signature" });
  p.add("stale timestamp", {
    headers: hdrs(sign(signer, NOW - 301, body), NOW - 301),
    body,
    expect: "timestamp_too_old",
    stricter: "the SDK checks no timestamp; without a bound a captured batch replays forever",
  });
  p.add("future timestamp", {
    headers: hdrs(sign(signer, NOW + 301, body), NOW + 301),
    body,
    expect: "timestamp_too_new",
    stricter: "the SDK checks no timestamp",
  });
  p.add("timestamp not digits, signed as sent", {
    headers: hdrs(sign(signer, "17e8", body), "17e8"),
    body,
    expect: "invalid_header",
    stricter: "the SDK signs whatever text the header holds; a timestamp is digits only",
  });
  if (good.endsWith("=")) {
    p.add("signature base64 without padding", {
      headers: hdrs(good.replace(/=+$/, "")),
      body,
      expect: "invalid_header",
      stricter: "the SDK decodes base64 as leniently as Node's Buffer; a signature is canonical, padded base64",
    });
  }
  p.add("signature not DER", { headers: hdrs(Buffer.alloc(64, 1).toString("base64")), body, expect: "invalid_header" });
  p.add("no signature header", { headers: [["X-Twilio-Email-Event-Webhook-Timestamp", String(t)]], body, expect: "missing_header" });
  p.add("no timestamp header", { headers: [["X-Twilio-Email-Event-Webhook-Signature", good]], body, expect: "missing_header" });
  await p.done();
}

// --- Discord -----------------------------------------------------------------------------

{
  const seed = Buffer.from(sha256hex("postwire discord vector key"), "hex");
  const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const key = crypto.createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  const pubHex = crypto.createPublicKey(key).export({ type: "spki", format: "der" }).subarray(12).toString("hex");
  const otherSeed = Buffer.from(sha256hex("another discord key"), "hex");
  const otherKey = crypto.createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), otherSeed]), format: "der", type: "pkcs8" });
  const p = provider("discord", {
    sdk: "discord-interactions",
    keys: [pubHex],
    verify: (h, body, _now, keys) => anyKey(keys, (k) => discord.verifyKey(body, h["x-signature-ed25519"], h["x-signature-timestamp"], k)),
  });
  const sign = (k, ts, body) => crypto.sign(null, Buffer.concat([Buffer.from(String(ts)), Buffer.from(body)]), k).toString("hex");
  const t = NOW - 1;
  const hdrs = (sig, ts = t) => [["X-Signature-Ed25519", sig], ["X-Signature-Timestamp", String(ts)]];
  const ping = `{"id":"1170000000000000001","application_id":"1170000000000000000","type":1,"version":1,"token":"tok"}`;
  const command = `{"id":"1170000000000000002","application_id":"1170000000000000000","type":2,"data":{"name":"ping"},"token":"tok"}`;
  p.add("valid PING", { headers: hdrs(sign(key, t, ping)), body: ping, expect: { id: "1170000000000000001", event_type: "PING", timestamp: t } });
  p.add("valid APPLICATION_COMMAND", { headers: hdrs(sign(key, t, command)), body: command, expect: { id: "1170000000000000002", event_type: "APPLICATION_COMMAND", timestamp: t } });
  p.add("valid, signature in upper-case hex", { headers: hdrs(upper(sign(key, t, ping))), body: ping, expect: { id: "1170000000000000001", event_type: "PING", timestamp: t } });
  for (let i = 0; i < 3; i++) {
    const b = JSON.stringify({ id: `11700000000000001${i}0`, type: 3, data: { custom_id: randomText(10 + 30 * i) } });
    p.add(`valid, seeded body ${i}`, { headers: hdrs(sign(key, t, b)), body: b, expect: { id: `11700000000000001${i}0`, event_type: "MESSAGE_COMPONENT", timestamp: t } });
  }
  const good = sign(key, t, ping);
  p.add("tampered body", { headers: hdrs(good), body: tamper(ping, 30), expect: "invalid_signature" });
  p.add("signed by another key", { headers: hdrs(sign(otherKey, t, ping)), body: ping, expect: "invalid_signature" });
  p.add("timestamp changed", { headers: hdrs(good, t - 1), body: ping, expect: "invalid_signature" });
  p.add("stale timestamp", {
    headers: hdrs(sign(key, NOW - 301, ping), NOW - 301),
    body: ping,
    expect: "timestamp_too_old",
    stricter: "the SDK checks no timestamp; Discord expects an answer within 3 s, so an old request is a replay",
  });
  p.add("future timestamp", {
    headers: hdrs(sign(key, NOW + 301, ping), NOW + 301),
    body: ping,
    expect: "timestamp_too_new",
    stricter: "the SDK checks no timestamp",
  });
  // The SDK decodes hex pair by pair with parseInt: `0g` reads as 0. Find a signature byte
  // below 16 and write its pair as `<digit>g`-style junk that parseInt reads the same.
  const bytes = Buffer.from(good, "hex");
  const idx = bytes.findIndex((b) => b < 16);
  if (idx >= 0) {
    // The canonical pair is `0` and the low digit; the low digit then `z` reads the same.
    const mangled = good.slice(0, idx * 2) + bytes[idx].toString(16) + "z" + good.slice(idx * 2 + 2);
    p.add("a hex pair written with a non-hex character the SDK skips", {
      headers: hdrs(mangled),
      body: ping,
      expect: "invalid_header",
      stricter: "the SDK's parseInt reads `7z` as 7; a signature is 128 hex digits",
    });
  }
  p.add("truncated signature", { headers: hdrs(good.slice(0, 126)), body: ping, expect: "invalid_header" });
  p.add("timestamp with a leading zero, signed as sent", {
    headers: hdrs(sign(key, `0${t}`, ping), `0${t}`),
    body: ping,
    expect: "invalid_header",
    stricter: "the SDK signs any text; a timestamp is canonical digits",
  });
  p.add("no signature header", { headers: [["X-Signature-Timestamp", String(t)]], body: ping, expect: "missing_header" });
  const noId = `{"type":1}`;
  p.add("signed interaction without an id", {
    headers: hdrs(sign(key, t, noId)),
    body: noId,
    expect: "invalid_payload",
    stricter: "the interaction id is what de-duplicates",
  });
  await p.done();
}

// --- Standard Webhooks (through the provider interface) ----------------------------------

{
  const s1 = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const p = provider("standard-webhooks", {
    sdk: "standardwebhooks",
    keys: [s1],
    verify: (h, body, _now, keys) =>
      anyKey(keys, (k) => {
        new StandardWebhook(k).verify(body.toString("utf8"), h);
        return true;
      }),
  });
  const wh = new StandardWebhook(s1);
  const t = NOW - 5;
  const body = `{"type":"post.published","id":"msg_1","data":{}}`;
  const hdrs = (b, ts = t, id = "msg_1") => [
    ["webhook-id", id],
    ["webhook-timestamp", String(ts)],
    ["webhook-signature", wh.sign(id, new Date(ts * 1000), b)],
  ];
  p.add("valid, type from the body", { headers: hdrs(body), body, expect: { id: "msg_1", event_type: "post.published", timestamp: t } });
  p.add("valid, body without a type", { headers: hdrs("[1,2]"), body: "[1,2]", expect: { id: "msg_1", event_type: null, timestamp: t } });
  p.add("tampered body", { headers: hdrs(body), body: tamper(body), expect: "invalid_signature" });
  p.add("stale timestamp", { headers: hdrs(body, NOW - 301), body, expect: "timestamp_too_old" });
  p.add("future timestamp", { headers: hdrs(body, NOW + 301), body, expect: "timestamp_too_new" });
  p.add("no webhook-id", { headers: hdrs(body).slice(1), body, expect: "missing_header" });
  await p.done();
}

fs.writeFileSync(path.join(here, "providers.json"), `${JSON.stringify(out, null, 1)}\n`);
const counts = Object.entries(out.providers).map(([k, v]) => `${k} ${v.cases.length}`);
console.log(`providers.json: ${counts.join(", ")}`);
