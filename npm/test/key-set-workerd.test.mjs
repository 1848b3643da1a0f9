// postwire/v1a's RemoteKeySet inside workerd (Miniflare), bundled as wrangler would, against
// a real key-set server on loopback (node:http, a JWKS built with node:crypto): the set is
// fetched with workerd's global fetch and kept in the isolate across requests; a burst of
// forgeries fetches nothing more within the interval; a rotation is followed; a bad
// document and a redirect to another host give their codes (and the other host is never
// asked).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import crypto from "node:crypto";
import http from "node:http";
import { Miniflare } from "miniflare";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = npmDir + "build/workerd-key-set-test/";

function newKey() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x;
  const kid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
  return { privateKey, jwk: { kty: "OKP", crv: "Ed25519", x, kid, use: "sig", alg: "EdDSA" } };
}

let seq = 0;
function delivery(key) {
  const id = `msg_wks_${++seq}`;
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws", data: { message: "hi" } });
  const sig = crypto.sign(null, Buffer.from(`${id}.${ts}.${body}`), key.privateKey).toString("base64");
  return { id, init: { method: "POST", body, headers: { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1a,${sig}` } } };
}

/** A loopback server answering by path from `routes` (path → (req, res)), counting hits per path. */
async function server(routes) {
  const hits = {};
  const s = http.createServer((req, res) => {
    hits[req.url] = (hits[req.url] ?? 0) + 1;
    (routes[req.url] ?? ((_, r) => r.writeHead(404).end()))(req, res);
  });
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  return { url: (p) => `http://127.0.0.1:${s.address().port}${p}`, hits, close: () => new Promise((r) => { s.closeAllConnections(); s.close(r); }) };
}

let mf;
const a = newKey();
const b = newKey();
let published = [a];
let keyServer, otherHost;
before(async () => {
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/workerd/key-set-worker.js", "--bundle", "--format=esm", "--platform=neutral",
    "--conditions=workerd,worker,browser", "--external:*.wasm", `--outfile=${outDir}worker.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_v1a_bg.wasm", outDir + "postwire_wasm_v1a_bg.wasm");
  otherHost = await server({ "/jwks.json": (req, res) => res.end(JSON.stringify({ keys: [a.jwk] })) });
  const serve = (req, res) => {
    res.writeHead(200, { "content-type": "application/jwk-set+json", "cache-control": "public, max-age=300" });
    res.end(JSON.stringify({ keys: published.map((k) => k.jwk) }));
  };
  keyServer = await server({
    "/rate/jwks.json": serve,
    "/rotate/jwks.json": serve,
    "/bad/jwks.json": (req, res) => res.end(JSON.stringify({ keys: [{ ...a.jwk, crv: "X25519" }] })),
    "/away/jwks.json": (req, res) => res.writeHead(302, { location: otherHost.url("/jwks.json") }).end(),
  });
  mf = new Miniflare({
    modules: true,
    scriptPath: outDir + "worker.js",
    modulesRoot: outDir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
  });
  await mf.ready;
});
after(async () => {
  await mf?.dispose();
  await keyServer?.close();
  await otherHost?.close();
});

const hook = (keysUrl, interval, init) =>
  mf.dispatchFetch(`http://worker/hook?keys=${encodeURIComponent(keysUrl)}&interval=${interval}`, init);

test("in workerd: fetched once and kept in the isolate; a burst of forgeries fetches nothing more within the interval", async () => {
  const url = keyServer.url("/rate/jwks.json");
  for (let i = 0; i < 5; i++) {
    const d = delivery(a);
    const res = await hook(url, 60_000, d.init);
    assert.deepEqual(await res.json(), { id: d.id });
  }
  const forged = await Promise.all(Array.from({ length: 40 }, () => hook(url, 60_000, delivery(newKey()).init)));
  for (const res of forged) {
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "invalid_signature");
  }
  assert.equal(keyServer.hits["/rate/jwks.json"], 1);
});

test("in workerd: a rotation is followed (interval 0), with no restart", async () => {
  const url = keyServer.url("/rotate/jwks.json");
  published = [a];
  const first = delivery(a);
  assert.deepEqual(await (await hook(url, 0, first.init)).json(), { id: first.id });
  published = [b, a];
  const rotated = delivery(b);
  assert.deepEqual(await (await hook(url, 0, rotated.init)).json(), { id: rotated.id });
  const old = delivery(a);
  assert.deepEqual(await (await hook(url, 0, old.init)).json(), { id: old.id });
  assert.equal(keyServer.hits["/rotate/jwks.json"], 2);
});

test("in workerd: a bad document and a redirect to another host give their codes; the other host is never asked", async () => {
  const bad = await hook(keyServer.url("/bad/jwks.json"), 60_000, delivery(a).init);
  assert.equal(bad.status, 503);
  assert.equal((await bad.json()).code, "invalid_key_set");
  const away = await hook(keyServer.url("/away/jwks.json"), 60_000, delivery(a).init);
  assert.equal(away.status, 503);
  assert.equal((await away.json()).code, "key_set_unavailable");
  assert.equal(otherHost.hits["/jwks.json"], undefined);
});
