// Benchmark: verify ops/s at 256 B, 1 KiB, 16 KiB and 256 KiB in every runtime, each
// against `standardwebhooks` and the runtime's native HMAC in the same run: Node, Bun and
// Deno (binaries from npm; node:crypto), workerd through Miniflare and headless Chromium
// (Debian's, through playwright-core; WebCrypto, async). What users run: a string body, a
// fresh verifier per request built from the secret, and the JSON parsed. Cells are the
// median of interleaved slices (workerd: timed from the host, since its clock stands
// still during CPU work; each slice's time includes one dispatchFetch round trip).
//
//   node npm/bench/runtimes.mjs                       # all five, a few minutes
//   node npm/bench/runtimes.mjs --only node,bun       # some
//   node npm/bench/runtimes.mjs --quick               # smoke run: every verifier agrees; figures meaningless
//
// Needs npm/dist (bash npm/build.sh) and the root node_modules (npm ci).
import { spawnSync, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, copyFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { chromium } from "playwright-core";
import { SIZES } from "./runtimes/cases.js";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = fileURLToPath(new URL("../..", import.meta.url));
const outDir = npmDir + "build/bench-runtimes/";
const BUN = rootDir + "node_modules/@oven/bun-linux-x64/bin/bun";
const DENO = rootDir + "node_modules/@deno/linux-x64-glibc/deno";
const ESBUILD = rootDir + "node_modules/.bin/esbuild";

const quick = process.argv.includes("--quick");
const onlyArg = process.argv.indexOf("--only");
const only = onlyArg < 0 ? ["node", "bun", "deno", "workerd", "chromium"] : process.argv[onlyArg + 1].split(",");
const options = quick ? { rounds: 1, sliceMs: 10 } : { rounds: 5, sliceMs: 150 };
mkdirSync(outDir, { recursive: true });

function local(cmd, args) {
  const r = spawnSync(cmd, [...args, JSON.stringify(options)], {
    cwd: npmDir,
    encoding: "utf8",
    timeout: 20 * 60_000,
    env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
  });
  if (r.status !== 0) throw new Error(`${cmd} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

function bundle(entry, out, args) {
  execFileSync(ESBUILD, [entry, "--bundle", "--format=esm", `--outfile=${out}`, "--log-level=error", ...args], { cwd: npmDir });
}

async function workerd() {
  bundle("bench/runtimes/worker.js", outDir + "worker.js", ["--platform=neutral", "--conditions=workerd,worker,browser", "--external:*.wasm", "--main-fields=module,main"]);
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
  });
  try {
    const get = async (path) => {
      const res = await mf.dispatchFetch("http://bench" + path);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text}`);
      return text;
    };
    const rows = [];
    for (const size of SIZES) {
      const { libs } = JSON.parse(await get(`/check?size=${size}`));
      // Per verifier, N such that one request takes about one slice, then interleaved slices.
      // A first, untimed request per verifier warms it up: calibrated on a cold first call
      // (the isolate's first request, the module's compile, a preempted process), N came out
      // as 1 and every slice timed one HTTP round trip (130 to 300 "verifies/s" at 256 B).
      const n = {};
      for (const lib of libs) await get(`/run?lib=${encodeURIComponent(lib)}&size=${size}&n=64`);
      for (const lib of libs) {
        let k = 1;
        for (;;) {
          const t = performance.now();
          await get(`/run?lib=${encodeURIComponent(lib)}&size=${size}&n=${k}`);
          const ms = performance.now() - t;
          if (ms >= options.sliceMs / 2 || k >= 1 << 20) {
            n[lib] = Math.max(1, Math.round((k * options.sliceMs) / Math.max(ms, 1)));
            break;
          }
          k *= 4;
        }
      }
      const samples = Object.fromEntries(libs.map((l) => [l, []]));
      for (let r = 0; r < options.rounds; r++) {
        for (const lib of libs) {
          const t = performance.now();
          await get(`/run?lib=${encodeURIComponent(lib)}&size=${size}&n=${n[lib]}`);
          samples[lib].push(n[lib] / ((performance.now() - t) / 1000));
        }
      }
      const row = { size };
      for (const [lib, xs] of Object.entries(samples)) row[lib] = [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      rows.push(row);
    }
    return { runtime: "workerd (Miniflare 4.20260426, compatibility date 2024-09-23)", rows };
  } finally {
    await mf.dispose();
  }
}

async function chromiumPage() {
  bundle("bench/runtimes/page.js", outDir + "page.js", ["--platform=browser", "--minify"]);
  const script = readFileSync(outDir + "page.js", "utf8");
  const wasm = readFileSync(npmDir + "dist/browser/postwire_wasm_bg.wasm");
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    await page.route("**/*", (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === "/") {
        return route.fulfill({
          contentType: "text/html",
          body: `<script>window.__options = ${JSON.stringify(options)}</script><script type="module" src="/page.js"></script>`,
        });
      }
      if (path === "/page.js") return route.fulfill({ contentType: "text/javascript", body: script });
      if (path === "/postwire_wasm_bg.wasm") return route.fulfill({ contentType: "application/wasm", body: wasm });
      return route.fulfill({ status: 404, body: "" });
    });
    await page.goto("http://localhost/"); // a secure context: WebCrypto exists
    await page.waitForFunction(() => window.__bench !== undefined, null, { timeout: 20 * 60_000, polling: 500 });
    const result = await page.evaluate(() => window.__bench);
    if (result.error) throw new Error(result.error);
    return result;
  } finally {
    await browser.close();
  }
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");
const label = (s) => (s >= 1024 ? `${s / 1024} KiB` : `${s} B`);
console.log(`verify ops/s (fresh verifier per request, string body, JSON parsed; median of ${options.rounds} slices of ${options.sliceMs} ms)${quick ? " (quick: figures meaningless)" : ""}`);

/** Prints one runtime's table as soon as it is measured. */
function print({ runtime, rows, resolved }) {
  const names = Object.keys(rows[0]).filter((k) => k !== "size");
  const nativeName = names.find((n) => n === "node:crypto" || n === "WebCrypto");
  const best = names.includes("postwire verifyAsync") ? "postwire verifyAsync" : "postwire";
  console.log(`\n### ${runtime}${resolved ? ` (${resolved.replace(/^.*\/postwire\//, "postwire/").replace(/^.*\/npm\//, "postwire/")})` : ""}\n`);
  console.log(`| body | ${names.join(" | ")} | postwire ÷ standardwebhooks | ${best} ÷ ${nativeName} |`);
  console.log(`| ---: | ${names.map(() => "---:").join(" | ")} | ---: | ---: |`);
  const ratio = (a, b) => `${(a / b).toFixed(2)}×`;
  for (const r of rows) {
    console.log(`| ${label(r.size)} | ${names.map((n) => fmt(r[n])).join(" | ")} | ${ratio(r.postwire, r.standardwebhooks)} | ${ratio(r[best], r[nativeName])} |`);
  }
}

for (const rt of only) {
  if (rt === "node") print(local(process.execPath, ["bench/runtimes/local.mjs"]));
  else if (rt === "bun") {
    if (existsSync(BUN)) print(local(BUN, ["bench/runtimes/local.mjs"]));
    else console.log("(bun: binary not installed, skipped)");
  } else if (rt === "deno") {
    if (existsSync(DENO)) print(local(DENO, ["run", "--allow-all", "--node-modules-dir=manual", "bench/runtimes/local.mjs"]));
    else console.log("(deno: binary not installed, skipped)");
  } else if (rt === "workerd") print(await workerd());
  else if (rt === "chromium") print(await chromiumPage());
  else throw new Error(`unknown runtime ${rt}`);
}
