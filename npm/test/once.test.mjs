// The once-processing protocol (postwire/once's processOnce, and through it every adapter):
// each answer and what the store holds after it, with memoryStore and with stores that
// fail, hang or answer nonsense; the former two-method store; a handler slower than its
// lease (renewed), a claim lost meanwhile (onClaimLost), a memory store full of live
// claims; and the 409 and 503 with their retry-after over real HTTP through
// postwire/express, postwire/hono and postwire/next.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createRequire } from "node:module";
import { once } from "node:events";
import { memoryStore, processOnce } from "postwire/once";
import { createHandler as expressHandler } from "postwire/express";
import { createHandler as honoHandler } from "postwire/hono";
import { createHandler as nextHandler, processOnce as nextProcessOnce } from "postwire/next";

const require = createRequire(new URL("../../package.json", import.meta.url));
const express = require("express");
const { Hono } = await import(require.resolve("hono"));
const { createAdaptorServer } = await import(require.resolve("@hono/node-server"));
const { Webhook: StandardWebhook } = require("standardwebhooks");
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

const servers = [];
after(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

const event = (id) => ({ id, type: "webhook.test", data: { message: "hi" } });
const quiet = { onError: () => {} };

/** A promise with its resolve and reject, to hold a handler mid-run. */
function gate() {
  let open, fail;
  const promise = new Promise((resolve, reject) => ((open = resolve), (fail = reject)));
  return { promise, open, fail };
}

test("processOnce: the first copy runs, a copy while it runs is 409 with retry-after, a copy after it is a duplicate", async () => {
  const store = memoryStore({ leaseMs: 30_000 });
  let runs = 0;
  const held = gate();
  const handler = async () => {
    runs++;
    await held.promise;
  };
  const first = processOnce(event("msg_1"), handler, store, quiet);
  const meanwhile = await processOnce(event("msg_1"), handler, store, quiet);
  assert.equal(meanwhile.status, 409);
  assert.equal(meanwhile.json.code, "in_progress");
  assert.ok(["30", "29"].includes(meanwhile.headers["retry-after"]), meanwhile.headers["retry-after"]);
  held.open();
  assert.deepEqual(await first, { status: 204 });
  assert.deepEqual(await processOnce(event("msg_1"), handler, store, quiet), { status: 200, json: { duplicate: true } });
  assert.equal(runs, 1);
  assert.deepEqual(await nextProcessOnce(event("msg_1"), handler, store, quiet), { status: 200, json: { duplicate: true } }, "the adapters export processOnce too");
});

/** Copies of `id` every 40 ms while `first` runs: each must be 409. Returns how many. */
async function copiesWhileRunning(first, id, handler, store) {
  let done = false;
  first.finally(() => (done = true));
  let copies = 0;
  while (!done) {
    const answer = await processOnce(event(id), handler, store, quiet);
    if (done && answer.status === 200) break; // the first finished meanwhile
    assert.equal(answer.status, 409, JSON.stringify(answer));
    copies++;
    await sleep(40);
  }
  return copies;
}

test("processOnce: a handler three leases long keeps its claim (renewed): one run, every copy meanwhile 409", async () => {
  const store = memoryStore({ leaseMs: 200 });
  let runs = 0;
  const handler = async () => {
    runs++;
    await sleep(600);
  };
  const lost = [];
  const first = processOnce(event("msg_long"), handler, store, { ...quiet, onClaimLost: (e, info) => lost.push(info.stage) });
  const copies = await copiesWhileRunning(first, "msg_long", handler, store);
  assert.deepEqual(await first, { status: 204 });
  assert.ok(copies >= 5, `copies all along the three leases (${copies})`);
  assert.deepEqual(await processOnce(event("msg_long"), handler, store, quiet), { status: 200, json: { duplicate: true } });
  assert.equal(runs, 1);
  assert.deepEqual(lost, []);
});

test("processOnce: a claim lost while the handler runs is reported to onClaimLost (renew, then complete)", async () => {
  let now = 1_000_000;
  const store = memoryStore({ leaseMs: 300, now: () => now });
  const held = gate();
  const lost = [];
  const first = processOnce(event("msg_lost"), () => held.promise, store, { ...quiet, onClaimLost: (e, info) => lost.push([e.id, info.stage]) });
  // The store's clock jumps past the lease before the first renewal, and a copy takes over.
  now += 301;
  assert.deepEqual(store.claim("msg_lost", "other"), { state: "claimed" });
  for (let i = 0; i < 100 && lost.length === 0; i++) await sleep(20);
  assert.deepEqual(lost, [["msg_lost", "renew"]], "the renewal found the claim gone");
  held.open();
  assert.deepEqual(await first, { status: 204 }, "the handler's work is done: answered as such");
  assert.deepEqual(lost, [["msg_lost", "renew"], ["msg_lost", "complete"]]);
  assert.equal(store.complete("msg_lost", "other"), true, "the other copy's claim was left alone");
});

test("processOnce: a memory store full of live claims answers 503 (store_full), and keeps the claims it holds", async () => {
  const store = memoryStore({ capacity: 1 });
  const held = gate();
  const errors = [];
  const first = processOnce(event("msg_held"), () => held.promise, store, quiet);
  const full = await processOnce(event("msg_new"), () => {}, store, { onError: (e) => errors.push(e.code) });
  assert.equal(full.status, 503);
  assert.equal(full.headers["retry-after"], "5");
  assert.deepEqual(errors, ["store_full"]);
  assert.equal((await processOnce(event("msg_held"), () => {}, store, quiet)).status, 409, "the live claim is kept");
  held.open();
  assert.deepEqual(await first, { status: 204 });
  assert.deepEqual(await processOnce(event("msg_new"), () => {}, store, quiet), { status: 204 }, "the done mark makes room");
});

test("processOnce: a handler that throws releases the id (500); the retry runs it", async () => {
  const store = memoryStore();
  const errors = [];
  let runs = 0;
  const handler = async () => {
    if (++runs === 1) throw new Error("database down");
  };
  const failed = await processOnce(event("msg_2"), handler, store, { onError: (e) => errors.push(e.message) });
  assert.equal(failed.status, 500);
  assert.equal(failed.json.code, "handler_failed");
  assert.deepEqual(errors, ["database down"]);
  assert.deepEqual(await processOnce(event("msg_2"), handler, store, quiet), { status: 204 });
  assert.equal(runs, 2);
  assert.deepEqual(await processOnce(event("msg_2"), handler, store, quiet), { status: 200, json: { duplicate: true } });
});

test("processOnce: a store that throws, hangs or answers nonsense is 503 with retry-after, and the handler does not run", async () => {
  let runs = 0;
  const handler = () => void runs++;
  const broken = {
    claim: async () => {
      throw new Error("ECONNREFUSED");
    },
    complete: async () => true,
    release: async () => true,
  };
  const hanging = { claim: () => new Promise(() => {}), complete: () => true, release: () => true };
  const nonsense = { claim: () => "yes", complete: () => true, release: () => true };
  for (const store of [broken, hanging, nonsense]) {
    const errors = [];
    const answer = await processOnce(event("msg_3"), handler, store, { storeTimeoutMs: 50, onError: (e) => errors.push(e) });
    assert.equal(answer.status, 503);
    assert.equal(answer.json.code, "store_unavailable");
    assert.equal(answer.headers["retry-after"], "5");
    assert.equal(errors.length, 1, "the store's error is reported");
  }
  assert.equal(runs, 0);
});

test("processOnce: the handler's work stands when marking it done fails (2xx), and when releasing fails (500)", async () => {
  const errors = [];
  const store = {
    claim: () => ({ state: "claimed" }),
    complete: async () => {
      throw new Error("lost connection");
    },
    release: async () => {
      throw new Error("lost connection");
    },
  };
  assert.deepEqual(await processOnce(event("msg_4"), () => {}, store, { onError: (e) => errors.push(e.message) }), { status: 204 });
  const failed = await processOnce(event("msg_4"), () => {
    throw new Error("bug");
  }, store, { onError: (e) => errors.push(e.message) });
  assert.equal(failed.status, 500);
  assert.deepEqual(errors, ["lost connection", "bug", "lost connection"]);
});

test("processOnce: a store of the former interface (claim → boolean, release) still works", async () => {
  const taken = new Set();
  const legacy = { claim: async (id) => (taken.has(id) ? false : (taken.add(id), true)), release: async (id) => void taken.delete(id) };
  let runs = 0;
  assert.deepEqual(await processOnce(event("msg_5"), () => void runs++, legacy), { status: 204 });
  assert.deepEqual(await processOnce(event("msg_5"), () => void runs++, legacy), { status: 200, json: { duplicate: true } });
  assert.equal(runs, 1);
  assert.equal((await processOnce(event("msg_6"), () => Promise.reject(new Error("x")), legacy, quiet)).status, 500);
  assert.equal(taken.has("msg_6"), false, "released");
});

test("processOnce checks its arguments", async () => {
  await assert.rejects(processOnce({}, () => {}, memoryStore()), /string id/);
  await assert.rejects(processOnce(event("m"), null, memoryStore()), /handler must be a function/);
  await assert.rejects(processOnce(event("m"), () => {}, { claim() {} }), /claim\(id, token\), complete\(id, token\) and release\(id, token\)/);
  assert.throws(() => nextHandler({}, { secret: SECRET, storeTimeoutMs: 0 }), /storeTimeoutMs/);
});

function signed(id) {
  const body = JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws_1", data: { message: "hi" } });
  const at = new Date();
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new StandardWebhook(SECRET).sign(id, at, body),
    },
    body,
  };
}

async function listen(server) {
  servers.push(server);
  if (!server.listening) await once(server, "listening");
  return `http://127.0.0.1:${server.address().port}/webhooks`;
}

test("every adapter answers 409 and 503 over HTTP with retry-after", async () => {
  const held = gate();
  const handlers = { "webhook.test": () => held.promise };
  const down = { claim: () => Promise.reject(new Error("down")), complete: () => true, release: () => true };
  const apps = [];
  for (const [name, make] of [
    ["express", (store) => {
      const app = express();
      app.post("/webhooks", expressHandler(handlers, { secret: SECRET, store, ...quiet }));
      return app.listen(0, "127.0.0.1");
    }],
    ["hono", (store) => {
      const app = new Hono();
      app.post("/webhooks", honoHandler(handlers, { secret: SECRET, store, ...quiet }));
      return createAdaptorServer({ fetch: app.fetch }).listen(0, "127.0.0.1");
    }],
    ["next", (store) => createAdaptorServer({ fetch: nextHandler(handlers, { secret: SECRET, store, ...quiet }) }).listen(0, "127.0.0.1")],
  ]) {
    apps.push([name, await listen(make(memoryStore())), await listen(make(down))]);
  }
  for (const [name, url, downUrl] of apps) {
    const first = fetch(url, signed(`msg_${name}`));
    let busy;
    for (let i = 0; i < 50 && busy?.status !== 409; i++) busy = await fetch(url, signed(`msg_${name}`));
    assert.equal(busy.status, 409, name);
    assert.equal(busy.headers.get("retry-after"), "30", name);
    assert.equal((await busy.json()).code, "in_progress", name);
    const unavailable = await fetch(downUrl, signed(`msg_${name}`));
    assert.equal(unavailable.status, 503, name);
    assert.equal(unavailable.headers.get("retry-after"), "5", name);
    assert.equal((await unavailable.json()).code, "store_unavailable", name);
    apps.find((a) => a[0] === name).push(first);
  }
  held.open();
  for (const [name, , , first] of apps) assert.equal((await first).status, 204, name);
});
