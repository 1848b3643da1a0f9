// Benchmark: postwire/providers against each provider's own SDK verifier, in the same Node
// process, at 1 KiB and 64 KiB bodies. Each round times every contender for one slice, in
// turn (interleaved, so drift and other load hit all alike); the table shows the median of
// the rounds' verifications per second. What a user runs: a string body and a fresh
// headers object per request; postwire's figure includes JSON.parse of the body (its
// `payload`), which octokit's, discord-interactions', Paddle's isSignatureValid and
// SendGrid's verifiers do not do. Async SDK verifiers are awaited one call after another.
// Deliveries are made again every round (Paddle's tolerance is 5 s), outside the timing.
//
//   node npm/bench/providers.mjs            # about 1 min
//   node npm/bench/providers.mjs --quick    # smoke run: checks only that every verifier accepts
//   node npm/bench/providers.mjs --sizes    # also what each entry downloads (esbuild bundles, gzip -9)
//
// Needs npm/dist (bash npm/build.sh) and the root node_modules (the SDKs).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const { verify } = await import("postwire/providers");
const { PROVIDER_CASES } = await import(join(here, "../test/providers/sign.mjs"));

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 1 : 7;
const SLICE_MS = quick ? 10 : 120;
const SIZES = [1024, 64 * 1024];

async function opsPerSecond(fn, ms) {
  let n = 0;
  const start = performance.now();
  let t;
  const first = fn();
  const isAsync = typeof first?.then === "function";
  if (isAsync) await first;
  do {
    if (isAsync) for (let i = 0; i < 4; i++) await fn();
    else for (let i = 0; i < 4; i++) fn();
    n += 4;
    t = performance.now();
  } while (t < start + ms);
  return n / ((t - start) / 1000);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => (x >= 100 ? Math.round(x).toLocaleString("en-US") : x.toFixed(1));

const rows = [];
for (const [name, maker] of Object.entries(PROVIDER_CASES)) {
  if (maker.sdk === null) continue;
  for (const size of SIZES) {
    const pw = [];
    const sdk = [];
    for (let r = 0; r < ROUNDS; r++) {
      const d = await maker.make(size, Math.floor(Date.now() / 1000));
      const options = { provider: name, ...d.options };
      const ours = () => verify(d.body, { ...d.headers }, options);
      // Both accept before anything is timed.
      if (ours().id === undefined) throw new Error(`${name}: postwire refused`);
      await d.sdkVerify();
      // Alternate which goes first.
      if (r % 2 === 0) {
        pw.push(await opsPerSecond(ours, SLICE_MS));
        sdk.push(await opsPerSecond(d.sdkVerify, SLICE_MS));
      } else {
        sdk.push(await opsPerSecond(d.sdkVerify, SLICE_MS));
        pw.push(await opsPerSecond(ours, SLICE_MS));
      }
    }
    rows.push({ name, sdk: maker.sdk, size, pw: median(pw), other: median(sdk) });
  }
}

console.log(`Node ${process.version}, ${ROUNDS} interleaved rounds of ${SLICE_MS} ms; verifications per second (median)\n`);
console.log("| provider | SDK | body | postwire/providers | SDK | postwire ÷ SDK |");
console.log("| --- | --- | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  console.log(`| ${r.name} | \`${r.sdk}\` | ${r.size / 1024} KiB | ${fmt(r.pw)} | ${fmt(r.other)} | ${(r.pw / r.other).toFixed(2)}× |`);
}

if (process.argv.includes("--sizes")) {
  // What a page or a Worker downloads for one provider entry, as esbuild bundles it
  // (minified): the browser build fetches the .wasm beside it, workerd imports it as a
  // module (both counted beside the JS); the default build (Bun, Deno, other runtimes)
  // inlines it as base64 in the JS.
  const npmDir = join(here, "..");
  const root = join(npmDir, "..");
  const esbuild = join(root, "node_modules/.bin/esbuild");
  const dir = mkdtempSync(join(npmDir, ".size-"));
  const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;
  const kb = (n) => (n / 1000).toFixed(1);
  try {
    console.log("\n| entry | platform | JS raw | JS gzip | wasm raw | wasm gzip | total gzip |");
    console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    const wasm = readFileSync(join(npmDir, "dist/workerd/postwire_wasm_providers_bg.wasm"));
    for (const entry of ["postwire/providers/stripe", "postwire/providers/github", "postwire/providers", "postwire"]) {
      for (const [platform, conditions] of [["browser", "browser"], ["workerd", "workerd,worker"], ["default (inlined)", "default"]]) {
        const src = join(dir, "in.mjs");
        writeFileSync(src, `import * as m from ${JSON.stringify(entry)}; globalThis.m = m;\n`);
        const out = join(dir, "out");
        execFileSync(esbuild, [src, "--bundle", "--minify", "--format=esm", "--platform=neutral", `--conditions=${conditions}`,
          "--main-fields=browser,module,main", "--loader:.wasm=file", `--outdir=${out}`, "--log-level=error"], { cwd: npmDir });
        let js = 0, jsGz = 0, w = 0, wGz = 0;
        for (const f of readdirSync(out)) {
          const bytes = readFileSync(join(out, f));
          if (f.endsWith(".wasm")) { w += bytes.length; wGz += gz(bytes); } else if (f.endsWith(".js")) { js += bytes.length; jsGz += gz(bytes); }
        }
        // The browser builds fetch their .wasm by URL (new URL(…, import.meta.url)), which
        // esbuild leaves as is: the file is downloaded beside the bundle.
        const bundled = readFileSync(join(out, "in.js"), "utf8");
        for (const name of ["postwire_wasm_providers_bg.wasm", "postwire_wasm_bg.wasm"]) {
          if (w === 0 && bundled.includes(`"./${name}"`)) {
            const bytes = readFileSync(join(npmDir, "dist/browser", name));
            w += bytes.length;
            wGz += gz(bytes);
          }
        }
        rmSync(out, { recursive: true });
        console.log(`| \`${entry}\` | ${platform} | ${kb(js)} kB | ${kb(jsGz)} kB | ${w ? kb(w) + " kB" : "inlined"} | ${w ? kb(wGz) + " kB" : ""} | ${kb(jsGz + wGz)} kB |`);
      }
    }
    console.log(`\nThe providers module alone: ${kb(wasm.length)} kB raw, ${kb(gz(wasm))} kB gzip -9.`);
    // The SDKs' installed size, for comparison (their package directory, without their dependencies).
    const du = (p) => { let n = 0; for (const f of readdirSync(p)) { const q = join(p, f); const s = statSync(q); n += s.isDirectory() ? du(q) : s.size; } return n; };
    console.log("\n| SDK | installed (its own package directory) |\n| --- | ---: |");
    for (const sdk of ["stripe", "@octokit/webhooks-methods", "@shopify/shopify-api", "@slack/bolt", "twilio", "@paddle/paddle-node-sdk", "@linear/sdk", "@sendgrid/eventwebhook", "discord-interactions"]) {
      console.log(`| \`${sdk}\` | ${(du(join(root, "node_modules", sdk)) / 1e6).toFixed(2)} MB |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
