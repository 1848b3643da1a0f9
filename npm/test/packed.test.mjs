// The package as users get it: `npm pack`, the tarball unpacked into a fresh project's
// node_modules, then loaded by each real runtime through its own export condition:
// Node (`node`), Bun (`bun`: node:crypto HMAC), Deno (`deno`: node:crypto HMAC), workerd
// through Miniflare (`workerd`, bundled as wrangler does) and headless Chromium
// (`browser`, bundled with esbuild). Each runs the portable checks and says which file it
// loaded and whether its HMAC for large bodies is native.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { chromium } from "playwright-core";
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { createRequire } from "node:module";
import { CHECK_COUNT } from "./portable/checks.js";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = fileURLToPath(new URL("../..", import.meta.url));
const DENO = rootDir + "node_modules/@deno/linux-x64-glibc/deno";
const BUN = rootDir + "node_modules/@oven/bun-linux-x64/bin/bun";
const ESBUILD = rootDir + "node_modules/.bin/esbuild";

const EDGE_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
let project; // a fresh project with the unpacked tarball as node_modules/postwire
let tarball;

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, {
    cwd: project,
    encoding: "utf8",
    timeout: 90_000,
    env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", DENO_DIR: join(project, ".deno") },
    ...opts,
  });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")}\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

before(() => {
  project = mkdtempSync(join(tmpdir(), "postwire-packed-"));
  // dist/ is already built by npm/test.sh; --ignore-scripts so prepack does not rebuild it.
  const out = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", project], {
    cwd: npmDir,
    encoding: "utf8",
  });
  tarball = join(project, JSON.parse(out)[0].filename);
  mkdirSync(join(project, "node_modules/postwire"), { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", join(project, "node_modules/postwire"), "--strip-components=1"]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  cpSync(join(npmDir, "test/portable/checks.js"), join(project, "checks.js"));
  writeFileSync(
    join(project, "run.mjs"),
    `import { runChecks } from "./checks.js";
import * as pw from "postwire";
const passed = await runChecks(pw);
const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const resolved = import.meta.resolve("postwire");
const internals = pw.Webhook[Symbol.for("postwire.internals")];
console.log(JSON.stringify({ runtime, resolved, passed: passed.length, native: internals.nativeHmac, webCrypto: internals.webCryptoHmac, name: pw.Webhook.name }));
`,
  );
});
after(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

const unpacked = (file) => "file://" + join(project, "node_modules/postwire", file);

test("the tarball holds the built package, its licenses and types, and nothing else", () => {
  const list = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).trim().split("\n").sort();
  for (const file of ["package/package.json", "package/README.md", "package/LICENSE-MIT", "package/LICENSE-APACHE", "package/dist/index.d.ts", "package/dist/node/index.cjs", "package/dist/node/postwire_wasm_bg.wasm", "package/dist/node/wasm-inline.cjs", "package/dist/native/index.js", "package/dist/web/index.js", "package/dist/browser/index.js", "package/dist/browser/postwire_wasm_bg.wasm", "package/dist/edge-light/index.js", "package/dist/edge-light/postwire_wasm_bg.wasm", "package/dist/workerd/index.js", "package/dist/workerd/postwire_wasm_bg.wasm", "package/dist/adapters/express.cjs", "package/dist/adapters/hono.js", "package/dist/adapters/next.d.ts"]) {
    assert.ok(list.includes(file), `${file} in ${list.join(", ")}`);
  }
  assert.ok(!list.some((f) => f.includes("/test/") || f.includes("/src/") || f.endsWith(".rs")), list.join(", "));
});

test("Node loads the node build from the tarball, with the native HMAC", () => {
  const out = JSON.parse(run(process.execPath, ["run.mjs"]));
  assert.deepEqual(out, { runtime: "node", resolved: unpacked("dist/node/index-import.cjs"), passed: CHECK_COUNT, native: true, webCrypto: false, name: "Webhook" });
  const cjs = run(process.execPath, ["-e", "const { Webhook } = require('postwire'); console.log(require.resolve('postwire'), Webhook.name)"]);
  assert.equal(cjs, `${join(project, "node_modules/postwire/dist/node/index.cjs")} Webhook`);
  // The adapters, both ways, from the tarball.
  const adapters = run(process.execPath, ["-e", "const e = require('postwire/express'); import('postwire/next').then((n) => console.log(typeof e.createHandler, typeof n.createHandler, require.resolve('postwire/hono')))"]);
  assert.equal(adapters, `function function ${join(project, "node_modules/postwire/dist/adapters/hono.cjs")}`);
});

test("Bun loads the bun build from the tarball, with node:crypto's HMAC", { skip: !existsSync(BUN) && "Bun binary not installed (optional dependency)" }, () => {
  const out = JSON.parse(run(BUN, ["run.mjs"]));
  assert.deepEqual(out, { runtime: "bun", resolved: unpacked("dist/native/index.js"), passed: CHECK_COUNT, native: true, webCrypto: false, name: "Webhook" });
});

test("Deno loads the deno build from the tarball, with node:crypto's HMAC", { skip: !existsSync(DENO) && "Deno binary not installed (optional dependency)" }, () => {
  const out = JSON.parse(run(DENO, ["run", "--no-remote", "--node-modules-dir=manual", "--allow-read", "--allow-env", "run.mjs"]));
  assert.deepEqual(out, { runtime: "deno", resolved: unpacked("dist/native/index.js"), passed: CHECK_COUNT, native: true, webCrypto: false, name: "Webhook" });
});

test("workerd (Miniflare) runs the workerd build from the tarball, bundled as wrangler does", async () => {
  writeFileSync(
    join(project, "worker.js"),
    `import * as pw from "postwire";
import { runChecks } from "./checks.js";
export default {
  async fetch() {
    const passed = await runChecks(pw);
    return Response.json({ passed: passed.length, native: pw.Webhook[Symbol.for("postwire.internals")].nativeHmac, webCrypto: pw.Webhook[Symbol.for("postwire.internals")].webCryptoHmac, name: pw.Webhook.name });
  },
};
`,
  );
  const out = join(project, "worker-out");
  mkdirSync(out, { recursive: true });
  const meta = join(project, "worker-meta.json");
  run(ESBUILD, ["worker.js", "--bundle", "--format=esm", "--platform=neutral", "--conditions=workerd,worker,browser", "--external:*.wasm", `--outfile=${join(out, "worker.js")}`, `--metafile=${meta}`, "--log-level=warning"]);
  const inputs = Object.keys(JSON.parse(readFileSync(meta, "utf8")).inputs);
  assert.ok(inputs.includes("node_modules/postwire/dist/workerd/index.js"), inputs.join(", "));
  cpSync(join(project, "node_modules/postwire/dist/workerd/postwire_wasm_bg.wasm"), join(out, "postwire_wasm_bg.wasm"));
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(out, "worker.js"),
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2024-09-23",
  });
  try {
    const res = await mf.dispatchFetch("http://worker/");
    assert.deepEqual(await res.json(), { passed: CHECK_COUNT, native: false, webCrypto: true, name: "Webhook" });
  } finally {
    await mf.dispose();
  }
});

test("edge-light (Vercel Edge): the precompiled ?module import, also in workerd", async () => {
  // Vercel's compiler resolves the edge-light condition and turns
  // `import m from "./x.wasm?module"` into a WebAssembly.Module; Miniflare does the same for
  // a file of that very name (edge-runtime, Vercel's own, is the next tests).
  writeFileSync(
    join(project, "edge.js"),
    `import * as pw from "postwire";
import { runChecks } from "./checks.js";
export default { async fetch() { return Response.json({ passed: (await runChecks(pw)).length }); } };
`,
  );
  const out = join(project, "edge-out");
  mkdirSync(out, { recursive: true });
  const meta = join(project, "edge-meta.json");
  run(ESBUILD, ["edge.js", "--bundle", "--format=esm", "--platform=neutral", "--conditions=edge-light,worker,browser", "--external:*.wasm?module", `--outfile=${join(out, "worker.js")}`, `--metafile=${meta}`, "--log-level=warning"]);
  const inputs = Object.keys(JSON.parse(readFileSync(meta, "utf8")).inputs);
  assert.ok(inputs.includes("node_modules/postwire/dist/edge-light/index.js"), inputs.join(", "));
  const bundled = readFileSync(join(out, "worker.js"), "utf8");
  assert.match(bundled, /from "\.\/postwire_wasm_bg\.wasm\?module"/);
  assert.doesNotMatch(bundled, /AGFzbQ/, "no module inlined as bytes (base64 of \\0asm)");
  cpSync(join(project, "node_modules/postwire/dist/edge-light/postwire_wasm_bg.wasm"), join(out, "postwire_wasm_bg.wasm?module"));
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(out, "worker.js"),
    modulesRoot: out,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm?module"] },
    ],
    compatibilityDate: "2024-09-23",
  });
  try {
    const res = await mf.dispatchFetch("http://edge/");
    assert.deepEqual(await res.json(), { passed: CHECK_COUNT });
  } finally {
    await mf.dispose();
  }
});

/**
 * Bundles `entry` (in the project) with the edge-light condition as Next.js's edge compiler
 * does: a `*.wasm?module` import becomes a global binding `wasm_<sha1 of the bytes>` (its
 * middleware-wasm loader), whose WebAssembly.Module Next.js compiles outside the sandbox and
 * adds to it. Resolves to the script and those bindings.
 */
async function bundleForEdge(entry) {
  const esbuild = await import("esbuild");
  const bindings = {};
  const result = await esbuild.build({
    entryPoints: [entry],
    absWorkingDir: project,
    bundle: true,
    write: false,
    format: "iife",
    platform: "neutral",
    conditions: ["edge-light", "worker", "browser"],
    metafile: true,
    logLevel: "warning",
    plugins: [
      {
        name: "wasm-module-binding",
        setup(build) {
          build.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({
            path: join(args.resolveDir, args.path.replace(/\?module$/, "")),
            namespace: "wasm-module",
          }));
          build.onLoad({ filter: /.*/, namespace: "wasm-module" }, async (args) => {
            const bytes = readFileSync(args.path);
            const name = `wasm_${createHash("sha1").update(bytes).digest("hex")}`;
            bindings[name] = await WebAssembly.compile(bytes);
            return { contents: `export default globalThis.${name};`, loader: "js" };
          });
        },
      },
    ],
  });
  return { code: result.outputFiles[0].text, inputs: Object.keys(result.metafile.inputs), bindings };
}

/**
 * Vercel's Edge runtime as the `edge-runtime` package (what Next.js runs edge routes in)
 * gives it: a fresh context whose globals are the Web APIs only, here with wasm compilation
 * from bytes refused outright (Vercel's rule, stricter than Next.js's warning), the bundle's
 * WebAssembly.Module bindings added from outside, and a fetch event per request.
 */
async function runOnEdge(bundle, request) {
  const { EdgeRuntime } = await import("edge-runtime");
  const runtime = new EdgeRuntime({
    initialCode: bundle.code,
    codeGeneration: { strings: false, wasm: false },
    extend: (context) => Object.assign(context, bundle.bindings),
  });
  const res = await runtime.dispatchFetch(request.url, request.init);
  return res.json();
}

test("edge-light in edge-runtime (Vercel's Edge runtime): the tarball's build verifies a delivery, with no wasm compiled from bytes", async () => {
  writeFileSync(
    join(project, "edge-runtime.js"),
    `import * as pw from "postwire";
import { runChecks } from "./checks.js";
addEventListener("fetch", (event) => {
  event.respondWith((async () => {
    try {
      const wh = new pw.Webhook(${JSON.stringify(EDGE_SECRET)});
      const delivered = await wh.verifyRequest(event.request.clone());
      let tampered = "accepted";
      try {
        wh.verify((await event.request.text()) + " ", event.request.headers);
      } catch (e) {
        tampered = e.code;
      }
      const passed = (await runChecks(pw)).length;
      const internals = pw.Webhook[Symbol.for("postwire.internals")];
      return Response.json({ type: delivered.type, id: delivered.id, tampered, passed, runtime: typeof EdgeRuntime, webCrypto: internals.webCryptoHmac, name: pw.Webhook.name });
    } catch (e) {
      return Response.json({ error: String(e && e.stack || e) });
    }
  })());
});
`,
  );
  const bundle = await bundleForEdge("edge-runtime.js");
  assert.ok(bundle.inputs.includes("node_modules/postwire/dist/edge-light/index.js"), bundle.inputs.join(", "));
  assert.equal(Object.keys(bundle.bindings).length, 1, "one module, imported precompiled");
  assert.doesNotMatch(bundle.code, /AGFzbQ/, "no module inlined as bytes (base64 of \\0asm)");
  const { Webhook: StandardWebhook } = createRequire(rootDir + "package.json")("standardwebhooks");
  const now = new Date();
  const body = JSON.stringify({ id: "msg_edge", type: "webhook.test", createdAt: now.toISOString(), workspaceId: "ws_1", data: { message: "hi" } });
  const headers = {
    "content-type": "application/json",
    "webhook-id": "msg_edge",
    "webhook-timestamp": String(Math.floor(now / 1000)),
    "webhook-signature": new StandardWebhook(EDGE_SECRET).sign("msg_edge", now, body),
  };
  const out = await runOnEdge(bundle, { url: "http://edge/webhooks", init: { method: "POST", headers, body } });
  assert.deepEqual(out, { type: "webhook.test", id: "msg_edge", tampered: "invalid_signature", passed: CHECK_COUNT, runtime: "string", webCrypto: true, name: "Webhook" });
});

test("postwire/v1a's edge-light build in edge-runtime verifies a node:crypto-signed v1a delivery and refuses a tampered one", async () => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const whpk = `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}`;
  writeFileSync(
    join(project, "edge-runtime-v1a.js"),
    `import { Webhook } from "postwire/v1a";
addEventListener("fetch", (event) => {
  event.respondWith((async () => {
    try {
      const body = await event.request.text();
      const wh = new Webhook(${JSON.stringify(whpk)});
      const ok = wh.verify(body, event.request.headers).x;
      let tampered = "accepted";
      try {
        wh.verify(body + " ", event.request.headers);
      } catch (e) {
        tampered = e.code;
      }
      return Response.json({ ok, tampered });
    } catch (e) {
      return Response.json({ error: String(e && e.stack || e) });
    }
  })());
});
`,
  );
  const bundle = await bundleForEdge("edge-runtime-v1a.js");
  assert.ok(bundle.inputs.includes("node_modules/postwire/dist/edge-light/v1a.js"), bundle.inputs.join(", "));
  const ts = Math.floor(Date.now() / 1000);
  const body = '{"id":"m","x":1}';
  const sig = `v1a,${sign(null, Buffer.from(`m.${ts}.${body}`), privateKey).toString("base64")}`;
  const headers = { "webhook-id": "m", "webhook-timestamp": String(ts), "webhook-signature": sig };
  assert.deepEqual(await runOnEdge(bundle, { url: "http://edge/", init: { method: "POST", headers, body } }), { ok: 1, tampered: "invalid_signature" });
});

test("headless Chromium runs the browser build from the tarball, bundled by esbuild", { timeout: 90_000 }, async () => {
  writeFileSync(
    join(project, "page.js"),
    `import * as pw from "postwire";
import { runChecks } from "./checks.js";
runChecks(pw).then(
  (passed) => { window.__result = { passed: passed.length, native: pw.Webhook[Symbol.for("postwire.internals")].nativeHmac, webCrypto: pw.Webhook[Symbol.for("postwire.internals")].webCryptoHmac, name: pw.Webhook.name }; },
  (e) => { window.__result = { error: String(e && e.stack || e) }; },
);
`,
  );
  const meta = join(project, "page-meta.json");
  run(ESBUILD, ["page.js", "--bundle", "--format=esm", "--platform=browser", "--minify", `--outfile=${join(project, "page-out.js")}`, `--metafile=${meta}`, "--log-level=warning"]);
  const inputs = Object.keys(JSON.parse(readFileSync(meta, "utf8")).inputs);
  assert.ok(inputs.includes("node_modules/postwire/dist/browser/index.js"), inputs.join(", "));
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const script = readFileSync(join(project, "page-out.js"), "utf8");
    const wasm = readFileSync(join(project, "node_modules/postwire/dist/browser/postwire_wasm_bg.wasm"));
    await page.route("**/*", (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === "/") return route.fulfill({ contentType: "text/html", body: '<script type="module" src="/page.js"></script>' });
      if (path === "/page.js") return route.fulfill({ contentType: "text/javascript", body: script });
      // The browser build's .wasm, beside the bundle, as a web server would serve the asset.
      if (path === "/postwire_wasm_bg.wasm") return route.fulfill({ contentType: "application/wasm", body: wasm });
      return route.fulfill({ status: 404, body: "" });
    });
    // WebCrypto exists only in a secure context (https, or localhost); elsewhere verifyAsync
    // hashes in wasm, with the same answers.
    for (const [origin, webCrypto] of [["http://localhost/", true], ["http://postwire.test/", false]]) {
      await page.goto(origin);
      await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60_000 });
      const result = await page.evaluate(() => window.__result);
      assert.deepEqual(errors, []);
      assert.deepEqual(result, { passed: CHECK_COUNT, native: false, webCrypto, name: "Webhook" }, origin);
    }
  } finally {
    await browser.close();
  }
});
