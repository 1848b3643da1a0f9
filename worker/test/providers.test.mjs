// Provider routes (PROVIDER_ROUTES) in real workerd (Miniflare) with the mode's real store
// (POSTWIRE_DEDUP_STORE: KV, or the DedupObject), against a real origin on loopback. Each
// provider's delivery is signed by the provider's own SDK or checked by it
// (support/providers.mjs); the origin verifies what it receives with ORIGIN_SECRET alone: one
// verification whatever the source.
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startOrigin } from "./support/origin.mjs";
import { MODE, startWorker, nowSecs, assertErrorBody, delivery, newSecret } from "./support/worker.mjs";
import {
  BINDINGS,
  SW_SECRET,
  STRIPE,
  STRIPE_OLD,
  assertResigned,
  discordRequest,
  githubEvent,
  send,
  shopifyEvent,
  slackEvent,
  slackRequest,
  stripeEvent,
  twilioMessage,
} from "./support/providers.mjs";

describe(`${MODE}: provider routes, each provider's deliveries re-signed as Standard Webhooks`, () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ ...BINDINGS, ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  beforeEach(() => origin.reset());

  it("Stripe: forwarded once as stripe:<event id>, either secret of a rotation; repeats are duplicates", async () => {
    for (const secret of [STRIPE, STRIPE_OLD]) {
      const e = stripeEvent({ secret });
      const res = await send(worker, "/stripe", e);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.code, "delivered");
      const r = assertResigned(origin, `stripe:${e.id}`, e, { provider: "stripe", eventType: "invoice.paid", kept: ["stripe-signature"] });
      assert.equal(r.headers["webhook-timestamp"], e.headers["stripe-signature"].split(",")[0].slice(2), "Stripe's signed timestamp");
      const again = await send(worker, "/stripe", e);
      assert.equal(again.json?.code, "duplicate", again.text);
      assert.equal(origin.receivedFor(`stripe:${e.id}`).length, 1);
    }
  });

  it("a standard-webhooks route: the sender's signature gives way to the origin's", async () => {
    const d = delivery({ secrets: [SW_SECRET] });
    const res = await send(worker, "/sw", d);
    assert.equal(res.json?.code, "delivered", res.text);
    const r = assertResigned(origin, `sw:${d.id}`, d, { provider: "standard-webhooks", eventType: "webhook.test" });
    assert.ok(!r.headers["webhook-signature"].includes(d.headers["webhook-signature"].slice(3)), "not the sender's");
    assert.equal(r.headers["webhook-timestamp"], d.headers["webhook-timestamp"]);
    assertErrorBody(assert, await send(worker, "/sw", delivery({ secrets: [newSecret()] })), 401, "invalid_signature");
  });

  it("two routes' identical provider ids never collide", async () => {
    const e = stripeEvent();
    assert.equal((await send(worker, "/stripe", e)).json?.code, "delivered");
    assert.equal((await send(worker, "/stripe-connect", e)).json?.code, "delivered");
    assert.equal(origin.receivedFor(`stripe:${e.id}`).length, 1);
    assert.equal(origin.receivedFor(`stripe-connect:${e.id}`).length, 1);
  });

  it("GitHub: a redelivery with the same X-GitHub-Delivery is forwarded once", async () => {
    const e = await githubEvent();
    assert.equal((await send(worker, "/github", e)).json?.code, "delivered");
    assertResigned(origin, `github:${e.id}`, e, {
      provider: "github",
      eventType: "push",
      kept: ["x-github-event", "x-github-delivery", "x-github-hook-id", "x-hub-signature-256"],
    });
    // GitHub's "Redeliver": the same delivery id and body, signed again.
    const redelivery = await githubEvent({ delivery: e.id, body: e.body });
    const res = await send(worker, "/github", redelivery);
    assert.equal(res.json?.code, "duplicate", res.text);
    assert.equal(res.headers.get("x-postwire-duplicate"), "true");
    assert.equal(origin.receivedFor(`github:${e.id}`).length, 1);
  });

  it("Shopify, Slack, Discord, Twilio: forwarded once, re-signed, with their headers", async () => {
    const shop = await shopifyEvent();
    assert.equal((await send(worker, "/shopify", shop)).json?.code, "delivered");
    assertResigned(origin, `shopify:${shop.id}`, shop, {
      provider: "shopify",
      eventType: "orders/create",
      kept: ["x-shopify-hmac-sha256", "x-shopify-topic", "x-shopify-shop-domain", "x-shopify-webhook-id"],
    });

    const slack = slackEvent();
    assert.equal((await send(worker, "/slack", slack)).json?.code, "delivered");
    assertResigned(origin, `slack:${slack.id}`, slack, { provider: "slack", eventType: "app_mention", kept: ["x-slack-signature", "x-slack-request-timestamp"] });

    const command = await discordRequest({ id: `${Date.now()}001`, application_id: "1", type: 2, data: { name: "ping" }, token: "t" });
    assert.equal((await send(worker, "/discord", command)).json?.code, "delivered");
    assertResigned(origin, `discord:${command.id}`, command, { provider: "discord", eventType: "APPLICATION_COMMAND", kept: ["x-signature-ed25519"] });

    const sms = twilioMessage();
    assert.equal((await send(worker, "/twilio", sms)).json?.code, "delivered");
    const r = assertResigned(origin, `twilio:${sms.id}`, sms, { provider: "twilio", eventType: undefined, kept: ["x-twilio-signature"] });
    assert.ok(Math.abs(Number(r.headers["webhook-timestamp"]) - nowSecs()) <= 5, "no signed timestamp: the time received");

    for (const [route, d] of [["/shopify", shop], ["/slack", slack], ["/discord", command], ["/twilio", sms]]) {
      assert.equal((await send(worker, route, d)).json?.code, "duplicate", route);
    }
    assert.equal(origin.received.length, 4, "each forwarded once");
  });

  it("tampered, stale, wrong secret, another provider's signature: refused with Standard Webhooks' codes, never forwarded", async () => {
    const tamper = (d) => ({ ...d, body: d.body.replace(/.$/, " }") });
    const stale = nowSecs() - 301;
    const cases = [
      ["/stripe", tamper(stripeEvent()), 401, "invalid_signature"],
      ["/stripe", stripeEvent({ timestamp: stale }), 401, "timestamp_too_old"],
      ["/stripe", stripeEvent({ timestamp: nowSecs() + 301 }), 401, "timestamp_too_new"],
      ["/stripe", stripeEvent({ secret: `whsec_${crypto.randomBytes(24).toString("hex")}` }), 401, "invalid_signature"],
      ["/stripe", await githubEvent(), 400, "missing_header"],
      ["/github", tamper(await githubEvent()), 401, "invalid_signature"],
      ["/github", await githubEvent({ secret: "not-the-secret" }), 401, "invalid_signature"],
      ["/shopify", await shopifyEvent({ secret: "shpss_wrong" }), 401, "invalid_signature"],
      ["/shopify", tamper(await shopifyEvent()), 401, "invalid_signature"],
      ["/slack", slackEvent({ timestamp: stale }), 401, "timestamp_too_old"],
      ["/slack", slackEvent({ secret: "wrong" }), 401, "invalid_signature"],
      ["/slack", tamper(slackEvent()), 401, "invalid_signature"],
      ["/discord", await discordRequest({ id: "1", type: 2 }, { key: crypto.generateKeyPairSync("ed25519").privateKey }), 401, "invalid_signature"],
      ["/discord", await discordRequest({ id: "2", type: 2 }, { timestamp: stale }), 401, "timestamp_too_old"],
      ["/discord", tamper(await discordRequest({ id: "3", type: 2 })), 401, "invalid_signature"],
      ["/twilio", twilioMessage({ token: "wrong-token" }), 401, "invalid_signature"],
      ["/twilio", twilioMessage({ url: "https://attacker.example/twilio/sms?route=main" }), 401, "invalid_signature"],
      ["/twilio", { ...twilioMessage(), body: twilioMessage().body }, 401, "invalid_signature"],
    ];
    for (const [route, d, status, code] of cases) {
      const res = await send(worker, route, d);
      assertErrorBody(assert, res, status, code);
    }
    assert.equal(origin.received.length, 0, "nothing refused reaches the origin");
  });

  it("20 simultaneous copies of a Stripe event: one forward", async () => {
    origin.always({ status: 200, delayMs: 250 });
    for (let round = 0; round < 5; round++) {
      const e = stripeEvent();
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(worker, "/stripe", e)));
      const codes = answers.map((a) => a.json?.code);
      assert.equal(origin.receivedFor(`stripe:${e.id}`).length, 1, `round ${round}: ${codes}`);
      assert.equal(codes.filter((c) => c === "delivered").length, 1, `round ${round}: ${codes}`);
      const allowed = MODE === "kv" ? ["delivery_in_progress", "duplicate"] : ["duplicate"];
      assert.ok(codes.filter((c) => c !== "delivered").every((c) => allowed.includes(c)), `round ${round}: ${codes}`);
    }
  });

  it("Slack's url_verification and Discord's PING are answered at once, after the signature, never forwarded", async () => {
    const challenge = crypto.randomBytes(24).toString("base64url");
    const slack = slackRequest(JSON.stringify({ token: "x", challenge, type: "url_verification" }));
    const res = await send(worker, "/slack", slack);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { challenge });
    assert.match(res.headers.get("content-type"), /^application\/json/);
    const forged = slackRequest(JSON.stringify({ token: "x", challenge, type: "url_verification" }), { secret: "wrong" });
    assertErrorBody(assert, await send(worker, "/slack", forged), 401, "invalid_signature");

    const ping = await discordRequest({ id: `${Date.now()}002`, application_id: "1", type: 1, version: 1, token: "t" });
    const pong = await send(worker, "/discord", ping);
    assert.equal(pong.status, 200, pong.text);
    assert.deepEqual(pong.json, { type: 1 });
    // Discord pings again with the same interaction: answered again, never a duplicate.
    assert.deepEqual((await send(worker, "/discord", ping)).json, { type: 1 });
    const forgedPing = await discordRequest({ id: "4", type: 1 }, { key: crypto.generateKeyPairSync("ed25519").privateKey });
    assertErrorBody(assert, await send(worker, "/discord", forgedPing), 401, "invalid_signature");
    assert.equal(origin.received.length, 0);
  });

  it("an unknown path is 404, a GET is 405, a body over the limit is 413", async () => {
    const e = stripeEvent();
    for (const route of ["/", "/stripe/", "/STRIPE", "/nope"]) {
      assertErrorBody(assert, await send(worker, route, e), 404, "not_found");
    }
    const get = await send(worker, "/stripe", { method: "GET" });
    assertErrorBody(assert, get, 405, "method_not_allowed");
    const big = stripeEvent();
    big.body = JSON.stringify({ ...JSON.parse(big.body), pad: "x".repeat(1024 * 1024) });
    assertErrorBody(assert, await send(worker, "/stripe", big), 413, "payload_too_large");
    assert.equal(origin.received.length, 0);
  });

  it("a route whose secret is unset is the Worker's misconfiguration, named, never forwarded", async () => {
    const res = await send(worker, "/no-secret", await githubEvent());
    assertErrorBody(assert, res, 500, "worker_misconfigured");
    assert.equal(origin.received.length, 0);
  });

  it("hostile input: junk headers and bodies are refused with codes, the Worker keeps answering", async () => {
    const junk = [
      ["/stripe", { "stripe-signature": "t=abc,v1=zz" }, "{}"],
      ["/stripe", { "stripe-signature": `t=${nowSecs()},v1=${"0".repeat(64)}` }, "\u0000\u0001not json"],
      ["/github", { "x-hub-signature-256": "sha256=" + "g".repeat(64), "x-github-delivery": "d", "x-github-event": "push" }, "{}"],
      ["/slack", { "x-slack-signature": "v0=", "x-slack-request-timestamp": "1e9" }, "{}"],
      ["/discord", { "x-signature-ed25519": "zz", "x-signature-timestamp": String(nowSecs()) }, "{}"],
      ["/twilio", { "x-twilio-signature": "%%%" }, "a=%zz"],
      ["/shopify", { "x-shopify-hmac-sha256": "A".repeat(5000), "x-shopify-topic": "t", "x-shopify-webhook-id": "i" }, "{}"],
    ];
    for (const [route, headers, body] of junk) {
      const res = await send(worker, route, { headers, body });
      assert.ok([400, 401].includes(res.status), `${route}: ${res.status} ${res.text}`);
      assert.deepEqual(Object.keys(res.json).sort(), ["code", "message", "statusCode"]);
    }
    // A validly signed GitHub body whose id header is not a usable id.
    const bad = await githubEvent({ delivery: "has spaces in it" });
    assertErrorBody(assert, await send(worker, "/github", bad), 400, "invalid_header");
    assert.equal(origin.received.length, 0);
    assert.equal((await send(worker, "/stripe", stripeEvent())).json?.code, "delivered", "still serving");
  });
});

describe(`${MODE}: PROVIDER_ROUTES misconfigured`, () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("a malformed table or no ORIGIN_SECRET: 500 naming the setting and line, never a secret; nothing forwarded", async () => {
    worker = await startWorker({ ...BINDINGS, ORIGIN_URL: origin.url, PROVIDER_ROUTES: `/stripe stripe STRIPE_WEBHOOK_SECRETS\n/x nope ${STRIPE}` });
    const e = stripeEvent();
    const res = await send(worker, "/stripe", e);
    assertErrorBody(assert, res, 500, "worker_misconfigured");
    assert.ok(!res.text.includes(STRIPE.slice(6)), "no secret in the answer");
    await worker.reconfigure({ ...BINDINGS, ORIGIN_URL: origin.url, ORIGIN_SECRET: undefined });
    assertErrorBody(assert, await send(worker, "/stripe", e), 500, "worker_misconfigured");
    assert.equal(origin.received.length, 0);
  });
});
