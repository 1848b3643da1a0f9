// WEBHOOK_KEYS_URL at the edge: the built Worker in workerd (Miniflare) given only the URL of
// a published key set, served by a real HTTP server on loopback (a JSON Web Key Set built
// here with node:crypto, RFC 7638 kids), in front of a real origin on loopback. Deliveries
// are signed with node:crypto's Ed25519, independently of the Rust code under test.
// The set is fetched once and kept in the isolate; forgeries fetch nothing more within
// WEBHOOK_KEYS_MIN_REFRESH_SECS and never reach the origin; a rotation is followed with no
// restart and the old key refused once unpublished; with no key to be had the answer is
// 503 key_set_unavailable with retry-after, never a forward; static keys keep working.
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, newId, newSecret, nowSecs, sign, sampleBody, assertErrorBody, sleep } from "./support/worker.mjs";

function newKey() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x;
  const kid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
  return { privateKey, jwk: { kty: "OKP", crv: "Ed25519", x, kid, use: "sig", alg: "EdDSA", nbf: 1765000000 } };
}

function v1a(key, id = newId("ks")) {
  const timestamp = nowSecs();
  const body = sampleBody(id);
  const sig = crypto.sign(null, Buffer.from(`${id}.${timestamp}.${body}`), key.privateKey).toString("base64");
  return {
    id,
    body,
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": `v1a,${sig}` },
  };
}

/** A key-set server on 127.0.0.1: `routes[path](req, res)`, hits counted per path. */
async function keyServer(routes) {
  const hits = {};
  const sockets = new Set();
  const s = http.createServer((req, res) => {
    hits[req.url] = (hits[req.url] ?? 0) + 1;
    (routes[req.url] ?? ((_, r) => r.writeHead(404).end()))(req, res);
  });
  s.on("connection", (c) => {
    sockets.add(c);
    c.on("close", () => sockets.delete(c));
  });
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  return {
    url: (p) => `http://127.0.0.1:${s.address().port}${p}`,
    hits: (p) => hits[p] ?? 0,
    close: () => {
      for (const c of sockets) c.destroy();
      return new Promise((r) => s.close(r));
    },
  };
}

const jwks = (keys, maxAge = 300) => (req, res) => {
  res.writeHead(200, { "content-type": "application/jwk-set+json", "cache-control": `public, max-age=${maxAge}` });
  res.end(JSON.stringify({ keys: keys().map((k) => k.jwk) }));
};

describe("WEBHOOK_KEYS_URL: keys from a published key set", () => {
  const a = newKey();
  const b = newKey();
  let published = [a];
  let origin, keys, other, worker;
  before(async () => {
    origin = await startOrigin();
    other = await keyServer({ "/jwks.json": jwks(() => [a]) });
    keys = await keyServer({
      "/ks/jwks.json": jwks(() => published),
      "/short/jwks.json": jwks(() => published, 1),
      "/down/jwks.json": (req, res) => res.writeHead(500).end("no"),
      "/html/jwks.json": (req, res) => res.end("<html>maintenance</html>"),
      "/x25519/jwks.json": (req, res) => res.end(JSON.stringify({ keys: [{ ...a.jwk, crv: "X25519" }] })),
      "/nokid/jwks.json": (req, res) => res.end(JSON.stringify({ keys: [{ ...a.jwk, kid: undefined }] })),
      "/big/jwks.json": (req, res) => res.end(" ".repeat(70_000)),
      "/slow/jwks.json": () => {},
      "/away/jwks.json": (req, res) => res.writeHead(302, { location: other.url("/jwks.json") }).end(),
      "/moved/jwks.json": (req, res) => res.writeHead(301, { location: "/ks/jwks.json" }).end(),
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    await keys?.close();
    await other?.close();
  });
  beforeEach(() => origin.reset());

  it("fetches the set once, forwards deliveries of its keys, and a burst of forgeries fetches nothing more", async () => {
    published = [a];
    worker = await startWorker({ WEBHOOK_SECRETS: undefined, WEBHOOK_KEYS_URL: keys.url("/ks/jwks.json"), ORIGIN_URL: origin.url });
    for (let i = 0; i < 5; i++) {
      const d = v1a(a);
      const res = await worker.send({ headers: d.headers, body: d.body });
      assert.equal(res.status, 200, res.text);
      assert.equal(origin.receivedFor(d.id).length, 1);
    }
    const forged = await Promise.all(Array.from({ length: 30 }, () => v1a(newKey())).map((d) => worker.send({ headers: d.headers, body: d.body })));
    for (const res of forged) assertErrorBody(assert, res, 401, "invalid_signature");
    assert.equal(origin.received.length, 5, "no forgery was forwarded");
    assert.equal(keys.hits("/ks/jwks.json"), 1, "one fetch in all (min refresh 60 s, max-age 300 s)");
  });

  it("follows a rotation with no restart, and refuses the old key once it is no longer published", async () => {
    published = [a];
    await worker.reconfigure({
      WEBHOOK_SECRETS: undefined,
      WEBHOOK_KEYS_URL: keys.url("/short/jwks.json"),
      WEBHOOK_KEYS_MIN_REFRESH_SECS: "1",
      ORIGIN_URL: origin.url,
    });
    const first = v1a(a);
    assert.equal((await worker.send({ headers: first.headers, body: first.body })).status, 200);
    // The sender rotates: B signs, A stays published for the overlap.
    published = [b, a];
    await sleep(1100);
    const rotated = v1a(b);
    const res = await worker.send({ headers: rotated.headers, body: rotated.body });
    assert.equal(res.status, 200, res.text);
    assert.equal(origin.receivedFor(rotated.id).length, 1);
    const overlap = v1a(a);
    assert.equal((await worker.send({ headers: overlap.headers, body: overlap.body })).status, 200);
    // The overlap ends; once the set's max-age (1 s) has passed, A is refused.
    published = [b];
    await sleep(1100);
    const late = v1a(a);
    assertErrorBody(assert, await worker.send({ headers: late.headers, body: late.body }), 401, "invalid_signature");
    assert.equal(origin.receivedFor(late.id).length, 0);
    const stillB = v1a(b);
    assert.equal((await worker.send({ headers: stillB.headers, body: stillB.body })).status, 200);
  });

  it("a redirect within the origin is followed", async () => {
    published = [a];
    await worker.reconfigure({ WEBHOOK_SECRETS: undefined, WEBHOOK_KEYS_URL: keys.url("/moved/jwks.json"), ORIGIN_URL: origin.url });
    const d = v1a(a);
    assert.equal((await worker.send({ headers: d.headers, body: d.body })).status, 200);
  });

  it("with no key to be had: 503 key_set_unavailable with retry-after, the reason in the message, nothing forwarded", async () => {
    const cases = {
      "/down/jwks.json": /HTTP 500/,
      "/html/jwks.json": /invalid key set: not JSON/,
      "/x25519/jwks.json": /invalid key set/,
      "/nokid/jwks.json": /no `kid`/,
      "/big/jwks.json": /larger than 65536 bytes/,
      "/slow/jwks.json": /within 300 ms/,
      "/away/jwks.json": /another origin/,
    };
    for (const [path, reason] of Object.entries(cases)) {
      await worker.reconfigure({
        WEBHOOK_SECRETS: undefined,
        WEBHOOK_KEYS_URL: keys.url(path),
        WEBHOOK_KEYS_TIMEOUT_MS: "300",
        ORIGIN_URL: origin.url,
      });
      const d = v1a(a);
      const started = Date.now();
      const res = await worker.send({ headers: d.headers, body: d.body });
      assert.ok(Date.now() - started < 3000, path);
      assertErrorBody(assert, res, 503, "key_set_unavailable");
      assert.equal(res.headers.get("retry-after"), "60", path);
      assert.match(res.json.message, reason, path);
      // Within the interval, the next delivery fetches nothing.
      const hits = keys.hits(path);
      assertErrorBody(assert, await worker.send({ headers: d.headers, body: d.body }), 503, "key_set_unavailable");
      assert.equal(keys.hits(path), hits, `${path}: no second fetch within the interval`);
    }
    assert.equal(origin.received.length, 0);
    assert.equal(other.hits("/jwks.json"), 0, "the other host was never asked");
  });

  it("beside WEBHOOK_SECRETS: v1 deliveries go through even while the key set is unavailable", async () => {
    const secret = newSecret();
    await worker.reconfigure({ WEBHOOK_SECRETS: secret, WEBHOOK_KEYS_URL: keys.url("/down/jwks.json"), ORIGIN_URL: origin.url });
    const id = newId("v1");
    const ts = nowSecs();
    const body = sampleBody(id);
    const res = await worker.send({
      headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": sign(secret, id, ts, body) },
      body,
    });
    assert.equal(res.status, 200, res.text);
    // A v1a delivery, with no key set: refused as a bad signature (the secret is a key).
    const d = v1a(a);
    assertErrorBody(assert, await worker.send({ headers: d.headers, body: d.body }), 401, "invalid_signature");
  });

  it("bad settings are a 500 worker_misconfigured (the variable named in the log), nothing forwarded", async () => {
    for (const [name, value] of [
      ["WEBHOOK_KEYS_URL", "not a url"],
      ["WEBHOOK_KEYS_URL", "ftp://keys.example/jwks.json"],
      ["WEBHOOK_KEYS_MIN_REFRESH_SECS", "0"],
      ["WEBHOOK_KEYS_TIMEOUT_MS", "soon"],
    ]) {
      await worker.reconfigure({ WEBHOOK_SECRETS: undefined, WEBHOOK_KEYS_URL: keys.url("/ks/jwks.json"), [name]: value, ORIGIN_URL: origin.url });
      const d = v1a(a);
      const res = await worker.send({ headers: d.headers, body: d.body });
      assertErrorBody(assert, res, 500, "worker_misconfigured");
      assert.equal(origin.received.length, 0, `${name}=${value}`);
    }
  });
});
