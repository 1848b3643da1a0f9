// The framework adapters with the real frameworks over real HTTP: postwire/express in an
// Express 5 app, postwire/hono in one Hono app on Node, Bun, Deno and workerd, postwire/next's
// route handler behind Node's HTTP server (through @hono/node-server's Fetch adaptor:
// Next.js itself is not run here). Deliveries are signed by `standardwebhooks`.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { once } from "node:events";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { createHandler as expressHandler, memoryStore } from "postwire/express";
import { createHandler as nextHandler } from "postwire/next";

const require = createRequire(new URL("../../package.json", import.meta.url));
const express = require("express");
const { serve, createAdaptorServer } = await import(require.resolve("@hono/node-server"));
const { Webhook: StandardWebhook } = require("standardwebhooks");

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const npmDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = fileURLToPath(new URL("../..", import.meta.url));
const BUN = rootDir + "node_modules/@oven/bun-linux-x64/bin/bun";
const DENO = rootDir + "node_modules/@deno/linux-x64-glibc/deno";
const servers = [];
const children = [];
after(() => {
  for (const child of children) child.kill();
  return Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

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

/** The handlers every framework gets, recording what they saw, with the interface `contract` reads. */
function recorder() {
  const seen = [];
  const state = { failNext: false };
  const handlers = {
    "webhook.test": async (e) => {
      if (state.failNext) {
        state.failNext = false;
        throw new Error("database down");
      }
      seen.push([e.type, e.id, e.data.message.slice(0, 16)]);
    },
    "integration.disconnected": (e) => {
      seen.push([e.type, e.id, e.data.reason]);
    },
  };
  return { handlers, seen: async () => seen, failNext: async () => void (state.failNext = true) };
}

/**
 * The behaviour every adapter must have, against a running server's URL. `rec` sees inside
 * the app: `seen()` resolves to the [type, id, detail] its handlers recorded, `failNext()`
 * makes the next handler call throw (a local recorder, or a remote app's endpoints).
 */
async function contract(url, rec) {
  const a = await post(url, testEvent("msg_a"));
  assert.deepEqual(a, { status: 204, json: undefined });
  assert.deepEqual((await rec.seen()).at(-1), ["webhook.test", "msg_a", "hi"], "the typed handler ran");
  assert.deepEqual(await post(url, testEvent("msg_a")), { status: 200, json: { duplicate: true } });
  assert.equal((await rec.seen()).filter((s) => s[1] === "msg_a").length, 1, "a redelivery is not handled twice");
  assert.equal((await post(url, disconnected("msg_d"))).status, 204);
  assert.deepEqual((await rec.seen()).at(-1), ["integration.disconnected", "msg_d", "reconnect_required"]);

  const bad = await post(url, testEvent("msg_t"), { tamper: true });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, "invalid_signature");
  assert.equal((await post(url, testEvent("msg_w"), { secret: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" })).json.code, "invalid_signature");

  // A body large enough for the runtime's native HMAC (node:crypto, or WebCrypto in workerd).
  const big = (id) => event("webhook.test", id, { message: "hi" + "x".repeat(64 * 1024) });
  assert.equal((await post(url, big("msg_big"))).status, 204);
  assert.deepEqual((await rec.seen()).at(-1), ["webhook.test", "msg_big", "hi" + "x".repeat(14)]);
  const bigBad = await post(url, big("msg_big_t"), { tamper: true });
  assert.equal(bigBad.status, 400);
  assert.equal(bigBad.json.code, "invalid_signature");

  // A known type without a handler, and a type this version does not know: 202, ignored.
  const reconnected = event("integration.reconnected", "msg_r", { integration: { id: "acc_1", name: "Acme on X", providerIdentifier: "x", picture: null } });
  assert.deepEqual(await post(url, reconnected), { status: 202, json: { ignored: "integration.reconnected" } });
  assert.deepEqual(await post(url, event("invoice.paid", "msg_u", {})), { status: 202, json: { ignored: "invoice.paid" } });
  // A known type with a handler but the wrong shape: 400, not handled.
  const wrong = await post(url, event("integration.disconnected", "msg_x", { integration: {}, reason: "nope" }));
  assert.equal(wrong.status, 400);
  assert.equal(wrong.json.code, "invalid_payload");

  // A handler that throws: 500 so the sender retries, and the retry is handled.
  await rec.failNext();
  const failed = await post(url, testEvent("msg_f"));
  assert.equal(failed.status, 500);
  assert.equal(failed.json.code, "handler_failed");
  assert.deepEqual(await post(url, testEvent("msg_f")), { status: 204, json: undefined }, "the retry runs the handler");
  assert.deepEqual((await rec.seen()).at(-1), ["webhook.test", "msg_f", "hi"]);
}

/** The recorder of test/hono/app.js served elsewhere, through its endpoints. */
function remote(base) {
  return {
    seen: async () => (await fetch(`${base}/seen`)).json(),
    failNext: async () => assert.equal((await fetch(`${base}/fail-next`, { method: "POST" })).status, 204),
  };
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

// One Hono app (test/hono/app.js), with a body-reading middleware before the handler, in
// every runtime Hono runs on: Node (@hono/node-server), Bun (Bun.serve), Deno (Deno.serve)
// and workerd (Miniflare, bundled with the workerd condition as wrangler does). Each loads
// postwire through its own export condition; the same deliveries go to each over HTTP.
test("postwire/hono on Node (@hono/node-server)", async () => {
  const { makeApp } = await import("./hono/app.js");
  const app = makeApp();
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  const base = (await listen(server)).replace(/\/webhooks$/, "");
  assert.deepEqual(await (await fetch(`${base}/info`)).json(), { runtime: "node", nativeHmac: true, webCryptoHmac: false });
  await contract(`${base}/webhooks`, remote(base));
});

/** Starts test/hono/serve.mjs in `bin` and resolves to its base URL; the process is killed after the tests. */
async function serveIn(bin, args) {
  assert.ok(existsSync(bin), `${bin} (the root package.json installs it)`);
  const child = spawn(bin, [...args, "test/hono/serve.mjs"], {
    cwd: npmDir,
    env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} did not start listening: ${out}${err}`)), 60_000);
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line).url);
      }
    });
    child.on("exit", (code) => reject(new Error(`${bin} exited with ${code}: ${out}${err}`)));
  });
}

test("postwire/hono on Bun (Bun.serve), with the bun build's node:crypto HMAC", async () => {
  const base = await serveIn(BUN, []);
  assert.deepEqual(await (await fetch(`${base}/info`)).json(), { runtime: "bun", nativeHmac: true, webCryptoHmac: false });
  await contract(`${base}/webhooks`, remote(base));
});

test("postwire/hono on Deno (Deno.serve), with the deno build's node:crypto HMAC", async () => {
  const base = await serveIn(DENO, ["run", "--allow-net", "--allow-read", "--allow-env", "--no-lock"]);
  assert.deepEqual(await (await fetch(`${base}/info`)).json(), { runtime: "deno", nativeHmac: true, webCryptoHmac: false });
  await contract(`${base}/webhooks`, remote(base));
});

test("postwire/hono on workerd (Miniflare), bundled with the workerd condition", async () => {
  const out = npmDir + "build/hono-worker/";
  mkdirSync(out, { recursive: true });
  const meta = out + "meta.json";
  execFileSync(rootDir + "node_modules/.bin/esbuild", [
    "test/hono/worker.js", "--bundle", "--format=esm", "--platform=neutral", "--conditions=workerd,worker,browser",
    "--external:*.wasm", `--outfile=${out}worker.js`, `--metafile=${meta}`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  const inputs = Object.keys(JSON.parse(readFileSync(meta, "utf8")).inputs);
  assert.ok(inputs.includes("dist/workerd/index.js") && inputs.includes("dist/adapters/hono.js"), inputs.join(", "));
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_bg.wasm", out + "postwire_wasm_bg.wasm");
  const mf = new Miniflare({
    modules: true,
    scriptPath: out + "worker.js",
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2024-09-23",
  });
  try {
    const base = String(await mf.ready).replace(/\/$/, "");
    assert.deepEqual(await (await fetch(`${base}/info`)).json(), { runtime: "workerd", nativeHmac: false, webCryptoHmac: true });
    await contract(`${base}/webhooks`, remote(base));
  } finally {
    await mf.dispose();
  }
});

test("postwire/next's route handler over real HTTP, with a store of the former claim/release interface", async () => {
  const rec = recorder();
  // A store of the former two-method interface, async, shared by two handlers (two instances).
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
  assert.throws(() => nextHandler({}, { secret: SECRET, store: {} }), /claim\(id, token\), complete\(id, token\) and release\(id, token\)/);
  assert.throws(() => nextHandler({}, { secret: "whsec_!!!!" }), { code: "invalid_secret" });
  const store = memoryStore();
  assert.deepEqual(store.claim("x", "t1"), { state: "claimed" });
  assert.equal(store.claim("x", "t2").state, "busy");
  assert.equal(store.release("x", "t1"), true);
  assert.deepEqual(store.claim("x", "t2"), { state: "claimed" });
  assert.equal(store.complete("x", "t2"), true);
  assert.deepEqual(store.claim("x", "t3"), { state: "done" });
});
