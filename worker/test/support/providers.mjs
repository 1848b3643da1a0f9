// Provider deliveries signed for the tests, each by the provider's own npm SDK where it has a
// signer (stripe, @octokit/webhooks-methods, twilio) and otherwise by node:crypto per the
// provider's docs, checked by the SDK's own verifier first (@shopify/shopify-api,
// @slack/bolt, discord-interactions); the PROVIDER_ROUTES table and secrets they are signed
// for; a request to a route; and the check of what the origin received (the Standard
// Webhooks signature made with ORIGIN_SECRET alone, by node:crypto and `standardwebhooks`).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import path from "node:path";
import querystring from "node:querystring";
import { createRequire } from "node:module";
import { Webhook } from "standardwebhooks";
import { REPO_ROOT, newSecret, newId, nowSecs, sign } from "./worker.mjs";

const require = createRequire(path.join(REPO_ROOT, "package.json"));
const Stripe = require("stripe");
const octokit = await import("@octokit/webhooks-methods");
require("@shopify/shopify-api/adapters/web-api");
const shopifyLib = require("@shopify/shopify-api");
const bolt = require("@slack/bolt");
const twilio = require("twilio");
const discord = require("discord-interactions");

export const ORIGIN_SECRET = newSecret();
export const STRIPE = `whsec_${crypto.randomBytes(24).toString("hex")}`;
export const STRIPE_OLD = `whsec_${crypto.randomBytes(24).toString("hex")}`;
const GITHUB = crypto.randomBytes(20).toString("hex");
const SHOPIFY = `shpss_${crypto.randomBytes(16).toString("hex")}`;
const SLACK = crypto.randomBytes(16).toString("hex");
const TWILIO = crypto.randomBytes(16).toString("hex");
export const SW_SECRET = newSecret();
const TWILIO_URL = "https://hooks.example.com/twilio/sms?route=main";
const discordKey = crypto.generateKeyPairSync("ed25519");
const DISCORD_PUBLIC = discordKey.publicKey.export({ type: "spki", format: "der" }).subarray(12).toString("hex");

export const ROUTES = `
# one Worker in front of six providers
/stripe         stripe   STRIPE_WEBHOOK_SECRETS
/stripe-connect stripe   STRIPE_WEBHOOK_SECRETS
/github         github   GITHUB_WEBHOOK_SECRET
/shopify        shopify  SHOPIFY_CLIENT_SECRET
/slack          slack    SLACK_SIGNING_SECRET
/discord        discord  DISCORD_PUBLIC_KEY
/twilio         twilio   TWILIO_AUTH_TOKEN  url=${TWILIO_URL}
/sw             standard-webhooks  SW_SECRETS
/no-secret      github   UNSET_SECRET
`;

export const BINDINGS = {
  PROVIDER_ROUTES: ROUTES,
  ORIGIN_SECRET,
  STRIPE_WEBHOOK_SECRETS: `${STRIPE_OLD} ${STRIPE}`,
  GITHUB_WEBHOOK_SECRET: GITHUB,
  SHOPIFY_CLIENT_SECRET: SHOPIFY,
  SLACK_SIGNING_SECRET: SLACK,
  DISCORD_PUBLIC_KEY: DISCORD_PUBLIC,
  TWILIO_AUTH_TOKEN: TWILIO,
  SW_SECRETS: SW_SECRET,
  WEBHOOK_SECRETS: undefined,
};

// ------------------------------------------------------------------- the providers' signers
const stripeClient = new Stripe("sk_test_postwire_worker_only");

export function stripeEvent({ id = newId("evt"), type = "invoice.paid", secret = STRIPE, timestamp = nowSecs() } = {}) {
  const body = JSON.stringify({ id, object: "event", type, data: { object: { id: "in_1", amount_due: 1200 } } });
  const header = stripeClient.webhooks.generateTestHeaderString({ payload: body, secret, timestamp });
  return { id, body, headers: { "content-type": "application/json", "stripe-signature": header } };
}

export async function githubEvent({ delivery = crypto.randomUUID(), event = "push", secret = GITHUB, body } = {}) {
  body ??= JSON.stringify({ ref: "refs/heads/main", after: crypto.randomBytes(20).toString("hex") });
  return {
    id: delivery,
    body,
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": delivery,
      "x-github-hook-id": "42",
      "x-hub-signature-256": await octokit.sign(secret, body),
    },
  };
}

const hmac = (alg, key, data, enc) => crypto.createHmac(alg, key).update(data).digest(enc);

const shopifyApp = shopifyLib.shopifyApi({
  apiKey: "postwire-worker-tests",
  apiSecretKey: SHOPIFY,
  scopes: [],
  hostName: "worker.postwire.invalid",
  apiVersion: shopifyLib.ApiVersion.January26,
  isEmbeddedApp: false,
  logger: { level: shopifyLib.LogSeverity.Error, log: () => {} },
});

export async function shopifyEvent({ id = crypto.randomUUID(), secret = SHOPIFY } = {}) {
  const body = JSON.stringify({ id: 820982911946154508, email: "jon@example.com", total_price: "10.00" });
  const headers = {
    "content-type": "application/json",
    "x-shopify-hmac-sha256": hmac("sha256", secret, body, "base64"),
    "x-shopify-topic": "orders/create",
    "x-shopify-shop-domain": "example.myshopify.com",
    "x-shopify-api-version": "2026-01",
    "x-shopify-webhook-id": id,
  };
  if (secret === SHOPIFY) {
    const rawRequest = new Request("https://worker.postwire.invalid/shopify", { method: "POST", headers, body });
    const checked = await shopifyApp.webhooks.validate({ rawBody: body, rawRequest });
    assert.equal(checked.valid, true, "the Shopify SDK accepts the test's signature");
  }
  return { id, body, headers };
}

export function slackRequest(body, { secret = SLACK, timestamp = nowSecs() } = {}) {
  const headers = {
    "content-type": "application/json",
    "x-slack-signature": `v0=${hmac("sha256", secret, `v0:${timestamp}:${body}`, "hex")}`,
    "x-slack-request-timestamp": String(timestamp),
  };
  if (secret === SLACK) {
    bolt.verifySlackRequest({
      signingSecret: SLACK,
      body,
      headers: { "x-slack-signature": headers["x-slack-signature"], "x-slack-request-timestamp": timestamp },
      nowMilliseconds: timestamp * 1000,
    });
  }
  return { body, headers };
}

export function slackEvent(opts) {
  const id = `Ev${crypto.randomBytes(5).toString("hex").toUpperCase()}`;
  const body = JSON.stringify({ token: "x", team_id: "T1", type: "event_callback", event_id: id, event: { type: "app_mention", text: "hi" } });
  return { id, ...slackRequest(body, opts) };
}

export async function discordRequest(payload, { key = discordKey.privateKey, timestamp = nowSecs() } = {}) {
  const body = JSON.stringify(payload);
  const signature = crypto.sign(null, Buffer.from(`${timestamp}${body}`), key).toString("hex");
  if (key === discordKey.privateKey) {
    assert.equal(await discord.verifyKey(body, signature, String(timestamp), DISCORD_PUBLIC), true, "discord-interactions accepts it");
  }
  return {
    id: payload.id,
    body,
    headers: { "content-type": "application/json", "x-signature-ed25519": signature, "x-signature-timestamp": String(timestamp) },
  };
}

export function twilioMessage({ sid = `SM${crypto.randomBytes(16).toString("hex")}`, token = TWILIO, url = TWILIO_URL } = {}) {
  const params = { MessageSid: sid, AccountSid: "AC0123", From: "+15550001", To: "+15550002", Body: "hello from twilio" };
  const body = querystring.stringify(params);
  const idempotency = `${sid}-idem`;
  return {
    id: idempotency,
    body,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": twilio.getExpectedTwilioSignature(token, url, params),
      "i-twilio-idempotency-token": idempotency,
    },
  };
}

// ----------------------------------------------------------------------------- the requests
export async function send(worker, route, { headers = {}, body, method = "POST" } = {}) {
  const res = await fetch(new URL(route, worker.url()), { method, headers, body });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

/** What the origin received for one webhook-id, checked with ORIGIN_SECRET alone. */
export function assertResigned(origin, webhookId, sent, { provider, eventType, kept = [] }) {
  const got = origin.receivedFor(webhookId);
  assert.equal(got.length, 1, `the origin received ${webhookId} once`);
  const r = got[0];
  assert.equal(r.body.toString("utf8"), sent.body, "the body byte for byte");
  assert.equal(Buffer.compare(r.body, Buffer.from(sent.body)), 0);
  const { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": signature } = r.headers;
  assert.equal(id, webhookId);
  assert.equal(signature, sign(ORIGIN_SECRET, id, ts, r.body), "the origin's signature alone, over id.timestamp.body");
  if (sent.headers["content-type"] === "application/json") {
    // standardwebhooks parses what it verifies as JSON: only for JSON bodies.
    assert.ok(new Webhook(ORIGIN_SECRET).verify(r.body.toString("utf8"), r.headers), "standardwebhooks verifies it with the origin secret");
    assert.throws(() => new Webhook(newSecret()).verify(r.body.toString("utf8"), r.headers), "another secret does not verify it");
  }
  assert.equal(r.headers["postwire-provider"], provider);
  assert.equal(r.headers["postwire-event-type"], eventType);
  for (const name of kept) assert.equal(r.headers[name], sent.headers[name], `${name} is kept`);
  assert.equal(r.headers["content-type"], sent.headers["content-type"]);
  return r;
}

