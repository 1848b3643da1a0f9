// Cold start on Node: a fresh process loads the package, builds a verifier and verifies one
// valid delivery (a `webhook.test` event, JSON parsed), timed with hrtime inside the process
// from just before the `require` (or `import`) to the end of that first verify. The same
// for `standardwebhooks` in the same run: the processes alternate, so load from elsewhere
// hits both alike; each figure is a median over all runs.
//
//   node npm/bench/cold.mjs                # 31 fresh processes of each (about 15 s)
//   node npm/bench/cold.mjs --runs 51
//   node npm/bench/cold.mjs --quick        # smoke run (npm/test.sh): each accepts its delivery
//   node npm/bench/cold.mjs --json         # one JSON line of the medians
//
// Stages: `resolve` (require.resolve: Node finding the file; a package with an `exports`
// map, as this one, makes Node load its exports resolver, once per process), `require`
// (reading and running the file), `construct` (`new Webhook(secret)`: for postwire also
// reading, compiling and instantiating the wasm module, since parsing the secret is core's),
// `verify` (the first verify). For postwire the wasm compile and instantiate are also timed
// on their own (WebAssembly.Module and WebAssembly.Instance, wrapped in the child).
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const json = args.includes("--json");
const runsAt = args.indexOf("--runs");
const runs = quick ? 3 : runsAt >= 0 ? Number(args[runsAt + 1]) : 31;

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

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
const wasmMs = { compile: 0, instantiate: 0 };
const timed = (C, key) => new Proxy(C, { construct(target, a, nt) { const s = process.hrtime.bigint(); try { return Reflect.construct(target, a, nt); } finally { wasmMs[key] += Number(process.hrtime.bigint() - s) / 1e6; } } });
WebAssembly.Module = timed(WebAssembly.Module, "compile");
WebAssembly.Instance = timed(WebAssembly.Instance, "instantiate");
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

const samples = Object.fromEntries(Object.keys(LIBS).map((k) => [k, []]));
for (let i = 0; i < runs; i++) {
  // Alternate which goes first, so neither always runs right after the other.
  const order = Object.keys(LIBS);
  if (i % 2 === 1) order.reverse();
  for (const lib of order) {
    const out = execFileSync(process.execPath, ["-e", LIBS[lib]], {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, COLD_DELIVERY: JSON.stringify(delivery()) },
    });
    samples[lib].push(JSON.parse(out.trim()));
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const medians = {};
for (const [lib, xs] of Object.entries(samples)) {
  medians[lib] = Object.fromEntries(["resolve", "require", "construct", "verify", "total", "cpuLoad", "cpu", "compile", "instantiate"].map((k) => [k, median(xs.map((x) => x[k]))]));
}
if (json) {
  console.log(JSON.stringify({ runs, node: process.version, medians }));
} else {
  const f = (v) => v.toFixed(2);
  console.log(`Cold start, Node ${process.version}: fresh processes, ${runs} of each, alternating; medians in ms`);
  console.log("| | resolve | require | new Webhook | first verify | total | CPU: load | CPU: total | of which wasm compile | wasm instantiate |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [lib, m] of Object.entries(medians)) {
    const wasm = lib === "postwire";
    console.log(`| ${lib} | ${f(m.resolve)} | ${f(m.require)} | ${f(m.construct)} | ${f(m.verify)} | **${f(m.total)}** | ${f(m.cpuLoad)} | ${f(m.cpu)} | ${wasm ? f(m.compile) : "–"} | ${wasm ? f(m.instantiate) : "–"} |`);
  }
  const p = medians.postwire;
  const s = medians.standardwebhooks;
  const sign = (x) => (x >= 0 ? "+" : "") + f(x);
  console.log(`\npostwire − standardwebhooks: ${sign(p.total - s.total)} ms total, ${sign(p.cpu - s.cpu)} ms CPU (goal: at most +2 ms); CPU ratio ${(p.cpu / s.cpu).toFixed(2)}×`);
}
