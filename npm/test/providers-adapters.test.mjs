// Other providers' webhooks through the adapters and processOnce (issue 49): Express, Hono
// (on Node, over loopback HTTP) and the Next route handler take `{ provider, secret }`
// (the provider's postwire/providers/<name> entry), verify, answer Slack's and Discord's
// handshakes, and process each delivery once by its id; processOnce with a provider delivery.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { once } from "node:events";
import { createHmac } from "node:crypto";
import { createHandler as expressHandler } from "postwire/express";
import { createHandler as honoHandler } from "postwire/hono";
import { createHandler as nextHandler } from "postwire/next";
import { processOnce, memoryStore } from "postwire/once";
import * as stripe from "postwire/providers/stripe";
import * as slack from "postwire/providers/slack";
import { PROVIDER_CASES } from "./providers/sign.mjs";

const require = createRequire(new URL("../../package.json", import.meta.url));
const express = require("express");
const { Hono } = require("hono");
const { createAdaptorServer } = await import(require.resolve("@hono/node-server"));

const servers = [];
after(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));
const quiet = () => {};

async function listen(server) {
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${server.address().port}/hooks`;
}

/** The three adapters, each serving `handlers` with `options`, as `(body, headers) => {status, json}`. */
async function adapters(handlers, options) {
  const app = express();
  app.post("/hooks", expressHandler(handlers, options));
  const expressUrl = await listen(require("node:http").createServer(app));
  const hono = new Hono();
  hono.post("/hooks", honoHandler(handlers, options));
  const honoUrl = await listen(createAdaptorServer({ fetch: hono.fetch }));
  const nextPost = nextHandler(handlers, options);
  const over = (url) => async (body, headers) => {
    const res = await fetch(url, { method: "POST", headers, body });
    const text = await res.text();
    return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
  };
  const viaNext = async (body, headers) => {
    const res = await nextPost(new Request("https://app.example/hooks", { method: "POST", headers, body }));
    const text = await res.text();
    return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
  };
  return { express: over(expressUrl), hono: over(honoUrl), next: viaNext };
}

test("every provider through Express, Hono and Next: handled once, a copy is a duplicate, a forgery 400 with its code", async () => {
  const now = Math.floor(Date.now() / 1000);
  for (const [name, maker] of Object.entries(PROVIDER_CASES)) {
    const provider = await import(`postwire/providers/${name}`);
    const seen = [];
    const d = await maker.make(2048, now);
    const { secret, ...settings } = d.options;
    const handlers = { "*": (delivery) => void seen.push(delivery) };
    const sends = await adapters(handlers, { provider, secret, ...settings, onError: quiet });
    for (const [adapter, send] of Object.entries(sends)) {
      seen.length = 0;
      const where = `${name} via ${adapter}`;
      const first = await send(d.body, d.headers);
      if (name === "discord") {
        // The case is a PING: answered at once with its pong, never processed.
        assert.deepEqual(first, { status: 200, json: { type: 1 } }, where);
        assert.equal(seen.length, 0, where);
        continue;
      }
      assert.deepEqual(first, { status: 204, json: undefined }, where);
      assert.equal(seen.length, 1, where);
      assert.equal(seen[0].provider, name, where);
      for (const [k, v] of Object.entries(d.expect)) assert.equal(seen[0][k], v, `${where}: ${k}`);
      assert.ok(seen[0].payload && typeof seen[0].payload === "object", where);
      assert.deepEqual(await send(d.body, d.headers), { status: 200, json: { duplicate: true } }, where);
      assert.equal(seen.length, 1, `${where}: the copy is not handled`);
      const forged = await send(d.body.replace(/.$/, (c) => (c === "}" ? " }" : c + "x")), d.headers);
      assert.equal(forged.status, 400, where);
      assert.equal(forged.json.code, "invalid_signature", where);
      assert.equal((await send(d.body, {})).json.code, "missing_header", where);
    }
  }
});

test("the typed router: a handler per provider event type, 202 for a type without one; a wrong secret setting is 500", async () => {
  const now = Math.floor(Date.now() / 1000);
  const calls = [];
  const sends = await adapters({ "invoice.paid": (e) => void calls.push(e.payload.id) }, { provider: stripe, secret: () => "whsec_postwireTestStripe", onError: quiet });
  const paid = await PROVIDER_CASES.stripe.make(500, now);
  assert.equal((await sends.hono(paid.body, paid.headers)).status, 204);
  assert.deepEqual(calls, ["evt_live_1"]);
  const body = JSON.stringify({ id: "evt_other", type: "customer.created" });
  const sig = `t=${now},v1=${createHmac("sha256", "whsec_postwireTestStripe").update(`${now}.${body}`).digest("hex")}`;
  assert.deepEqual(await sends.express(body, { "stripe-signature": sig }), { status: 202, json: { ignored: "customer.created" } });
  const misconfigured = await adapters({ "*": () => {} }, { provider: await import("postwire/providers/discord"), secret: "not-hex", onError: quiet });
  const origError = console.error;
  console.error = () => {};
  try {
    const answer = await misconfigured.next("{}", { "x-signature-ed25519": "00", "x-signature-timestamp": String(now) });
    assert.equal(answer.status, 500);
    assert.equal(answer.json.code, "invalid_public_key");
  } finally {
    console.error = origError;
  }
  assert.throws(() => expressHandler({}, { provider: "stripe", secret: "x" }), TypeError);
});

test("Slack's url_verification is answered with its challenge after the signature, and not processed", async () => {
  const now = Math.floor(Date.now() / 1000);
  const secret = "slack-signing-secret";
  const body = JSON.stringify({ token: "t", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
  const headers = { "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${now}:${body}`).digest("hex")}`, "x-slack-request-timestamp": String(now) };
  let ran = 0;
  const sends = await adapters({ "*": () => void ran++ }, { provider: slack, secret });
  for (const send of Object.values(sends)) {
    assert.deepEqual(await send(body, headers), { status: 200, json: { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" } });
    assert.equal((await send(body, { ...headers, "x-slack-signature": "v0=" + "0".repeat(64) })).json.code, "invalid_signature");
  }
  assert.equal(ran, 0);
});

test("processOnce over the memory store: a Stripe event sent twice is handled once", async () => {
  const now = Math.floor(Date.now() / 1000);
  const d = await PROVIDER_CASES.stripe.make(1024, now);
  const store = memoryStore();
  const handled = [];
  const handler = (delivery) => void handled.push(delivery.id);
  const first = await processOnce(stripe.verify(d.body, d.headers, d.options), handler, store);
  const second = await processOnce(stripe.verify(d.body, d.headers, d.options), handler, store);
  assert.deepEqual(first, { status: 204 });
  assert.deepEqual(second, { status: 200, json: { duplicate: true } });
  assert.deepEqual(handled, ["evt_live_1"]);
});
