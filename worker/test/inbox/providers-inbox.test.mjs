// Provider routes (PROVIDER_ROUTES) in inbox mode (wrangler.inbox.toml: the InboxObject in
// workerd through Miniflare), against a real origin on loopback: a provider's delivery is
// stored and answered 202, then delivered to the origin re-signed as Standard Webhooks with
// the provider's headers kept (stored with it); copies are duplicates; handshakes are
// answered at once and never stored; refusals are never stored.
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startOrigin } from "../support/origin.mjs";
import { startWorker, assertErrorBody, sleep } from "../support/worker.mjs";
import {
  BINDINGS,
  assertResigned,
  discordRequest,
  githubEvent,
  send,
  slackEvent,
  slackRequest,
  stripeEvent,
  twilioMessage,
} from "../support/providers.mjs";

const FILE = "wrangler.inbox.toml";
const TOKEN = "test-admin-token-0123456789abcdef";

async function until(cond, ms = 10000, what = "condition") {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe("inbox mode: provider routes", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ ...BINDINGS, ORIGIN_URL: origin.url, ADMIN_TOKEN: TOKEN }, { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  beforeEach(() => origin.reset());

  it("Stripe, GitHub, Slack, Twilio: stored (202), delivered once, re-signed, with the provider's headers", async () => {
    const stripe = stripeEvent();
    const github = await githubEvent();
    const slack = slackEvent();
    const sms = twilioMessage();
    const sent = [
      ["/stripe", stripe, `stripe:${stripe.id}`, { provider: "stripe", eventType: "invoice.paid", kept: ["stripe-signature"] }],
      ["/github", github, `github:${github.id}`, { provider: "github", eventType: "push", kept: ["x-github-delivery", "x-hub-signature-256"] }],
      ["/slack", slack, `slack:${slack.id}`, { provider: "slack", eventType: "app_mention", kept: ["x-slack-signature"] }],
      ["/twilio", sms, `twilio:${sms.id}`, { provider: "twilio", eventType: undefined, kept: ["x-twilio-signature"] }],
    ];
    for (const [route, d] of sent) {
      const res = await send(worker, route, d);
      assert.equal(res.status, 202, `${route}: ${res.text}`);
      assert.equal(res.json.code, "accepted");
    }
    // Copies while stored or delivered: duplicates, never stored twice.
    for (const [route, d] of sent) assert.equal((await send(worker, route, d)).json?.code, "duplicate", route);
    await until(() => sent.every(([, , id]) => origin.receivedFor(id).length === 1), 10000, "the inbox's deliveries");
    for (const [, d, id, expect] of sent) assertResigned(origin, id, d, expect);
    // A GitHub redelivery after delivery: still a duplicate.
    const redelivery = await githubEvent({ delivery: github.id, body: github.body });
    assert.equal((await send(worker, "/github", redelivery)).json?.code, "duplicate");
    const detail = await fetch(new URL(`/_postwire/deliveries/${encodeURIComponent(`stripe:${stripe.id}`)}`, worker.url()), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(detail.status, 200, "the admin API finds it by its namespaced id");
    await sleep(200);
    assert.equal(origin.received.length, sent.length, "each delivered once");
  });

  it("Slack's url_verification and Discord's PING are answered at once, never stored", async () => {
    const challenge = crypto.randomBytes(24).toString("base64url");
    const res = await send(worker, "/slack", slackRequest(JSON.stringify({ token: "x", challenge, type: "url_verification" })));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { challenge });
    const ping = await discordRequest({ id: `${Date.now()}009`, application_id: "1", type: 1, version: 1, token: "t" });
    const pong = await send(worker, "/discord", ping);
    assert.deepEqual([pong.status, pong.json], [200, { type: 1 }]);
    const forged = slackRequest(JSON.stringify({ token: "x", challenge, type: "url_verification" }), { secret: "wrong" });
    assertErrorBody(assert, await send(worker, "/slack", forged), 401, "invalid_signature");
    const ids = [];
    for (const state of ["pending", "retrying", "delivered", "dead"]) {
      const page = await fetch(new URL(`/_postwire/deliveries?state=${state}`, worker.url()), { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(page.status, 200);
      ids.push(...(await page.json()).deliveries.map((d) => d.id));
    }
    assert.ok(!ids.some((id) => id.startsWith("slack:slack_") || id.startsWith("discord:")), `no handshake stored: ${ids}`);
    await sleep(200);
    assert.equal(origin.received.length, 0, "nothing delivered");
  });

  it("tampered and wrong-secret deliveries are refused, never stored", async () => {
    const tampered = stripeEvent();
    tampered.body = tampered.body.replace(/.$/, " }");
    assertErrorBody(assert, await send(worker, "/stripe", tampered), 401, "invalid_signature");
    assertErrorBody(assert, await send(worker, "/github", await githubEvent({ secret: "wrong" })), 401, "invalid_signature");
    await sleep(200);
    assert.equal(origin.received.length, 0);
  });
});
