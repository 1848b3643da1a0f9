// Benchmark: verify one delivery at 256 B, 1 KiB, 16 KiB and 256 KiB, in one run, with
// postwire (this package, Node build: as shipped, and with `hmac: "wasm"`, which is what
// Deno, Bun, browsers and Workers run), the `standardwebhooks` and `svix` npm packages,
// and a hand-written node:crypto verifier (createHmac + timingSafeEqual: the native
// ceiling). Every verifier checks the timestamp and the signature and skips JSON parsing
// (`jsonParse: false`; svix never parses), so the figures compare verification alone.
//
//   node npm/bench/verify.mjs            # about 25 s in all
//   node npm/bench/verify.mjs --quick    # smoke run (CI): a few ms per cell, checks only that all agree
//
// Needs npm/dist (bash npm/build.sh) and the root node_modules (npm ci).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../../package.json"));
const postwire = await import(join(here, "../dist/node/index-import.cjs"));
const { Webhook: StandardWebhook } = require("standardwebhooks");
const { Webhook: SvixWebhook } = await import(require.resolve("svix"));

const quick = process.argv.includes("--quick");
// Each cell is measured in ROUNDS slices, interleaved across the verifiers, and the
// median slice is reported: on a shared machine, load then hits every verifier alike.
const ROUNDS = quick ? 1 : 7;
const SLICE_MS = quick ? 20 : 120;
const WARMUP_MS = quick ? 5 : 200;
const SIZES = [256, 1024, 16 * 1024, 256 * 1024];
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** A JSON body of exactly `size` bytes. */
function body(size) {
  const head = '{"id":"msg_bench","type":"webhook.test","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws_1","data":{"message":"';
  const tail = '"}}';
  return head + "x".repeat(size - head.length - tail.length) + tail;
}

/** The node:crypto ceiling: the least a correct verifier must do, all in native code. */
function nativeVerifier(secret) {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return (payload, headers) => {
    const id = headers["webhook-id"];
    const ts = headers["webhook-timestamp"];
    const now = Math.floor(Date.now() / 1000);
    const t = Number(ts);
    if (!/^\d+$/.test(ts) || Math.abs(now - t) > 300) throw new Error("timestamp");
    const expected = createHmac("sha256", key).update(`${id}.${ts}.`).update(payload).digest();
    for (const entry of headers["webhook-signature"].split(" ")) {
      const [version, sig] = entry.split(",");
      if (version !== "v1") continue;
      const given = Buffer.from(sig, "base64");
      if (given.length === expected.length && timingSafeEqual(given, expected)) return;
    }
    throw new Error("no match");
  };
}

/** Calls per second of `fn` over about `ms` milliseconds. */
function opsPerSecond(fn, ms) {
  let n = 0;
  const start = performance.now();
  const end = start + ms;
  let t;
  do {
    for (let i = 0; i < 16; i++) fn();
    n += 16;
    t = performance.now();
  } while (t < end);
  return n / ((t - start) / 1000);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const pw = new postwire.Webhook(SECRET);
const pwWasm = new postwire.Webhook(SECRET, { hmac: "wasm" });
const sw = new StandardWebhook(SECRET);
const sx = new SvixWebhook(SECRET);
const native = nativeVerifier(SECRET);
const libs = {
  postwire: (p, h) => pw.verify(p, h, { jsonParse: false }),
  "postwire (wasm HMAC)": (p, h) => pwWasm.verify(p, h, { jsonParse: false }),
  standardwebhooks: (p, h) => sw.verify(p, h, { jsonParse: false }),
  svix: (p, h) => sx.verify(p, h),
  "node:crypto": native,
};

const rows = [];
for (const size of SIZES) {
  const payload = body(size);
  const id = "msg_bench";
  const now = new Date();
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": sw.sign(id, now, payload),
  };
  const samples = {};
  for (const [name, verify] of Object.entries(libs)) {
    verify(payload, headers); // throws if this verifier disagrees
    let threw = false;
    try {
      verify(payload + " ", headers);
    } catch {
      threw = true;
    }
    if (!threw) throw new Error(`${name} accepted a tampered body`);
    opsPerSecond(() => verify(payload, headers), WARMUP_MS);
    samples[name] = [];
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, verify] of Object.entries(libs)) samples[name].push(opsPerSecond(() => verify(payload, headers), SLICE_MS));
  }
  const row = { size };
  for (const name of Object.keys(libs)) row[name] = median(samples[name]);
  rows.push(row);
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const label = (s) => (s >= 1024 ? `${s / 1024} KiB` : `${s} B`);
console.log(
  `node ${process.version}, median of ${ROUNDS} interleaved slices of ${SLICE_MS} ms per cell` +
    `${quick ? " (quick smoke run: figures meaningless)" : ""}\n`,
);
const x = (a, b) => `${(a / b).toFixed(2)}×`;
console.log("ops/s (verifications per second, higher is better)\n");
console.log("| body | postwire | postwire (wasm HMAC) | standardwebhooks | svix | node:crypto |");
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  console.log(`| ${label(r.size)} | ${fmt(r.postwire)} | ${fmt(r["postwire (wasm HMAC)"])} | ${fmt(r.standardwebhooks)} | ${fmt(r.svix)} | ${fmt(r["node:crypto"])} |`);
}
console.log("\nratios\n");
console.log("| body | postwire ÷ standardwebhooks | postwire ÷ svix | postwire ÷ node:crypto | wasm HMAC ÷ standardwebhooks | wasm HMAC ÷ node:crypto |");
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  const w = r["postwire (wasm HMAC)"];
  console.log(`| ${label(r.size)} | ${x(r.postwire, r.standardwebhooks)} | ${x(r.postwire, r.svix)} | ${x(r.postwire, r["node:crypto"])} | ${x(w, r.standardwebhooks)} | ${x(w, r["node:crypto"])} |`);
}
