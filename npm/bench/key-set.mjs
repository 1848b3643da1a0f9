// Benchmark: postwire/v1a's RemoteKeySet on a cache hit against a Webhook given the same
// key as a fixed `whpk_` text, in one run, in Node, at 1 KiB. The key set is served by a
// node:http server on loopback and fetched once before measuring; the server counts its
// hits to show none happen while measuring. RemoteKeySet.verify is async, so the fixed
// key is measured both ways: `verify` (sync) and `verifyAsync` awaited, the like-for-like.
//
//   node npm/bench/key-set.mjs            # about 10 s
//   node npm/bench/key-set.mjs --quick    # smoke run: both accept, no fetch while measuring
//
// Needs npm/dist (bash npm/build.sh).
import crypto from "node:crypto";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const { Webhook, RemoteKeySet } = await import(join(here, "../dist/node/v1a-import.cjs"));

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 1 : 9;
const SLICE_MS = quick ? 20 : 300;

const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
const x = publicKey.export({ format: "jwk" }).x;
const kid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
const whpk = `whpk_${Buffer.from(x, "base64url").toString("base64")}`;
const jwks = JSON.stringify({ keys: [{ kty: "OKP", crv: "Ed25519", x, kid, use: "sig", alg: "EdDSA" }] });

let hits = 0;
const server = http.createServer((req, res) => {
  hits++;
  res.writeHead(200, { "content-type": "application/jwk-set+json", "cache-control": "public, max-age=300" });
  res.end(jwks);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));

const id = "msg_bench";
const ts = Math.floor(Date.now() / 1000);
const head = `{"id":"${id}","type":"webhook.test","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws_1","data":{"message":"`;
const body = head + "x".repeat(1024 - head.length - 3) + '"}}';
const signature = `v1a,${crypto.sign(null, Buffer.from(`${id}.${ts}.${body}`), privateKey).toString("base64")}`;
const headers = { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature };

const fixed = new Webhook(whpk);
const keySet = new RemoteKeySet(`http://127.0.0.1:${server.address().port}/jwks.json`);
await keySet.verify(body, headers); // the one fetch
const fetchesBefore = hits;

async function opsPerSecond(fn) {
  let n = 0;
  const start = performance.now();
  let t;
  do {
    for (let i = 0; i < 8; i++) await fn();
    n += 8;
    t = performance.now();
  } while (t < start + SLICE_MS);
  return n / ((t - start) / 1000);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const cases = {
  "fixed whpk_, verify (sync)": () => fixed.verify(body, headers),
  "fixed whpk_, await verifyAsync": () => fixed.verifyAsync(body, headers),
  "RemoteKeySet (cache hit), await verify": () => keySet.verify(body, headers),
};
const results = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  // Interleaved, so drift in the machine's speed hits every case alike.
  for (const [name, fn] of Object.entries(cases)) results[name].push(await opsPerSecond(fn));
}
server.close();
if (hits !== fetchesBefore) throw new Error(`the key set was fetched while measuring (${hits - fetchesBefore} times)`);

console.log(`v1a verify, 1 KiB body, Node ${process.version}: median of ${ROUNDS} interleaved slices of ${SLICE_MS} ms`);
const base = median(results["fixed whpk_, await verifyAsync"]);
for (const [name, xs] of Object.entries(results)) {
  const m = median(xs);
  console.log(`  ${name.padEnd(42)} ${Math.round(m).toString().padStart(7)} /s  (${((m / base) * 100).toFixed(1)}% of awaited fixed key; slices ${Math.round(Math.min(...xs))}..${Math.round(Math.max(...xs))})`);
}
console.log(`  key-set fetches while measuring: ${hits - fetchesBefore}`);
