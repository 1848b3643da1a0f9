// Packaging: the `exports` map picks the right build for each runtime, `require` and
// `import` both work (and share one instance), and the package runs in Deno and Bun
// (binaries from npm) and through the browser build in Node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, readFileSync, mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esm from "postwire";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = fileURLToPath(new URL("../..", import.meta.url));
const require = createRequire(npmDir + "package.json");
const DENO = rootDir + "node_modules/@deno/linux-x64-glibc/deno";
const BUN = rootDir + "node_modules/@oven/bun-linux-x64/bin/bun";

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: npmDir, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" }, ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")}\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

test("require and import both load the Node build, as one instance", () => {
  const cjs = require("postwire");
  assert.equal(typeof cjs.Webhook, "function");
  assert.equal(cjs.Webhook, esm.Webhook, "import re-exports the CommonJS instance");
  assert.equal(cjs.WebhookVerificationError, esm.WebhookVerificationError);
  assert.equal(require.resolve("postwire"), npmDir + "dist/node/index.cjs");
  // Named as in the source, though the Node build is bundled without --keep-names.
  for (const [entry, api] of [["postwire", cjs], ["postwire/v1a", require("postwire/v1a")]]) {
    assert.deepEqual([api.Webhook.name, api.ReplayGuard.name, api.WebhookVerificationError.name], ["Webhook", "ReplayGuard", "WebhookVerificationError"], entry);
  }
  // In a fresh process, each on its own.
  const viaRequire = run(process.execPath, ["-e", "const {Webhook}=require('postwire'); console.log(new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(1614265330000), '{\"test\": 2432232314}'))"]);
  const viaImport = run(process.execPath, ["--input-type=module", "-e", "import {Webhook} from 'postwire'; console.log(new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw').sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(1614265330000), '{\"test\": 2432232314}'))"]);
  assert.equal(viaRequire, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  assert.equal(viaImport, viaRequire);
});

test("import reaches each Node build through a few lines that Node's export scanner reads, not the bundle", async () => {
  // Node's ES module loader scans the source of every CommonJS file it imports for export
  // names, in JavaScript, cold: 4 to 6 ms for the 39 KB bundle (bench/cold.mjs, "ES module
  // app"). So `import` resolves to a file of a few lines that passes the bundle's value
  // through a variable (a `module.exports = require(...)` would be followed as a re-export
  // and the bundle scanned after all) and names the exports in an annotation.
  for (const [entry, file, bundle] of [["postwire", "index-import.cjs", "index.cjs"], ["postwire/v1a", "v1a-import.cjs", "v1a.cjs"]]) {
    const resolved = import.meta.resolve(entry);
    assert.equal(resolved, "file://" + npmDir + "dist/node/" + file, entry);
    const source = readFileSync(npmDir + "dist/node/" + file, "utf8");
    assert.ok(source.length < 2048, `${file}: ${source.length} bytes`);
    assert.match(source, new RegExp(`^const api = require\\("\\./${bundle.replace(".", "\\.")}"\\);\nmodule\.exports = api;$`, "m"), file);
    assert.doesNotMatch(source, /module\.exports\s*=\s*require\(/, file);
    // Every name `require` gives is a named export of `import`, the same value; the
    // default import is what `require` returns.
    const cjs = require(entry);
    const ns = await import(entry);
    const names = Object.keys(ns).filter((k) => k !== "module.exports"); // Node 23+ adds that one
    assert.deepEqual(names.sort(), Object.keys(cjs).sort(), entry);
    for (const name of names) if (name !== "default") assert.equal(ns[name], cjs[name], `${entry}: ${name}`);
    assert.equal(ns.default, cjs, entry);
  }
});

test("nothing is compiled at import, nor WebCrypto loaded (generateSecret included): the wasm module on first use, once", () => {
  // The cold start's costs that the package controls (bench/cold.mjs measures them): a
  // module compiled at load, and reading globalThis.crypto, which on Node loads its
  // WebCrypto implementation (about 2 ms) that the Node build never uses.
  const script = `
    let compiled = 0;
    const Original = WebAssembly.Module;
    WebAssembly.Module = class extends Original { constructor(b) { super(b); compiled++; } };
    let cryptoReads = 0;
    const cryptoProperty = Object.getOwnPropertyDescriptor(globalThis, "crypto");
    Object.defineProperty(globalThis, "crypto", {
      configurable: true,
      get() { cryptoReads++; return cryptoProperty.get ? cryptoProperty.get.call(globalThis) : cryptoProperty.value; },
    });
    const { Webhook, ReplayGuard } = require("postwire");
    const atLoad = compiled;
    const wh = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    new ReplayGuard();
    const signed = wh.sign("msg_1", new Date(), "{}");
    // generateSecret too: node:crypto's randomFillSync, not WebCrypto.
    const { generateSecret } = require("postwire");
    const secrets = new Set([generateSecret(), generateSecret()]);
    console.log(atLoad, compiled, cryptoReads, signed.startsWith("v1,"), secrets.size, [...secrets].every((s) => /^whsec_[A-Za-z0-9+/]{43}=$/.test(s)));`;
  assert.equal(run(process.execPath, ["-e", script]), "0 1 0 true 2 true");
});

test("the Node build reads its module from the .wasm beside it; the inlined copy only where that file is missing or another build's", () => {
  // What the cold start measures (bench/cold.mjs): one read of the file (openSync +
  // readSync), not a 110 KB base64 literal to compile and decode. The inlined copy
  // (wasm-inline.cjs, wasm-v1a-inline.cjs) is there for bundles that move the entry
  // without its files.
  const script = `
    const fs = require("fs");
    const reads = [];
    for (const name of ["openSync", "readFileSync"]) {
      const original = fs[name];
      fs[name] = function (file, ...rest) {
        if (/\\.wasm$|inline/.test(String(file))) reads.push(String(file).split(/[\\\\/]/).slice(-2).join("/"));
        return original.call(this, file, ...rest);
      };
    }
    const { Webhook } = require(process.argv[1]);
    new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    const inline = Object.keys(require.cache).filter((f) => f.includes("inline"));
    console.log(JSON.stringify({ reads, inline }));`;
  for (const [entry, wasm] of [["index.cjs", "postwire_wasm_bg.wasm"], ["v1a.cjs", "postwire_wasm_v1a_bg.wasm"]]) {
    const out = JSON.parse(run(process.execPath, ["-e", script, npmDir + "dist/node/" + entry]));
    assert.deepEqual(out, { reads: ["node/" + wasm], inline: [] }, entry);
  }
  // Moved without the file, or beside a file of another build: the inlined copy, and it verifies.
  const dir = mkdtempSync(join(tmpdir(), "postwire-node-"));
  try {
    for (const file of ["index.cjs", "wasm-inline.cjs"]) writeFileSync(join(dir, file), readFileSync(npmDir + "dist/node/" + file));
    const sign = `const { Webhook } = require(${JSON.stringify(join(dir, "index.cjs"))});
      console.log(new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign("msg_p5jXN8AQM9LWM0D4loKWxJek", new Date(1614265330000), '{"test": 2432232314}'),
        Object.keys(require.cache).some((f) => f.endsWith("wasm-inline.cjs")));`;
    assert.equal(run(process.execPath, ["-e", sign]), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= true");
    writeFileSync(join(dir, "postwire_wasm_bg.wasm"), readFileSync(npmDir + "dist/node/postwire_wasm_v1a_bg.wasm"));
    assert.equal(run(process.execPath, ["-e", sign]), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= true");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the exports map resolves each runtime's condition to its build", () => {
  const resolveWith = (conditions) =>
    run(process.execPath, [...conditions.map((c) => `--conditions=${c}`), "--input-type=module", "-e", "console.log(import.meta.resolve('postwire'))"]);
  assert.equal(resolveWith([]), "file://" + npmDir + "dist/node/index-import.cjs");
  for (const [condition, build] of [["workerd", "workerd"], ["edge-light", "edge-light"], ["deno", "native"], ["bun", "native"], ["browser", "browser"]]) {
    assert.equal(resolveWith([condition]), "file://" + npmDir + `dist/${build}/index.js`, condition);
  }
  assert.equal(
    run(process.execPath, ["--input-type=module", "-e", "console.log(import.meta.resolve('postwire/inline'))"]),
    "file://" + npmDir + "dist/web/index.js",
  );
  for (const file of ["dist/index.d.ts", "dist/index.d.cts", "dist/workerd/postwire_wasm_bg.wasm"]) {
    assert.ok(existsSync(npmDir + file), file);
  }
  // postwire/v1a: the same conditions, each to its v1a build (Bun and Deno take the node one).
  const resolveV1a = (conditions) =>
    run(process.execPath, [...conditions.map((c) => `--conditions=${c}`), "--input-type=module", "-e", "console.log(import.meta.resolve('postwire/v1a'))"]);
  assert.equal(resolveV1a([]), "file://" + npmDir + "dist/node/v1a-import.cjs");
  for (const [condition, file] of [["workerd", "workerd/v1a.js"], ["edge-light", "edge-light/v1a.js"], ["browser", "node/v1a-import.cjs"]]) {
    assert.equal(resolveV1a([condition]), "file://" + npmDir + `dist/${file}`, condition);
  }
  for (const file of ["dist/workerd/postwire_wasm_v1a_bg.wasm", "dist/edge-light/postwire_wasm_v1a_bg.wasm", "dist/web/v1a.js"]) {
    assert.ok(existsSync(npmDir + file), file);
  }
});

test("a Node server bundle (as Next.js or esbuild make) still works when moved elsewhere", () => {
  const out = mkdtempSync(join(tmpdir(), "postwire-bundle-"));
  try {
    writeFileSync(join(out, "app.mjs"), `import { Webhook } from "postwire";
      console.log(new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign("msg_p5jXN8AQM9LWM0D4loKWxJek", new Date(1614265330000), '{"test": 2432232314}'));`);
    run(rootDir + "node_modules/.bin/esbuild", [join(out, "app.mjs"), "--bundle", "--platform=node", "--format=cjs", `--outfile=${join(out, "dist", "server.cjs")}`, "--log-level=warning", `--resolve-extensions=.js,.mjs,.cjs`, `--alias:postwire=${npmDir}`]);
    assert.equal(run(process.execPath, [join(out, "dist", "server.cjs")], { cwd: out }), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the native build (Bun, Deno) imports node:crypto and nothing else from Node", () => {
  const src = readFileSync(npmDir + "dist/native/index.js", "utf8");
  assert.deepEqual([...src.matchAll(/from\s*"(node:[a-z]+)"/g)].map((m) => m[1]), ["node:crypto"]);
  assert.doesNotMatch(src, /require\(|import\.meta|process\.|[^y]Buffer\./);
});

test("the web and workerd builds use no Node API", () => {
  for (const file of ["dist/web/index.js", "dist/workerd/index.js"]) {
    const src = readFileSync(npmDir + file, "utf8");
    assert.doesNotMatch(src, /require\(|from\s*"node:|import\("node:|import\.meta|process\.|[^y]Buffer\./, file);
  }
});

test("the browser bundle stays small: the wasm is a file beside it, not inlined", () => {
  // Inside the repository, so "postwire" resolves as a package (its exports map), as in an app.
  mkdirSync(npmDir + "build", { recursive: true });
  const out = mkdtempSync(npmDir + "build/size-");
  try {
    writeFileSync(join(out, "app.js"), 'import { Webhook } from "postwire"; globalThis.r = new Webhook(globalThis.s).verify(globalThis.b, globalThis.h);');
    run(rootDir + "node_modules/.bin/esbuild", [join(out, "app.js"), "--bundle", "--minify", "--format=esm", "--platform=browser", `--outfile=${join(out, "out.js")}`, "--log-level=error"]);
    const js = readFileSync(join(out, "out.js"));
    const gzipped = gzipSync(js, { level: 9 }).length;
    assert.ok(gzipped <= 20 * 1024, `the browser bundle is ${gzipped} bytes gzip`);
    assert.match(js.toString(), /postwire_wasm_bg\.wasm/, "the bundle refers to the .wasm file");
    assert.doesNotMatch(js.toString(), /AGFzbQ/, "no inlined module (base64 of \\0asm)");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the inline build works inside Node too (web-standard APIs only)", () => {
  const out = JSON.parse(run(process.execPath, ["test/portable/run.mjs", "postwire/inline"]));
  assert.equal(out.resolved, "file://" + npmDir + "dist/web/index.js");
  assert.equal(out.passed, out.expected);
});

test("Bun: resolves the bun condition and passes the portable checks", { skip: !existsSync(BUN) && "Bun binary not installed (optional dependency)" }, () => {
  const out = JSON.parse(run(BUN, ["test/portable/run.mjs"]));
  assert.equal(out.runtime, "bun");
  assert.equal(out.resolved.replace(/^file:\/\//, ""), npmDir + "dist/native/index.js");
  assert.equal(out.passed, out.expected);
});

test("Deno: the deno build passes the portable checks with read access to dist/ only", { skip: !existsSync(DENO) && "Deno binary not installed (optional dependency)" }, () => {
  const target = fileURLToPath(import.meta.resolve("postwire").replace("/node/index-import.cjs", "/native/index.js"));
  const out = JSON.parse(
    run(DENO, ["run", "--no-remote", "--no-npm", "--no-config", `--allow-read=${npmDir}dist`, "test/portable/run.mjs", target]),
  );
  assert.equal(out.runtime, "deno");
  assert.equal(out.passed, out.expected);
});
