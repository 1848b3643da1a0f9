// Memory: `new Webhook(secret)` + `verify` in a loop, as a handler that builds its
// verifier per request does, and the resident set size (RSS) growth it causes. Runs one
// library per process, so each starts from the same state.
//
//   node --expose-gc npm/bench/memory.mjs                 # postwire, 1,000,000 iterations
//   node --expose-gc npm/bench/memory.mjs --lib standardwebhooks
//   node --expose-gc npm/bench/memory.mjs --count 200000  # what npm/test/memory.test.mjs runs
//
// Prints one JSON line: iterations, RSS after a 10,000-iteration warm-up and at the end
// (MiB), their difference, and for postwire the wasm memory and scratch buffer sizes.
// Needs npm/dist (bash npm/build.sh) and the root node_modules (npm ci).
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "../../package.json"));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const count = Number(arg("--count", 1_000_000));
const lib = arg("--lib", "postwire");

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const { Webhook } = lib === "postwire" ? await import(join(here, "../dist/node/index-import.cjs")) : require(lib);
const internals = lib === "postwire" ? Webhook[Symbol.for("postwire.internals")] : null;

// One delivery, signed now; the body is a string, as most handlers have it.
const body = JSON.stringify({ id: "msg_mem", type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws", data: { message: "x".repeat(200) } });
const now = new Date();
const headers = {
  "webhook-id": "msg_mem",
  "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
  "webhook-signature": new Webhook(SECRET).sign("msg_mem", now, body),
};

const MiB = 1024 * 1024;
const rss = () => process.memoryUsage().rss / MiB;
const settle = () => {
  if (globalThis.gc) {
    globalThis.gc();
    globalThis.gc();
  }
};

function loop(n) {
  for (let i = 0; i < n; i++) {
    const webhook = new Webhook(SECRET);
    if (webhook.verify(body, headers).type !== "webhook.test") throw new Error("verify failed");
  }
}

const warmup = Math.min(10_000, count);
loop(warmup);
settle();
const before = rss();
const started = performance.now();
loop(count - warmup);
const seconds = (performance.now() - started) / 1000;
settle();
const after = rss();
const round = (x) => Math.round(x * 10) / 10;
console.log(
  JSON.stringify({
    lib,
    node: process.version,
    iterations: count,
    seconds: round(seconds),
    rssBeforeMiB: round(before),
    rssAfterMiB: round(after),
    growthMiB: round(after - before),
    ...(internals ? { wasmMemoryMiB: round(internals.memoryBytes() / MiB), scratchBytes: internals.scratchBytes() } : {}),
  }),
);
