// postwire/providers (issue 49): every provider known answer of
// tests/vectors/providers/providers.json through the npm API, deliveries signed right here
// by each provider's SDK (checked by the SDK's own verifier too), the per-provider entries,
// Bun and Deno, and bad input: always a WebhookVerificationError with its stable code,
// never another exception out of the wasm module.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import * as providers from "postwire/providers";
import { verify, PROVIDERS, WebhookVerificationError, ERROR_CODES } from "postwire/providers";
import * as stripeEntry from "postwire/providers/stripe";
import { PROVIDER_CASES } from "./providers/sign.mjs";

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL("../../", import.meta.url));
const VECTORS = JSON.parse(readFileSync(root + "tests/vectors/providers/providers.json", "utf8"));

/** A case's headers as Node hands them over: names lower-cased, repeated ones joined with ", ". */
function nodeHeaders(pairs) {
  const out = {};
  for (const [name, value] of pairs) {
    const k = name.toLowerCase();
    out[k] = k in out ? `${out[k]}, ${value}` : value;
  }
  return out;
}

/** The case's body: text, or bytes when it is not UTF-8. */
const caseBody = (c) => (c.body_base64 === undefined ? c.body : new Uint8Array(Buffer.from(c.body_base64, "base64")));

/** `verify`'s result, or the code of the WebhookVerificationError it threw (anything else fails the test). */
function outcome(body, headers, options) {
  try {
    return verify(body, headers, options);
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError, `not a WebhookVerificationError: ${e?.stack ?? e}`);
    assert.ok(ERROR_CODES.includes(e.code), e.code);
    return e.code;
  }
}

test("every provider known answer (tests/vectors/providers) gives the expected verdict and code, as a plain object, a Headers and bytes", () => {
  let cases = 0;
  for (const [name, p] of Object.entries(VECTORS.providers)) {
    for (const c of p.cases) {
      const options = {
        provider: name,
        secret: c.keys ?? p.keys,
        now: (c.now ?? VECTORS.now) * 1000,
        ...(p.settings?.url ? { publicUrl: p.settings.url } : {}),
      };
      const headers = nodeHeaders(c.headers);
      const body = caseBody(c);
      const variants = [
        ["object", body, headers],
        ["Headers", body, new Headers(headers)],
        ["bytes", typeof body === "string" ? new TextEncoder().encode(body) : body, headers],
      ];
      for (const [variant, b, h] of variants) {
        const got = outcome(b, h, options);
        const where = `${name} / ${c.name} (${variant}; sdk ${c.sdk})`;
        if (typeof c.expect === "string") {
          assert.equal(typeof got === "string" ? got : "accepted", c.expect, where);
        } else {
          assert.equal(typeof got, "object", `${where}: ${got}`);
          assert.equal(got.id, c.expect.id, where);
          assert.equal(got.type, c.expect.event_type, where);
          assert.equal(got.timestamp, c.expect.timestamp, where);
          assert.ok(got.payload !== null && typeof got.payload === "object", where);
        }
      }
      cases++;
    }
  }
  assert.equal(cases, 172);
});

test("a delivery signed by each provider's SDK (or node:crypto per its docs) verifies, with its id, type, timestamp and payload; the SDK accepts it too", async () => {
  const now = Math.floor(Date.now() / 1000);
  assert.deepEqual(Object.keys(PROVIDER_CASES).sort(), PROVIDERS.filter((p) => p !== "standard-webhooks").sort());
  for (const [name, make] of Object.entries(PROVIDER_CASES)) {
    const d = await make.make(1024, now);
    if (d.sdkVerify) await d.sdkVerify();
    const got = verify(d.body, d.headers, { provider: name, ...d.options });
    for (const [k, v] of Object.entries(d.expect)) assert.equal(got[k], v, `${name}.${k}`);
    assert.match(got.id, /^[\x21-\x7e]{1,256}$/, name);
    // The per-provider entry (ESM and CommonJS) answers the same.
    const entry = await import(`postwire/providers/${name}`);
    assert.equal(entry.provider, name);
    assert.deepEqual(entry.verify(d.body, d.headers, d.options), got, name);
    assert.deepEqual(require(`postwire/providers/${name}`).verify(d.body, d.headers, d.options), got, name);
    // One changed byte of the body never verifies.
    const tampered = d.body.slice(0, -2) + (d.body.at(-2) === "x" ? "y" : "x") + d.body.at(-1);
    assert.equal(outcome(tampered, d.headers, { provider: name, ...d.options }), "invalid_signature", name);
  }
});

test("payload: JSON bodies parsed; form bodies (Twilio, Slack commands) decoded into an object, a repeated name as an array", async () => {
  const now = Math.floor(Date.now() / 1000);
  const twilio = await PROVIDER_CASES.twilio.make(200, now);
  const got = verify(twilio.body, twilio.headers, { provider: "twilio", ...twilio.options });
  assert.equal(got.payload.From, "+14155550100");
  assert.match(got.payload.Body, /^Hello wörld! /);
  // A Slack slash command: form body, id trigger_id, type the command.
  const { createHmac } = await import("node:crypto");
  const secret = "slack-secret";
  const body = "command=%2Fweather&text=94070&trigger_id=13345224609.738474920.8088930838d88f008e0&channel=C1&channel=C2";
  const sig = `v0=${createHmac("sha256", secret).update(`v0:${now}:${body}`).digest("hex")}`;
  const slack = verify(body, { "X-Slack-Signature": sig, "X-Slack-Request-Timestamp": String(now) }, { provider: "slack", secret });
  assert.equal(slack.type, "/weather");
  assert.equal(slack.id, "13345224609.738474920.8088930838d88f008e0");
  assert.deepEqual(slack.payload, { command: "/weather", text: "94070", trigger_id: slack.id, channel: ["C1", "C2"] });
});

test("rotation: several secrets, any one verifying is enough; tolerance and the clock are options", async () => {
  const now = Math.floor(Date.now() / 1000);
  const d = await PROVIDER_CASES.stripe.make(300, now);
  const options = { provider: "stripe", secret: ["whsec_old", d.options.secret] };
  assert.equal(verify(d.body, d.headers, options).id, "evt_live_1");
  assert.equal(outcome(d.body, d.headers, { ...options, secret: ["whsec_old"] }), "invalid_signature");
  // Stale and future, both ways (Stripe's 300 s), and a tolerance given.
  assert.equal(outcome(d.body, d.headers, { ...options, now: (now + 301) * 1000 }), "timestamp_too_old");
  assert.equal(outcome(d.body, d.headers, { ...options, now: new Date((now - 301) * 1000) }), "timestamp_too_new");
  assert.equal(verify(d.body, d.headers, { ...options, now: (now + 301) * 1000, toleranceInSeconds: 600 }).id, "evt_live_1");
  assert.equal(outcome(d.body, d.headers, { ...options, now: (now + 11) * 1000, toleranceInSeconds: 10 }), "timestamp_too_old");
});

test("bad input gives a typed error with its stable code, never an uncaught exception", async () => {
  const now = Math.floor(Date.now() / 1000);
  const d = await PROVIDER_CASES.stripe.make(300, now);
  const ok = { provider: "stripe", secret: d.options.secret };
  const codeOf = (fn) => {
    try {
      fn();
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError && e instanceof Error, String(e?.stack ?? e));
      assert.equal(e.name, "WebhookVerificationError");
      return e.code;
    }
    return "accepted";
  };
  const cases = [
    ["missing header", () => verify(d.body, {}, ok), "missing_header"],
    ["another provider's headers", () => verify(d.body, { "x-hub-signature-256": "sha256=00" }, ok), "missing_header"],
    ["headers not an object", () => verify(d.body, "stripe-signature: x", ok), "missing_header"],
    ["headers null", () => verify(d.body, null, ok), "missing_header"],
    ["header value an object", () => verify(d.body, { "stripe-signature": { t: 1 } }, ok), "invalid_header"],
    ["header value an array of numbers", () => verify(d.body, { "stripe-signature": [1, 2] }, ok), "invalid_header"],
    ["header value with a line break", () => verify(d.body, { "stripe-signature": "t=1\nv1=00" }, ok), "invalid_header"],
    ["header name with a line break", () => verify(d.body, { "stripe-signature": d.headers["stripe-signature"], "a\nb": "1" }, ok), "invalid_header"],
    ["malformed signature header", () => verify(d.body, { "stripe-signature": "garbage" }, ok), "invalid_header"],
    ["wrong secret", () => verify(d.body, d.headers, { ...ok, secret: "whsec_wrong" }), "invalid_signature"],
    ["stale", () => verify(d.body, d.headers, { ...ok, now: (now + 3600) * 1000 }), "timestamp_too_old"],
    ["body parsed already", () => verify(JSON.parse(d.body), d.headers, ok), "invalid_payload"],
    ["body undefined", () => verify(undefined, d.headers, ok), "invalid_payload"],
    ["no secret", () => verify(d.body, d.headers, { provider: "stripe" }), "invalid_secret"],
    ["empty secret list", () => verify(d.body, d.headers, { provider: "stripe", secret: [] }), "invalid_secret"],
    ["secret not a string", () => verify(d.body, d.headers, { provider: "stripe", secret: 42 }), "invalid_secret"],
    ["secret with a line break", () => verify(d.body, d.headers, { provider: "stripe", secret: "a\nb" }), "invalid_secret"],
    ["bad SendGrid key", () => verify("[]", {}, { provider: "sendgrid", secret: "not-a-key" }), "invalid_public_key"],
    ["bad Discord key", () => verify("{}", {}, { provider: "discord", secret: "zz" }), "invalid_public_key"],
    ["no provider", () => verify(d.body, d.headers, { secret: "x" }), "invalid_provider_settings"],
    ["unknown provider", () => verify(d.body, d.headers, { provider: "stripe2", secret: "x" }), "invalid_provider_settings"],
    ["Twilio without publicUrl", () => verify("a=1", {}, { provider: "twilio", secret: "x" }), "invalid_provider_settings"],
    ["Twilio with a relative URL", () => verify("a=1", {}, { provider: "twilio", secret: "x", publicUrl: "/sms" }), "invalid_provider_settings"],
    ["generic without a recipe", () => verify("{}", {}, { provider: "generic", secret: "x" }), "invalid_provider_settings"],
    ["generic with md5", () => verify("{}", {}, { provider: "generic", secret: "x", recipe: { signatureHeader: "X-Sig", algorithm: "md5" } }), "invalid_provider_settings"],
    ["generic with a bad header name", () => verify("{}", {}, { provider: "generic", secret: "x", recipe: { signatureHeader: "X Sig" } }), "invalid_provider_settings"],
    ["generic with a tab in a field", () => verify("{}", {}, { provider: "generic", secret: "x", recipe: { signatureHeader: "X-Sig", prefix: "a\tb" } }), "invalid_provider_settings"],
  ];
  for (const [what, fn, code] of cases) assert.equal(codeOf(fn), code, what);
  assert.throws(() => verify(d.body, d.headers, { ...ok, toleranceInSeconds: -1 }), RangeError);
  assert.throws(() => verify(d.body, d.headers, { ...ok, now: "yesterday" }), TypeError);
  // A verified body that is not JSON where it looks like JSON.
  const { createHmac } = await import("node:crypto");
  const broken = '{"a":';
  const recipe = { signatureHeader: "X-Sig" };
  const sig = createHmac("sha256", "k").update(broken).digest("hex");
  assert.equal(codeOf(() => verify(broken, { "x-sig": sig }, { provider: "generic", secret: "k", recipe })), "invalid_payload");
  // Hostile sizes: a 4 MiB header value, 10,000 headers, an 8 MiB body: typed answers, and the module keeps working.
  assert.equal(codeOf(() => verify(d.body, { "stripe-signature": "t=1,v1=" + "a".repeat(4 << 20) }, ok)), "invalid_header");
  const many = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`x-h-${i}`, "v"]));
  assert.equal(verify(d.body, { ...many, ...d.headers }, ok).id, "evt_live_1");
  assert.equal(codeOf(() => verify("x".repeat(8 << 20), d.headers, ok)), "invalid_signature");
  assert.equal(verify(d.body, d.headers, ok).id, "evt_live_1");
});

test("random garbage headers and bodies: only WebhookVerificationErrors, for every provider", () => {
  let seed = 49;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const pick = (s) => s[Math.floor(rnd() * s.length)];
  const chars = "abcdefgt=,;:. v1h0123456789-_/+=\u00e9\u0000\u{1F600}";
  const text = (n) => Array.from({ length: Math.floor(rnd() * n) }, () => pick([...chars])).join("");
  const names = ["stripe-signature", "x-hub-signature-256", "x-github-delivery", "x-github-event", "x-shopify-hmac-sha256", "x-shopify-topic",
    "x-shopify-webhook-id", "x-slack-signature", "x-slack-request-timestamp", "x-twilio-signature", "paddle-signature", "linear-signature",
    "x-twilio-email-event-webhook-signature", "x-twilio-email-event-webhook-timestamp", "x-signature-ed25519", "x-signature-timestamp",
    "webhook-id", "webhook-timestamp", "webhook-signature", "x-sig"];
  const keys = { sendgrid: VECTORS.providers.sendgrid.keys, discord: VECTORS.providers.discord.keys, "standard-webhooks": VECTORS.providers["standard-webhooks"].keys };
  for (let i = 0; i < 3000; i++) {
    const provider = pick(PROVIDERS);
    const headers = {};
    for (let j = Math.floor(rnd() * 6); j > 0; j--) headers[pick(names)] = text(80);
    const options = { provider, secret: keys[provider] ?? "secret", publicUrl: "https://x.example/t", recipe: { signatureHeader: "X-Sig", timestampHeader: "X-Signature-Timestamp" }, now: 1_700_000_000_000 };
    const got = outcome(text(200), headers, options);
    assert.equal(typeof got, "string", `accepted garbage: ${JSON.stringify({ provider, headers })}`);
  }
});

test("the module is loaded on first use, and postwire/providers' default export is the API", () => {
  assert.equal(providers.default.verify, verify);
  assert.deepEqual([...PROVIDERS].sort(), ["discord", "generic", "github", "linear", "paddle", "sendgrid", "shopify", "slack", "standard-webhooks", "stripe", "twilio"]);
  assert.equal(stripeEntry.WebhookVerificationError, WebhookVerificationError);
  assert.deepEqual(require("postwire/providers").PROVIDERS, PROVIDERS);
});

test("postwire/providers in Deno and Bun (their own export conditions): each verifies its deliveries, refuses forgeries with their codes", async () => {
  const { spawnSync } = await import("node:child_process");
  const { existsSync } = await import("node:fs");
  const npmDir = fileURLToPath(new URL("../", import.meta.url));
  const runtimes = [
    [root + "node_modules/@deno/linux-x64-glibc/deno", ["run", "--allow-all", "--no-lock", "test/providers/runtime.mjs"]],
    [root + "node_modules/@oven/bun-linux-x64/bin/bun", ["test/providers/runtime.mjs"]],
  ];
  for (const [bin, args] of runtimes) {
    assert.ok(existsSync(bin), `${bin} (the root package.json installs it)`);
    const r = spawnSync(bin, args, { cwd: npmDir, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const got = JSON.parse(r.stdout.trim().split("\n").pop());
    assert.deepEqual(got, {
      stripe: ["evt_rt_1", "invalid_signature", "timestamp_too_old"],
      github: ["d-rt-1", "invalid_signature", "missing_header"],
      slack: ["Ev0rt", "invalid_signature", "timestamp_too_old"],
      twilio: ["idem-rt", "invalid_signature", "invalid_provider_settings"],
      discord: ["11", "invalid_signature", "timestamp_too_old"],
      sendgrid: ["sendgrid", "invalid_signature", "invalid_header"],
    }, bin);
  }
});

test("tsc accepts the providers' consumer files (ESM and CommonJS) against dist/providers*.d.ts, and the adapters' provider overloads", async () => {
  const { spawnSync } = await import("node:child_process");
  const npmDir = fileURLToPath(new URL("../", import.meta.url));
  const tsc = root + "node_modules/typescript/bin/tsc";
  const r = spawnSync(process.execPath, [tsc, "-p", "test/types/providers.tsconfig.json", "--listFiles"], { cwd: npmDir, encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  for (const types of ["providers.d.ts", "providers.d.cts", "providers/stripe.d.ts", "providers/twilio.d.ts", "providers/generic.d.ts", "providers/github.d.cts"]) {
    assert.ok(r.stdout.includes(`npm/dist/${types}`), `${types} checked`);
  }
});
