// Cold start on Node: a fresh process `require`s the package, then builds a verifier and
// verifies one delivery; the same for `standardwebhooks`. Alternating runs; medians.
//
//   node npm/bench/cold.mjs            # 21 runs of each
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const runs = Number(process.argv[2] ?? 21);
const script = (lib) => `
const t0 = process.hrtime.bigint();
const { Webhook } = require(${JSON.stringify(lib)});
const t1 = process.hrtime.bigint();
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const body = '{"type":"webhook.test"}';
const now = new Date();
const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(now / 1000)), "webhook-signature": "v1,${"x".repeat(43)}=" };
try { new Webhook(secret).verify(body, headers); } catch {}
const t2 = process.hrtime.bigint();
console.log(Number(t1 - t0) / 1e6, Number(t2 - t0) / 1e6);`;
const samples = { postwire: [], standardwebhooks: [] };
for (let i = 0; i < runs; i++) {
  for (const lib of Object.keys(samples)) {
    samples[lib].push(execFileSync(process.execPath, ["-e", script(lib)], { cwd: root, encoding: "utf8" }).trim().split(" ").map(Number));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [lib, xs] of Object.entries(samples)) {
  console.log(`${lib}: require ${median(xs.map((x) => x[0])).toFixed(2)} ms, require + new + first verify ${median(xs.map((x) => x[1])).toFixed(2)} ms (median of ${runs})`);
}
