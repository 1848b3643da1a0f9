// The cold start on Node against standardwebhooks (bench/cold.mjs, fewer fresh processes):
// bounds on ratios of CPU-time medians from the same run (CPU time, not the wall clock: a
// loaded machine moves the ratios little: 1.54 to 1.60 for the load and 2.23 to 2.31 for the
// whole in four runs here), so what they catch is heavy work coming back where it was
// removed: at `require` (reading globalThis.crypto there, as before, gave 2.28 to 2.39;
// compiling the module there 3.6) or in the first verify. They do not check the issue's
// goal (within 2 ms of standardwebhooks), which this package does not meet: see
// bench/README.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const bench = fileURLToPath(new URL("../bench/cold.mjs", import.meta.url));

test("cold require + first verify: CPU time within bounded ratios of standardwebhooks'", () => {
  const out = execFileSync(process.execPath, [bench, "--json", "--runs", "11"], { encoding: "utf8", timeout: 120_000 });
  const { medians } = JSON.parse(out.trim().split("\n").pop());
  const p = medians.postwire;
  const s = medians.standardwebhooks;
  const detail = JSON.stringify(medians);
  // Loading (resolve + require) compiles nothing and loads neither node:crypto nor WebCrypto
  // (Node's exports-map resolver, which the first package with an `exports` map pays, included).
  assert.ok(p.cpuLoad <= 2 * s.cpuLoad, `load: ${p.cpuLoad} ms of CPU against ${s.cpuLoad}: ${detail}`);
  // The whole, the wasm module's compile, instantiation and first calls included.
  assert.ok(p.cpu <= 3 * s.cpu, `require + first verify: ${p.cpu} ms of CPU against ${s.cpu}: ${detail}`);
  assert.equal(p.instantiate > 0 && p.compile > 0, true, "the first verify compiled and instantiated the module");
});
