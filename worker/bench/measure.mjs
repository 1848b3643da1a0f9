// Measures the built Worker: its size against the 3 MiB (compressed) free-plan limit, and
// the CPU time per request in workerd for verify + de-duplicate + forward of a 1 KiB body,
// in the de-duplication mode named by POSTWIRE_DEDUP_STORE (kv, the default, or
// durable-object; in Durable Object mode the object runs in the same workerd process, so its
// CPU is counted too). For the Worker's own CPU without workerd and the simulators, see
// cpu.mjs.
//
// Size: worker/build/index_bg.wasm and index.js, raw and gzip -9 (Cloudflare's limit is on
// the compressed upload; `wrangler deploy --dry-run` prints the same figure as "Total Upload").
//
// CPU: workerd runs under Miniflare; before and after each request (sent one at a time) the
// script sums the on-CPU time of every workerd thread from /proc/<pid>/task/*/schedstat
// (nanoseconds, Linux). That is the whole workerd process: the Worker's wasm and JS glue,
// but also Miniflare's entry worker, the local KV simulator (SQLite in workerd), and HTTP
// parsing of the incoming request and the outgoing forward. It is therefore an upper bound
// of the Worker's own CPU time as Cloudflare bills it (which counts neither KV's service nor
// network I/O). Baselines separate the parts: a GET answered 405 (no config, no crypto, no
// KV), a POST with a bad signature (config + HMAC of 1 KiB, no KV), a duplicate (verify + one
// KV read), and the full path (verify + KV read + 2 KV writes + forward to a loopback origin).
//
// Usage: node worker/bench/measure.mjs [requests per scenario, default 1000] [--json]
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { startOrigin } from "../test/support/origin.mjs";
import { MODE, startWorker, BUILD_DIR, delivery, newSecret, newId, sampleBody } from "../test/support/worker.mjs";

const N = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 1000);
const asJson = process.argv.includes("--json");
const LIMIT = 3 * 1024 * 1024;

function sizes() {
  const out = {};
  let rawTotal = 0;
  let gzTotal = 0;
  for (const f of ["index_bg.wasm", "index.js"]) {
    const p = path.join(BUILD_DIR, f);
    if (!existsSync(p)) throw new Error(`${p} is missing: run worker/build.sh`);
    const data = readFileSync(p);
    const gz = gzipSync(data, { level: 9 }).length;
    out[f] = { raw: data.length, gzip: gz };
    rawTotal += data.length;
    gzTotal += gz;
  }
  out.total = { raw: rawTotal, gzip: gzTotal, limitGzip: LIMIT, shareOfLimit: gzTotal / LIMIT };
  return out;
}

/** The workerd process Miniflare started (a child, or grandchild, of this process). */
function findWorkerd() {
  const me = process.pid;
  const parents = new Map();
  const names = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(d), ppid);
      names.set(Number(d), comm);
    } catch {}
  }
  const descends = (pid) => {
    for (let p = parents.get(pid), i = 0; p && i < 10; p = parents.get(p), i++) if (p === me) return true;
    return false;
  };
  const found = [...names].filter(([pid, comm]) => comm.startsWith("workerd") && descends(pid)).map(([pid]) => pid);
  if (found.length !== 1) throw new Error(`expected one workerd child, found ${found.length}`);
  return found[0];
}

/** Nanoseconds on CPU of all threads of `pid`. */
function cpuNs(pid) {
  let sum = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {}
  }
  return sum;
}

function stats(values) {
  const s = [...values].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: q(0.5), p90: q(0.9), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

async function scenario(worker, pid, name, makeRequest, expectCode) {
  const cpu = [];
  const wall = [];
  // Warm-up: JIT, wasm tier-up, connection pools.
  for (let i = 0; i < Math.min(50, N); i++) await worker.send(makeRequest());
  for (let i = 0; i < N; i++) {
    const req = makeRequest();
    const c0 = cpuNs(pid);
    const t0 = process.hrtime.bigint();
    const res = await worker.send(req);
    const t1 = process.hrtime.bigint();
    const c1 = cpuNs(pid);
    if (res.json?.code !== expectCode) throw new Error(`${name}: expected ${expectCode}, got ${res.status} ${res.text}`);
    cpu.push((c1 - c0) / 1e6);
    wall.push(Number(t1 - t0) / 1e6);
  }
  return { name, cpuMs: stats(cpu), wallMs: stats(wall) };
}

async function main() {
  const size = sizes();
  const secret = newSecret();
  const origin = await startOrigin();
  const results = [];
  for (const originSecret of [undefined, newSecret()]) {
    const worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ORIGIN_SECRET: originSecret });
    try {
      const pid = findWorkerd();
      const suffix = originSecret ? " (+ origin signature)" : "";
      if (!originSecret) {
        results.push(await scenario(worker, pid, "GET → 405 (baseline: no config, crypto or KV)", () => ({ method: "GET" }), "method_not_allowed"));
        results.push(
          await scenario(worker, pid, "bad signature → 401 (config + HMAC of 1 KiB, no KV)", () => {
            const id = newId("bad");
            return delivery({ secrets: [newSecret()], id, body: sampleBody(id, 1024) });
          }, "invalid_signature"),
        );
        const dup = delivery({ secrets: [secret], body: sampleBody("dup", 1024) });
        await worker.send(dup);
        results.push(await scenario(worker, pid, `duplicate → 200 (verify + 1 ${MODE === "kv" ? "KV read" : "Durable Object request"})`, () => delivery({ secrets: [secret], id: dup.id, body: dup.body }), "duplicate"));
      }
      results.push(
        await scenario(worker, pid, `first delivery → 200 (verify + ${MODE === "kv" ? "KV read + 2 KV writes" : "Durable Object request: storage read + 2 writes + 2 alarms"} + forward)${suffix}`, () => {
          const id = newId("full");
          return delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
        }, "delivered"),
      );
    } finally {
      await worker.dispose();
    }
  }
  await origin.close();

  if (asJson) {
    console.log(JSON.stringify({ requestsPerScenario: N, size, results }, null, 2));
    return;
  }
  const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
  console.log(`## Size (worker/build)\n`);
  console.log(`| file | raw | gzip -9 |\n| --- | ---: | ---: |`);
  for (const f of ["index_bg.wasm", "index.js", "total"]) console.log(`| ${f} | ${kib(size[f].raw)} | ${kib(size[f].gzip)} |`);
  console.log(`\nCompressed total is ${(size.total.shareOfLimit * 100).toFixed(1)} % of the 3 MiB free-plan limit.\n`);
  console.log(`## Per request in workerd, ${MODE} mode (${N} sequential requests per scenario, 1 KiB body, after 50 warm-up)\n`);
  console.log(`workerd process CPU (all threads, /proc schedstat) and wall time on loopback, in ms.\n`);
  console.log(`| scenario | CPU median | CPU p99 | wall median | wall p99 |\n| --- | ---: | ---: | ---: | ---: |`);
  for (const r of results) {
    console.log(`| ${r.name} | ${r.cpuMs.median.toFixed(3)} | ${r.cpuMs.p99.toFixed(3)} | ${r.wallMs.median.toFixed(2)} | ${r.wallMs.p99.toFixed(2)} |`);
  }
  console.log(`\nMachine: ${process.platform} ${process.arch}, Node ${process.version}, ${(await import("node:os")).cpus().length} cores (shared).`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
