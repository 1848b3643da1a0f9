// Benchmark: v1a (ed25519, the opt-in extension) beside v1 (HMAC-SHA256) in Node, at 1 KiB
// and 64 KiB: verify with `postwire/v1a` (postwire-core's ed25519-dalek in wasm, strict),
// with node:crypto's Ed25519 (OpenSSL, native: the ceiling, and lax: it accepts what
// postwire refuses, see tests/vectors/README.md), and v1 with the default entry point, as
// shipped (node:crypto HMAC from 1.5 KiB) and all in wasm. Sign: node:crypto's Ed25519
// (postwire's npm package verifies only; the Rust figures are in crates/postwire-bench).
//
//   node npm/bench/v1a.mjs            # about 15 s
//   node npm/bench/v1a.mjs --quick    # smoke run: checks only that every verifier agrees
//
// Needs npm/dist (bash npm/build.sh).
import crypto from "node:crypto";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const v1a = await import(join(here, "../dist/node/v1a-import.cjs"));
const v1 = await import(join(here, "../dist/node/index-import.cjs"));

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 1 : 7;
const SLICE_MS = quick ? 20 : 150;
const SIZES = [1024, 64 * 1024];
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function body(size) {
  const head = '{"id":"msg_bench","type":"webhook.test","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws_1","data":{"message":"';
  const tail = '"}}';
  return head + "x".repeat(size - head.length - tail.length) + tail;
}

function opsPerSecond(fn, ms) {
  let n = 0;
  const start = performance.now();
  let t;
  do {
    for (let i = 0; i < 8; i++) fn();
    n += 8;
    t = performance.now();
  } while (t < start + ms);
  return n / ((t - start) / 1000);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
const whpk = `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}`;

/** node:crypto's Ed25519 verify with the same header and timestamp checks: the native ceiling. */
function nativeV1a(payload, headers) {
  const id = headers["webhook-id"];
  const ts = headers["webhook-timestamp"];
  if (!/^\d+$/.test(ts) || Math.abs(Math.floor(Date.now() / 1000) - Number(ts)) > 300) throw new Error("timestamp");
  const msg = Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(payload)]);
  for (const entry of headers["webhook-signature"].split(" ")) {
    const [version, sig] = entry.split(",");
    if (version === "v1a" && crypto.verify(null, msg, publicKey, Buffer.from(sig, "base64"))) return;
  }
  throw new Error("no match");
}

const byKey = new v1a.Webhook(whpk);
const bySecret = new v1.Webhook(SECRET);
const bySecretWasm = new v1.Webhook(SECRET, { hmac: "wasm" });
const rows = [];
for (const size of SIZES) {
  const payload = body(size);
  const id = "msg_bench";
  const ts = Math.floor(Date.now() / 1000);
  const msg = Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(payload)]);
  const v1aSig = `v1a,${crypto.sign(null, msg, privateKey).toString("base64")}`;
  const v1Sig = bySecret.sign(id, new Date(ts * 1000), payload);
  const headers = { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `${v1Sig} ${v1aSig}` };
  const cells = {
    "v1a verify: postwire/v1a (wasm)": () => byKey.verify(payload, headers, { jsonParse: false }),
    "v1a verify: node:crypto Ed25519": () => nativeV1a(payload, headers),
    "v1a sign: node:crypto Ed25519": () => crypto.sign(null, Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(payload)]), privateKey),
    "v1 verify: postwire (as shipped)": () => bySecret.verify(payload, headers, { jsonParse: false }),
    "v1 verify: postwire (wasm HMAC)": () => bySecretWasm.verify(payload, headers, { jsonParse: false }),
  };
  for (const fn of Object.values(cells)) fn(); // every verifier accepts
  const samples = Object.fromEntries(Object.keys(cells).map((k) => [k, []]));
  for (let r = 0; r < ROUNDS; r++) for (const [k, fn] of Object.entries(cells)) samples[k].push(opsPerSecond(fn, SLICE_MS));
  for (const k of Object.keys(cells)) rows.push({ size: `${size / 1024} KiB`, what: k, "µs/op": (1e6 / median(samples[k])).toFixed(1) });
}
console.table(rows);
