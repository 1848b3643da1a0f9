// Signed deliveries of every provider, for the providers tests and bench: each signed by
// the provider's own npm SDK where it can sign (stripe, @octokit/webhooks-methods, twilio),
// otherwise with node:crypto per the provider's docs. `sdkVerify` is the provider SDK's own
// verifier of the same request (the bench measures it; the tests check it accepts what is
// signed here, so a signing mistake cannot pass for a postwire bug). Node only (the SDKs).
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(fileURLToPath(new URL("../../../package.json", import.meta.url)));
const Stripe = require("stripe");
const octokit = await import("@octokit/webhooks-methods");
const twilio = require("twilio");
const bolt = require("@slack/bolt");
const { EventWebhook } = require("@sendgrid/eventwebhook");
const discord = require("discord-interactions");
const { LinearWebhookClient } = await import("@linear/sdk/webhooks");
require("@shopify/shopify-api/adapters/node");
const shopifyLib = require("@shopify/shopify-api");
const paddle = require("@paddle/paddle-node-sdk");

const hmac = (alg, key, data, enc) => crypto.createHmac(alg, key).update(data).digest(enc);
const stripe = new Stripe("sk_test_postwire", { apiVersion: "2024-06-20" });

/** Pads a JSON object's `pad` field so the body is about `size` bytes. */
export function padded(obj, size) {
  const base = JSON.stringify({ ...obj, pad: "" });
  return JSON.stringify({ ...obj, pad: "x".repeat(Math.max(0, size - base.length)) });
}

const sendgridKeys = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const sendgridPublic = sendgridKeys.publicKey.export({ type: "spki", format: "der" }).toString("base64");
const discordKeys = crypto.generateKeyPairSync("ed25519");
const discordPublic = Buffer.from(discordKeys.publicKey.export({ format: "jwk" }).x, "base64url").toString("hex");
const TWILIO_URL = "https://hooks.example.com/twilio/sms?route=a";

/**
 * Every provider: `make(size, nowSecs)` → `{ body, headers, options, sdkVerify }`, where
 * `options` are postwire's (`secret`, and `publicUrl` or `recipe`) and `sdkVerify()`
 * runs the provider SDK's verifier on the same request (may return a promise).
 */
export const PROVIDER_CASES = {
  stripe: {
    sdk: "stripe",
    make(size, now) {
      const secret = "whsec_postwireTestStripe";
      const body = padded({ id: "evt_live_1", object: "event", type: "invoice.paid" }, size);
      const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: now });
      return {
        body,
        headers: { "stripe-signature": header },
        options: { secret },
        expect: { id: "evt_live_1", type: "invoice.paid", timestamp: now },
        sdkVerify: () => stripe.webhooks.constructEvent(body, header, secret),
      };
    },
  },
  github: {
    sdk: "@octokit/webhooks-methods",
    async make(size) {
      const secret = "postwire-github-secret";
      const body = padded({ action: "opened", number: 1 }, size);
      const signature = await octokit.sign(secret, body);
      return {
        body,
        headers: { "x-hub-signature-256": signature, "x-github-delivery": "d6a5b7c2-0000-11ef-8000-000000000001", "x-github-event": "pull_request" },
        options: { secret },
        expect: { id: "d6a5b7c2-0000-11ef-8000-000000000001", type: "pull_request", timestamp: null },
        sdkVerify: () => octokit.verify(secret, body, signature),
      };
    },
  },
  shopify: {
    sdk: "@shopify/shopify-api",
    make(size) {
      const secret = "shpss_postwireTestShopify";
      const body = padded({ id: 820982911946154500, email: "jon@example.com" }, size);
      const headers = {
        "x-shopify-hmac-sha256": hmac("sha256", secret, body, "base64"),
        "x-shopify-topic": "orders/create",
        "x-shopify-shop-domain": "postwire.myshopify.com",
        "x-shopify-api-version": "2025-01",
        "x-shopify-webhook-id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
      };
      const app = shopifyLib.shopifyApi({
        apiKey: "k",
        apiSecretKey: secret,
        scopes: [],
        hostName: "app.example.com",
        apiVersion: shopifyLib.ApiVersion.January25,
        isEmbeddedApp: false,
        logger: { level: shopifyLib.LogSeverity.Error },
      });
      return {
        body,
        headers,
        options: { secret },
        expect: { id: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", type: "orders/create", timestamp: null },
        sdkVerify: async () => {
          const r = await app.webhooks.validate({ rawBody: body, rawRequest: { headers }, rawResponse: {} });
          if (!r.valid) throw new Error(`shopify refused: ${r.reason}`);
          return r;
        },
      };
    },
  },
  slack: {
    sdk: "@slack/bolt",
    make(size, now) {
      const secret = "8f742231b10e8888abcd99yyyzzz85a5";
      const body = padded({ token: "x", team_id: "T1", type: "event_callback", event_id: "Ev0Live", event: { type: "app_mention" } }, size);
      const signature = `v0=${hmac("sha256", secret, `v0:${now}:${body}`, "hex")}`;
      return {
        body,
        headers: { "x-slack-signature": signature, "x-slack-request-timestamp": String(now) },
        options: { secret },
        expect: { id: "Ev0Live", type: "app_mention", timestamp: now },
        sdkVerify: () =>
          bolt.verifySlackRequest({
            signingSecret: secret,
            body,
            headers: { "x-slack-signature": signature, "x-slack-request-timestamp": now },
            nowMilliseconds: now * 1000,
          }),
      };
    },
  },
  twilio: {
    sdk: "twilio",
    make(size) {
      const secret = "12345678901234567890123456789012";
      const params = { AccountSid: "AC0001", Body: "Hello wörld! " + "x".repeat(Math.max(0, size - 120)), From: "+14155550100", To: "+14155550111", MessageSid: "SM0001" };
      const body = new URLSearchParams(params).toString();
      const signature = twilio.getExpectedTwilioSignature(secret, TWILIO_URL, params);
      return {
        body,
        headers: { "x-twilio-signature": signature, "i-twilio-idempotency-token": "idem-live-1" },
        options: { secret, publicUrl: TWILIO_URL },
        expect: { id: "idem-live-1", type: null, timestamp: null },
        sdkVerify: () => {
          if (!twilio.validateRequest(secret, signature, TWILIO_URL, Object.fromEntries(new URLSearchParams(body)))) throw new Error("twilio refused");
        },
      };
    },
  },
  paddle: {
    sdk: "@paddle/paddle-node-sdk",
    make(size, now) {
      const secret = "pdl_ntfset_01postwiretest_secret";
      const body = padded({ event_id: "evt_01live", event_type: "transaction.completed", data: {} }, size);
      const signature = `ts=${now};h1=${hmac("sha256", secret, `${now}:${body}`, "hex")}`;
      const sdk = new paddle.Paddle("pdl_sdbx_apikey_postwire");
      return {
        body,
        headers: { "paddle-signature": signature },
        options: { secret },
        expect: { id: "evt_01live", type: "transaction.completed", timestamp: now },
        sdkVerify: async () => {
          if (!(await sdk.webhooks.isSignatureValid(body, secret, signature))) throw new Error("paddle refused");
        },
      };
    },
  },
  linear: {
    sdk: "@linear/sdk",
    make(size, now) {
      const secret = "lin_wh_postwiretestsecret";
      const body = padded({ action: "create", type: "Issue", data: { id: "iss_1" }, webhookTimestamp: now * 1000, webhookId: "wh_1" }, size);
      const signature = hmac("sha256", secret, body, "hex");
      return {
        body,
        headers: { "linear-signature": signature, "linear-delivery": "5c2f4b8e-live" },
        options: { secret },
        expect: { id: "5c2f4b8e-live", type: "Issue", timestamp: now },
        sdkVerify: () => new LinearWebhookClient(secret).parseVerifiedPayload(Buffer.from(body), signature),
      };
    },
  },
  sendgrid: {
    sdk: "@sendgrid/eventwebhook",
    make(size, now) {
      const events = [{ email: "a@example.com", timestamp: now, event: "delivered", pad: "" }];
      events[0].pad = "x".repeat(Math.max(0, size - JSON.stringify(events).length));
      const body = JSON.stringify(events);
      const signature = crypto.sign("sha256", Buffer.from(`${now}${body}`), sendgridKeys.privateKey).toString("base64");
      const ew = new EventWebhook();
      const pem = `-----BEGIN PUBLIC KEY-----\n${sendgridPublic.match(/.{1,64}/g).join("\n")}\n-----END PUBLIC KEY-----\n`;
      const key = ew.convertPublicKeyToECDSA(pem);
      return {
        body,
        headers: { "x-twilio-email-event-webhook-signature": signature, "x-twilio-email-event-webhook-timestamp": String(now) },
        options: { secret: sendgridPublic },
        expect: { type: null, timestamp: now },
        sdkVerify: () => {
          if (!ew.verifySignature(key, body, signature, String(now))) throw new Error("sendgrid refused");
        },
      };
    },
  },
  discord: {
    sdk: "discord-interactions",
    make(size, now) {
      const body = padded({ id: "1170000000000000009", application_id: "1", type: 1, token: "t" }, size);
      const signature = crypto.sign(null, Buffer.from(`${now}${body}`), discordKeys.privateKey).toString("hex");
      return {
        body,
        headers: { "x-signature-ed25519": signature, "x-signature-timestamp": String(now) },
        options: { secret: discordPublic },
        expect: { id: "1170000000000000009", type: "PING", timestamp: now },
        sdkVerify: async () => {
          if (!(await discord.verifyKey(body, signature, String(now), discordPublic))) throw new Error("discord refused");
        },
      };
    },
  },
  generic: {
    sdk: null,
    make(size, now) {
      const secret = "typeform-like-secret";
      const body = padded({ event_id: "01HLIVE", event_type: "form_response" }, size);
      return {
        body,
        headers: {
          "x-acme-signature": `sha256=${hmac("sha256", secret, `${now}.${body}`, "base64")}`,
          "x-acme-timestamp": String(now),
          "x-acme-delivery": "acme-live-1",
          "x-acme-event": "form_response",
        },
        options: {
          secret,
          recipe: {
            signatureHeader: "X-Acme-Signature",
            algorithm: "sha256",
            encoding: "base64",
            prefix: "sha256=",
            timestampHeader: "X-Acme-Timestamp",
            separator: ".",
            toleranceInSeconds: 300,
            idHeader: "X-Acme-Delivery",
            typeHeader: "X-Acme-Event",
          },
        },
        expect: { id: "acme-live-1", type: "form_response", timestamp: now },
        sdkVerify: null,
      };
    },
  },
};
