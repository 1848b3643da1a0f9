// Memory: one `Webhook` per request must cost nothing that lasts, on Node and in workerd
// at a 2024 compatibility date (no FinalizationRegistry there); a large body must not
// keep the scratch buffer at its size; dispose() zeroes and disables an object.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { Miniflare } from "miniflare";
import { Webhook, ReplayGuard, WebhookVerificationError } from "postwire";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const require = createRequire(npmDir + "../package.json");
const { Webhook: StandardWebhook } = require("standardwebhooks");
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const internals = Webhook[Symbol.for("postwire.internals")];
const MiB = 1024 * 1024;

function delivery(body, id = "msg_mem") {
  const at = new Date();
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(SECRET).sign(id, at, body),
  };
  return { body, headers };
}

test("Node: 200,000 new Webhook + verify grow RSS by less than 32 MiB", { timeout: 120_000 }, (t) => {
  const out = execFileSync(process.execPath, ["--expose-gc", npmDir + "bench/memory.mjs", "--count", "200000"], {
    encoding: "utf8",
    timeout: 110_000,
  });
  const r = JSON.parse(out);
  t.diagnostic(out.trim());
  assert.equal(r.iterations, 200000);
  assert.ok(r.growthMiB < 32, `RSS grew by ${r.growthMiB} MiB: ${out}`);
  assert.ok(r.wasmMemoryMiB < 4, `the wasm memory grew to ${r.wasmMemoryMiB} MiB: ${out}`);
});

test("a large body does not keep the scratch buffer at its size", () => {
  const wh = new Webhook(SECRET, { hmac: "wasm" });
  const big = delivery("x".repeat(8 * MiB));
  assert.equal(wh.verify(big.body, big.headers, { jsonParse: false }), undefined);
  assert.ok(internals.scratchBytes() <= 64 * 1024, `scratch at ${internals.scratchBytes()} bytes`);
  const bytes = new TextEncoder().encode("y".repeat(4 * MiB));
  assert.throws(() => wh.verify(bytes, big.headers), { code: "invalid_signature" });
  assert.ok(internals.scratchBytes() <= 64 * 1024, `scratch at ${internals.scratchBytes()} bytes after a failure`);
  // Still at its size at rest for ordinary bodies, and still working.
  const small = delivery('{"a":1}');
  assert.deepEqual(wh.verify(small.body, small.headers), { a: 1 });
  // The wasm memory (which can never shrink) does not grow further on the next large body.
  const grown = internals.memoryBytes();
  wh.verify(big.body, big.headers, { jsonParse: false });
  assert.equal(internals.memoryBytes(), grown);
});

test("dispose() and Symbol.dispose: later calls throw a TypeError; other objects are unaffected", () => {
  const { body, headers } = delivery('{"a":1}');
  const a = new Webhook(SECRET);
  const b = new Webhook(SECRET);
  a.dispose();
  assert.throws(() => a.verify(body, headers), TypeError);
  assert.throws(() => a.sign("msg_1", new Date(), body), /disposed/);
  a.dispose(); // twice is fine
  assert.deepEqual(b.verify(body, headers), { a: 1 });
  const c = new Webhook([SECRET, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]);
  assert.equal(typeof Webhook.prototype[Symbol.dispose ?? Symbol.for("Symbol.dispose")], "function");
  c[Symbol.dispose ?? Symbol.for("Symbol.dispose")]();
  assert.throws(() => c.verify(body, headers), TypeError);
  const guard = new ReplayGuard();
  guard.checkAndRecord("msg_1");
  guard[Symbol.dispose ?? Symbol.for("Symbol.dispose")]();
  assert.throws(() => guard.checkAndRecord("msg_1"), TypeError);
  assert.throws(() => guard.size, TypeError);
});

test("a bad secret leaves nothing behind and throws invalid_secret", () => {
  for (let i = 0; i < 1000; i++) {
    assert.throws(() => new Webhook("whsec_!!!!"), (e) => e instanceof WebhookVerificationError && e.code === "invalid_secret");
  }
  assert.ok(internals.scratchBytes() <= 64 * 1024);
});

/** The workerd process Miniflare started (a child of this process), by its /proc entry. */
function workerdPid() {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && stat.includes("(workerd)")) return pid;
    } catch {
      // the process ended meanwhile
    }
  }
  return null;
}
const rssOf = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

test("workerd at a 2024 compatibility date (no FinalizationRegistry): memory stays flat", { timeout: 180_000 }, async (t) => {
  const outDir = npmDir + "build/workerd-memory/";
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/workerd/memory-worker.js", "--bundle", "--format=esm", "--platform=neutral",
    "--conditions=workerd,worker,browser", "--external:*.wasm", `--outfile=${outDir}worker.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_bg.wasm", outDir + "postwire_wasm_bg.wasm");
  const mf = new Miniflare({
    modules: true,
    scriptPath: outDir + "worker.js",
    modulesRoot: outDir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2024-09-23",
    bindings: { WEBHOOK_SECRET: SECRET },
  });
  try {
    await mf.ready;
    const { body, headers } = delivery(JSON.stringify({ type: "webhook.test", data: { message: "x".repeat(200) } }));
    const round = async () => {
      const res = await mf.dispatchFetch("http://worker/loop?n=20000", { method: "POST", headers, body });
      const out = await res.json();
      assert.equal(res.status, 200, JSON.stringify(out));
      return out;
    };
    const first = await round();
    assert.equal(first.finalizationRegistry, "undefined", "the runtime must lack FinalizationRegistry for this test to mean anything");
    assert.equal(first.verified, 20000);
    const pid = workerdPid();
    assert.ok(pid, "the workerd process");
    await round();
    const before = rssOf(pid);
    let last;
    for (let i = 0; i < 10; i++) last = await round(); // 200,000 more objects
    const after = rssOf(pid);
    t.diagnostic(`workerd RSS ${before.toFixed(1)} → ${after.toFixed(1)} MiB over 200,000 objects; wasm memory ${last.wasmMemoryBytes} bytes`);
    // Before the fix each object kept ~1.2 KiB of wasm memory for good: 200,000 of them
    // grew workerd by over 200 MiB.
    assert.ok(after - before < 24, `workerd RSS grew by ${(after - before).toFixed(1)} MiB (from ${before.toFixed(1)})`);
    assert.ok(last.wasmMemoryBytes === first.wasmMemoryBytes, `wasm memory ${first.wasmMemoryBytes} → ${last.wasmMemoryBytes}`);
  } finally {
    await mf.dispose();
  }
});

test("the memory benchmark script runs for standardwebhooks too (the comparison it prints)", { timeout: 60_000 }, () => {
  const r = spawnSync(process.execPath, ["--expose-gc", npmDir + "bench/memory.mjs", "--count", "20000", "--lib", "standardwebhooks"], { encoding: "utf8", timeout: 50_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).lib, "standardwebhooks");
});
