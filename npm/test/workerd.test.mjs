// The package inside workerd (Cloudflare Workers' runtime), through Miniflare: bundled as
// wrangler would (esbuild, conditions workerd/worker/browser, the .wasm kept as a module).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import crypto from "node:crypto";
import { Miniflare } from "miniflare";
import { CHECK_COUNT } from "./portable/checks.js";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = npmDir + "build/workerd-test/";
const require = createRequire(npmDir + "../package.json");
const { Webhook: StandardWebhook } = require("standardwebhooks");
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** An ed25519 key pair for postwire/v1a, made by node:crypto (independent of the code under test). */
const ED = (() => {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  return { privateKey, whpk: `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}` };
})();

let mf;
before(async () => {
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/workerd/worker.js", "--bundle", "--format=esm", "--platform=neutral",
    "--conditions=workerd,worker,browser", "--external:*.wasm", `--outfile=${outDir}worker.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_bg.wasm", outDir + "postwire_wasm_bg.wasm");
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_v1a_bg.wasm", outDir + "postwire_wasm_v1a_bg.wasm");
  mf = new Miniflare({
    modules: true,
    scriptPath: outDir + "worker.js",
    modulesRoot: outDir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    bindings: { WEBHOOK_SECRET: SECRET, WEBHOOK_PUBLIC_KEY: ED.whpk },
  });
  await mf.ready;
});
after(async () => {
  await mf?.dispose();
});

function delivery(body, id = "msg_wd") {
  const now = new Date();
  return {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
      "webhook-signature": new StandardWebhook(SECRET).sign(id, now, body),
    },
    body,
  };
}
const event = (id) => JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws", data: { message: "hi" } });

test("the portable checks pass inside workerd", async () => {
  const res = await mf.dispatchFetch("http://worker/checks");
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.passed.length, CHECK_COUNT, JSON.stringify(body));
});

test("a signed delivery verifies, a replay is a duplicate, a tampered one is rejected", async () => {
  const first = await mf.dispatchFetch("http://worker/hook", delivery(event("msg_wd")));
  assert.deepEqual(await first.json(), { type: "webhook.test", id: "msg_wd", seen: "fresh" });
  const again = await mf.dispatchFetch("http://worker/hook", delivery(event("msg_wd")));
  assert.equal((await again.json()).seen, "duplicate");
  const d = delivery(event("msg_t"), "msg_t");
  d.body = d.body.replace("hi", "ho");
  const tampered = await mf.dispatchFetch("http://worker/hook", d);
  assert.equal(tampered.status, 400);
  const err = await tampered.json();
  assert.equal(err.code, "invalid_signature");
  assert.equal(err.isError, true);
  const missing = await mf.dispatchFetch("http://worker/hook", { method: "POST", body: "{}" });
  assert.equal((await missing.json()).code, "missing_header");
});

test("postwire/v1a in workerd: a v1a delivery verifies with the public key, a forged one does not", async () => {
  const id = "msg_v1a";
  const ts = Math.floor(Date.now() / 1000);
  const body = event(id);
  const sig = (b) => `v1a,${crypto.sign(null, Buffer.from(`${id}.${ts}.${b}`), ED.privateKey).toString("base64")}`;
  const send = (b, signature) =>
    mf.dispatchFetch("http://worker/hook-v1a", {
      method: "POST",
      headers: { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature },
      body: b,
    });
  const ok = await send(body, sig(body));
  assert.deepEqual(await ok.json(), { id });
  const forged = await send(body.replace("hi", "ho"), sig(body));
  assert.equal(forged.status, 400);
  assert.equal((await forged.json()).code, "invalid_signature");
});
