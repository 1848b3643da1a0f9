// The framework adapters with the real frameworks over real HTTP: postwire/express in an
// Express 5 app, postwire/hono in a Hono app served by @hono/node-server, postwire/next's
// route handler behind Node's HTTP server (through @hono/node-server's Fetch adaptor:
// Next.js itself is not run here). Deliveries are signed by `standardwebhooks`.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { once } from "node:events";
import { createHandler as expressHandler, memoryStore } from "postwire/express";
import { createHandler as honoHandler } from "postwire/hono";
import { createHandler as nextHandler } from "postwire/next";

const require = createRequire(new URL("../../package.json", import.meta.url));
const express = require("express");
const { Hono } = await import(require.resolve("hono"));
const { serve, createAdaptorServer } = await import(require.resolve("@hono/node-server"));
const { Webhook: StandardWebhook } = require("standardwebhooks");

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const servers = [];
after(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

function event(type, id, data) {
  return JSON.stringify({ id, type, createdAt: new Date().toISOString(), workspaceId: "ws_1", data });
}
const testEvent = (id) => event("webhook.test", id, { message: "hi" });
const disconnected = (id) =>
  event("integration.disconnected", id, {
    integration: { id: "acc_1", name: "Acme on X", providerIdentifier: "x", picture: null },
    reason: "reconnect_required",
  });

async function post(url, body, { id = JSON.parse(body).id, tamper = false, secret = SECRET } = {}) {
  const at = new Date();
  const headers = {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(secret).sign(id, at, body),
  };
  const res = await fetch(url, { method: "POST", headers, body: tamper ? body.replace("hi", "ho") : body });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** The handlers every framework gets, recording what they saw; `failNext` makes the next call throw. */
function recorder() {
  const seen = [];
  const state = { failNext: false };
  const handlers = {
    "webhook.test": async (e) => {
      if (state.failNext) {
        state.failNext = false;
        throw new Error("database down");
      }
      seen.push([e.type, e.id, e.data.message]);
    },
    "integration.disconnected": (e) => {
      seen.push([e.type, e.id, e.data.reason]);
    },
  };
  return { seen, state, handlers };
}

/** The behaviour every adapter must have, against a running server's URL. */
async function contract(url, rec) {
  const a = await post(url, testEvent("msg_a"));
  assert.deepEqual(a, { status: 204, json: undefined });
  assert.deepEqual(rec.seen.at(-1), ["webhook.test", "msg_a", "hi"], "the typed handler ran");
  assert.deepEqual(await post(url, testEvent("msg_a")), { status: 200, json: { duplicate: true } });
  assert.equal(rec.seen.filter((s) => s[1] === "msg_a").length, 1, "a redelivery is not handled twice");
  assert.equal((await post(url, disconnected("msg_d"))).status, 204);
  assert.deepEqual(rec.seen.at(-1), ["integration.disconnected", "msg_d", "reconnect_required"]);

  const bad = await post(url, testEvent("msg_t"), { tamper: true });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, "invalid_signature");
  assert.equal((await post(url, testEvent("msg_w"), { secret: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" })).json.code, "invalid_signature");

  // A known type without a handler, and a type this version does not know: 202, ignored.
  const reconnected = event("integration.reconnected", "msg_r", { integration: { id: "acc_1", name: "Acme on X", providerIdentifier: "x", picture: null } });
  assert.deepEqual(await post(url, reconnected), { status: 202, json: { ignored: "integration.reconnected" } });
  assert.deepEqual(await post(url, event("invoice.paid", "msg_u", {})), { status: 202, json: { ignored: "invoice.paid" } });
  // A known type with a handler but the wrong shape: 400, not handled.
  const wrong = await post(url, event("integration.disconnected", "msg_x", { integration: {}, reason: "nope" }));
  assert.equal(wrong.status, 400);
  assert.equal(wrong.json.code, "invalid_payload");

  // A handler that throws: 500 so the sender retries, and the retry is handled.
  rec.state.failNext = true;
  const failed = await post(url, testEvent("msg_f"));
  assert.equal(failed.status, 500);
  assert.equal(failed.json.code, "handler_failed");
  assert.deepEqual(await post(url, testEvent("msg_f")), { status: 204, json: undefined }, "the retry runs the handler");
  assert.deepEqual(rec.seen.at(-1), ["webhook.test", "msg_f", "hi"]);
}

/** Waits for `server` (already told to listen on port 0) and returns its webhook URL. */
async function listen(server) {
  servers.push(server);
  if (!server.listening) await once(server, "listening");
  return `http://127.0.0.1:${server.address().port}/webhooks`;
}

const quiet = () => {}; // onError: the test's own failures are expected

test("postwire/express in an Express app: no body parser, express.raw, and a clear error after express.json", async () => {
  const rec = recorder();
  const app = express();
  app.post("/webhooks", expressHandler(rec.handlers, { secret: SECRET, onError: quiet }));
  const raw = express();
  const rawRec = recorder();
  raw.post("/webhooks", express.raw({ type: "*/*" }), expressHandler(rawRec.handlers, { secret: SECRET, onError: quiet }));
  const json = express();
  json.use(express.json());
  json.post("/webhooks", expressHandler({}, { secret: SECRET }));
  const realError = console.error;
  const logged = [];
  console.error = (...args) => logged.push(args.join(" "));
  try {
    await contract(await listen(app.listen(0, "127.0.0.1")), rec);
    await contract(await listen(raw.listen(0, "127.0.0.1")), rawRec);
    const res = await post(await listen(json.listen(0, "127.0.0.1")), testEvent("msg_j"));
    assert.equal(res.status, 500);
    assert.equal(res.json.code, "raw_body_unavailable");
    assert.match(res.json.message, /express\.json\(\).*express\.raw/s);
    assert.ok(logged.some((l) => l.includes("raw_body") || l.includes("express.raw")), "the fix is logged too");
  } finally {
    console.error = realError;
  }
});

test("postwire/hono in a Hono app on @hono/node-server, with a body-reading middleware before it", async () => {
  const rec = recorder();
  const app = new Hono();
  app.use("/webhooks", async (c, next) => {
    await c.req.json().catch(() => null); // a logging middleware that read the body first
    await next();
  });
  app.post("/webhooks", honoHandler(rec.handlers, { secret: SECRET, onError: quiet }));
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  await contract(await listen(server), rec);
});

test("postwire/next's route handler over real HTTP, with a pluggable store", async () => {
  const rec = recorder();
  // A store as a Redis one would be: async, shared by two handlers (two instances).
  const taken = new Map();
  const store = {
    claim: async (id) => (taken.has(id) ? false : (taken.set(id, true), true)),
    release: async (id) => void taken.delete(id),
  };
  const POST = nextHandler(rec.handlers, { secret: SECRET, store, onError: quiet });
  const server = createAdaptorServer({ fetch: POST });
  server.listen(0, "127.0.0.1");
  await contract(await listen(server), rec);
  assert.ok(taken.has("msg_a") && !taken.has("msg_t"), "only verified, handled ids are taken");
  const second = nextHandler(rec.handlers, { secret: SECRET, store });
  const server2 = createAdaptorServer({ fetch: second });
  server2.listen(0, "127.0.0.1");
  assert.deepEqual(await post(await listen(server2), testEvent("msg_a")), { status: 200, json: { duplicate: true } });
});

test("a secret missing at creation (Next.js builds) is read per request; a function secret too", async () => {
  let secret;
  const POST = nextHandler({ "webhook.test": () => {} }, { secret: () => secret });
  const at = new Date();
  const body = testEvent("msg_late");
  const headers = { "webhook-id": "msg_late", "webhook-timestamp": String(Math.floor(at / 1000)), "webhook-signature": new StandardWebhook(SECRET).sign("msg_late", at, body) };
  const realError = console.error;
  console.error = () => {};
  try {
    const missing = await POST(new Request("http://x/webhooks", { method: "POST", headers, body }));
    assert.equal(missing.status, 500);
    assert.equal((await missing.json()).code, "missing_secret");
  } finally {
    console.error = realError;
  }
  secret = SECRET;
  assert.equal((await POST(new Request("http://x/webhooks", { method: "POST", headers, body }))).status, 204);
  assert.doesNotThrow(() => nextHandler({}, { secret: undefined }));
});

test("createHandler checks its arguments", () => {
  assert.throws(() => nextHandler({ "post.publishd": () => {} }, { secret: SECRET }), /not an event type/);
  assert.throws(() => nextHandler({ "post.published": 1 }, { secret: SECRET }), /not a function/);
  assert.throws(() => nextHandler({}, { secret: "whsec_!!!!" }), { code: "invalid_secret" }, "a secret given at creation is checked then");
  assert.throws(() => nextHandler({}, { secret: SECRET, store: {} }), /claim\(id\) and release\(id\)/);
  assert.throws(() => nextHandler({}, { secret: "whsec_!!!!" }), { code: "invalid_secret" });
  const store = memoryStore();
  assert.equal(store.claim("x"), true);
  assert.equal(store.claim("x"), false);
  store.release("x");
  assert.equal(store.claim("x"), true);
});
