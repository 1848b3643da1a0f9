// The Fetch handler as a Cloudflare Worker, in real workerd (Miniflare): worker.js bundled
// with esbuild under the `workerd` export condition, as wrangler does, then sent a signed
// delivery, the same delivery again, and a tampered one over loopback HTTP.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, copyFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { delivery, newSecret, post, nowSecs } from "../test-support/deliveries.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const secret = newSecret();
let mf, url, out;

before(async () => {
  out = mkdtempSync(path.join(os.tmpdir(), "postwire-fetch-worker-"));
  await build({
    entryPoints: [path.join(HERE, "worker.js")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker"],
    external: ["*.wasm"],
    outfile: path.join(out, "worker.js"),
    logLevel: "warning",
  });
  // The package's workerd build imports its .wasm next to itself.
  const pkg = path.dirname(createRequire(import.meta.url).resolve("postwire/package.json"));
  copyFileSync(path.join(pkg, "dist", "workerd", "postwire_wasm_bg.wasm"), path.join(out, "postwire_wasm_bg.wasm"));
  mf = new Miniflare({
    modules: true,
    scriptPath: path.join(out, "worker.js"),
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-26",
    bindings: { POSTWIRE_WEBHOOK_SECRET: secret },
  });
  url = (await mf.ready).href;
});
after(async () => {
  await mf?.dispose();
  if (out) rmSync(out, { recursive: true, force: true });
});

test("workerd: signed, duplicate and tampered deliveries", async () => {
  const d = delivery(secret, { type: "post.scheduled" });
  const first = await post(url, d);
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(first.json, { received: true, duplicate: false });
  const again = await post(url, delivery(secret, { id: d.id, body: d.body, timestamp: nowSecs() }));
  assert.deepEqual(again.json, { received: true, duplicate: true });
  const tampered = await post(url, { ...d, body: d.body.replace("QUEUE", "ERROR") });
  assert.equal(tampered.status, 400);
  assert.equal(tampered.json.code, "invalid_signature");
  const get = await fetch(url);
  assert.equal(get.status, 405);
});
