// postwire/v1a's RemoteKeySet against a REAL HTTP server on loopback (node:http) that
// serves a JSON Web Key Set built here, independently of the Rust code: ed25519 keys from
// node:crypto, their `kid` computed by RFC 7638's rule with node:crypto's SHA-256, and
// deliveries signed by node:crypto. Rotation mid-stream, the refresh rate limit under a
// burst of forgeries (server hits counted), ETag/304, every bad document and bad server
// (the previous keys kept), the adapters, processOnce, and Deno and Bun.
// The key-set cache's clock is injected (`now`) so minutes pass at once; the deliveries'
// timestamps and the network are real.
import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RemoteKeySet, Webhook, WebhookVerificationError } from "postwire/v1a";
import { createHandler as nextHandler } from "postwire/next";
import { memoryStore, processOnce } from "postwire/once";

function newKey() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x;
  // RFC 7638: the required members in lexicographic order, no whitespace, SHA-256, base64url.
  const kid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
  return { privateKey, x, kid, whpk: `whpk_${Buffer.from(x, "base64url").toString("base64")}` };
}

const jwk = (k, extra = {}) => ({ kty: "OKP", crv: "Ed25519", x: k.x, kid: k.kid, use: "sig", alg: "EdDSA", nbf: 1765000000, ...extra });
const jwks = (...keys) => JSON.stringify({ keys: keys.map((k) => (k.kty === undefined ? jwk(k) : k)) });

let seq = 0;
function delivery(key, { body } = {}) {
  const id = `msg_ks_${++seq}`;
  const ts = Math.floor(Date.now() / 1000);
  const text = body ?? JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws", data: { message: `n${seq}` } });
  const sig = crypto.sign(null, Buffer.from(`${id}.${ts}.${text}`), key.privateKey).toString("base64");
  return { id, body: text, headers: { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": `v1a,${sig}` } };
}

/**
 * A key-set server on 127.0.0.1: `serve` is what it answers (a function of the request
 * and response, or a document string); `hits` counts requests, `notModified` the 304s.
 */
async function keyServer() {
  const state = { doc: "", etag: null, maxAge: 300, hits: 0, notModified: 0, serve: null, sockets: new Set() };
  const server = http.createServer((req, res) => {
    state.hits++;
    if (state.serve !== null) return state.serve(req, res);
    const etag = `"${crypto.createHash("sha256").update(state.doc).digest("hex").slice(0, 16)}"`;
    if (req.headers["if-none-match"] === etag) {
      state.notModified++;
      res.writeHead(304, { etag, "cache-control": `public, max-age=${state.maxAge}` });
      return res.end();
    }
    res.writeHead(200, { "content-type": "application/jwk-set+json", etag, "cache-control": `public, max-age=${state.maxAge}` });
    res.end(state.doc);
  });
  server.on("connection", (s) => {
    state.sockets.add(s);
    s.on("close", () => state.sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  state.url = `http://127.0.0.1:${server.address().port}/v1/workspaces/ks_test/keys.jwks`;
  state.port = server.address().port;
  state.close = () => {
    for (const s of state.sockets) s.destroy();
    return new Promise((r) => server.close(r));
  };
  return state;
}

/** A clock for the key-set cache, moved by hand. */
function clock() {
  let t = 1_000_000;
  const now = () => t;
  now.advance = (ms) => (t += ms);
  return now;
}

test("a key set's keys verify; rotation mid-stream is followed without a restart; the old key is refused once unpublished", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  const b = newKey();
  server.doc = jwks(a);
  const now = clock();
  const keys = new RemoteKeySet(server.url, { now });
  assert.deepEqual(keys.publicKeys, []);

  const first = delivery(a);
  assert.equal((await keys.verifyEvent(first.body, first.headers)).id, first.id);
  assert.deepEqual(keys.publicKeys, [a.whpk]);
  // The same Webhook the whpk_ key makes accepts it: the set's key is the key.
  assert.doesNotThrow(() => new Webhook(keys.publicKeys[0]).verify(first.body, first.headers));
  for (let i = 0; i < 20; i++) {
    const d = delivery(a);
    assert.equal((await keys.verify(d.body, d.headers)).id, d.id);
  }
  assert.equal(server.hits, 1, "cache hits fetch nothing");

  // The sender rotates: B signs, A stays published for the overlap. A B-signed delivery
  // right away (less than the interval since the last fetch) is refused without a fetch...
  server.doc = jwks(b, a);
  const early = delivery(b);
  await assert.rejects(keys.verify(early.body, early.headers), { code: "invalid_signature" });
  assert.equal(server.hits, 1);
  // ...and once the interval has passed, it makes one fetch and is accepted (as its retry would be).
  now.advance(60_000);
  assert.equal((await keys.verify(early.body, early.headers)).id, early.id);
  assert.equal(server.hits, 2);
  assert.deepEqual(keys.publicKeys, [b.whpk, a.whpk]);
  // Deliveries of both keys during the overlap.
  for (const k of [a, b, a, b]) {
    const d = delivery(k);
    assert.equal((await keys.verify(d.body, d.headers)).id, d.id);
  }
  assert.equal(server.hits, 2);

  // The overlap ends: A is no longer published. At the max-age the set is fetched again
  // and A's signatures are refused.
  server.doc = jwks(b);
  now.advance(300_000);
  const late = delivery(a);
  await assert.rejects(keys.verify(late.body, late.headers), { code: "invalid_signature" });
  assert.deepEqual(keys.publicKeys, [b.whpk]);
  assert.equal(server.hits, 3);
  const stillB = delivery(b);
  assert.equal((await keys.verify(stillB.body, stillB.headers)).id, stillB.id);
});

test("forged deliveries trigger at most one fetch per interval, a burst included", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  const forger = newKey();
  server.doc = jwks(a);
  const now = clock();
  const keys = new RemoteKeySet(server.url, { now, minRefreshIntervalMs: 60_000 });
  const ok = delivery(a);
  await keys.verify(ok.body, ok.headers);
  assert.equal(server.hits, 1);
  now.advance(60_000);
  for (let round = 0; round < 3; round++) {
    // 200 forgeries at once, then 200 more one by one: one fetch in all per interval.
    const burst = Array.from({ length: 200 }, () => delivery(forger));
    const results = await Promise.allSettled(burst.map((d) => keys.verify(d.body, d.headers)));
    assert.ok(results.every((r) => r.status === "rejected" && r.reason.code === "invalid_signature"));
    for (let i = 0; i < 200; i++) {
      const d = delivery(forger);
      await assert.rejects(keys.verify(d.body, d.headers), { code: "invalid_signature" });
    }
    assert.equal(server.hits, 2 + round, `round ${round}`);
    assert.equal(keys.fetchCount, server.hits);
    now.advance(60_000);
  }
  // A genuine delivery still verifies from the cache.
  const after = delivery(a);
  assert.equal((await keys.verify(after.body, after.headers)).id, after.id);
});

test("an unchanged set is revalidated with If-None-Match: a 304 renews the cache", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  server.doc = jwks(a);
  server.maxAge = 120;
  const now = clock();
  const keys = new RemoteKeySet(server.url, { now });
  const d = delivery(a);
  await keys.verify(d.body, d.headers);
  now.advance(119_000);
  await keys.verify(d.body, d.headers);
  assert.equal(server.hits, 1, "fresh for max-age");
  now.advance(2_000);
  await keys.verify(d.body, d.headers);
  assert.equal(server.hits, 2);
  assert.equal(server.notModified, 1);
  now.advance(60_000);
  await keys.verify(d.body, d.headers);
  assert.equal(server.hits, 2, "the 304 renewed the max-age");
  assert.equal(keys.lastError, null);
});

/** The bad answers, each with the code it must give. */
const BAD = [
  ["not JSON", "invalid_key_set", (res) => res.end("<html>maintenance</html>")],
  ["a JWK of another curve", "invalid_key_set", (res, k) => res.end(jwks({ ...jwk(k), crv: "X25519" }))],
  ["a JWK of another type", "invalid_key_set", (res) => res.end(jwks({ kty: "RSA", n: "0vx7agoebGcQSuu", e: "AQAB", kid: "r" }))],
  ["a key without kid", "invalid_key_set", (res, k) => res.end(jwks({ ...jwk(k), kid: undefined }))],
  ["a key with its private part", "invalid_key_set", (res, k) => res.end(jwks({ ...jwk(k), d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" }))],
  ["an oversized body with content-length", "invalid_key_set", (res) => res.end("x".repeat(70_000))],
  [
    "an oversized chunked body (no content-length), never-ending",
    "invalid_key_set",
    (res) => {
      res.writeHead(200, { "content-type": "application/jwk-set+json" });
      const chunk = " ".repeat(16_384);
      const timer = setInterval(() => res.write(chunk), 1);
      res.on("close", () => clearInterval(timer));
    },
  ],
  ["an HTTP 500", "key_set_unavailable", (res) => res.writeHead(500).end("oops")],
  ["a 404", "key_set_unavailable", (res) => res.writeHead(404).end()],
  ["no answer (headers never sent)", "key_set_unavailable", () => {}],
  [
    "a body that trickles past the timeout",
    "key_set_unavailable",
    (res, k) => {
      res.writeHead(200, { "content-type": "application/jwk-set+json" });
      const doc = jwks(k);
      let i = 0;
      const timer = setInterval(() => (i < doc.length ? res.write(doc[i++]) : res.end()), 50);
      res.on("close", () => clearInterval(timer));
    },
  ],
  ["a redirect without location", "key_set_unavailable", (res) => res.writeHead(302).end()],
  ["a connection reset", "key_set_unavailable", (res) => res.socket.destroy()],
];

test("bad documents and bad servers: a stable code, bounded in time, the previous keys kept", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  server.doc = jwks(a);
  const now = clock();
  const keys = new RemoteKeySet(server.url, { now, timeoutMs: 400 });
  const ok = delivery(a);
  await keys.verify(ok.body, ok.headers);
  for (const [name, code, serve] of BAD) {
    server.serve = (req, res) => serve(res, a);
    now.advance(60_000);
    const hits = server.hits;
    const started = performance.now();
    assert.equal(await keys.refresh(), false, name);
    const took = performance.now() - started;
    assert.ok(took < 2_000, `${name}: ${took} ms`);
    assert.equal(server.hits, hits + 1, name);
    assert.ok(keys.lastError instanceof WebhookVerificationError, name);
    assert.equal(keys.lastError.code, code, `${name}: ${keys.lastError.message}`);
    assert.deepEqual(keys.publicKeys, [a.whpk], name);
    // The cached key still verifies; a delivery of an unknown key still refuses as a bad signature.
    const d = delivery(a);
    assert.equal((await keys.verify(d.body, d.headers)).id, d.id, name);
    const forged = delivery(newKey());
    await assert.rejects(keys.verify(forged.body, forged.headers), { code: "invalid_signature" }, name);
  }
  server.serve = null;
  now.advance(60_000);
  assert.equal(await keys.refresh(), false, "same keys: no change");
  assert.equal(keys.lastError, null);
});

test("redirects: followed within the origin, refused to another host (which is never asked)", async (t) => {
  const server = await keyServer();
  const other = await keyServer();
  t.after(server.close);
  t.after(other.close);
  const a = newKey();
  other.doc = jwks(newKey());
  server.doc = jwks(a);
  const now = clock();
  // Same origin: a relative and an absolute location, followed.
  server.serve = (req, res) => {
    if (req.url.endsWith("/moved")) {
      server.serve = null;
      return res.writeHead(308, { location: new URL("/v1/workspaces/ks_test/keys.jwks", server.url).href }).end();
    }
    res.writeHead(302, { location: "moved" }).end();
  };
  const keys = new RemoteKeySet(server.url, { now });
  const d = delivery(a);
  assert.equal((await keys.verify(d.body, d.headers)).id, d.id);
  assert.equal(server.hits, 3);
  // Another host: localhost is another origin than 127.0.0.1, and so is another port.
  for (const location of [`http://localhost:${server.port}/keys.jwks`, other.url]) {
    server.serve = (req, res) => res.writeHead(307, { location }).end();
    now.advance(60_000);
    assert.equal(await keys.refresh(), false);
    assert.equal(keys.lastError.code, "key_set_unavailable");
    assert.match(keys.lastError.message, /another origin/);
    assert.deepEqual(keys.publicKeys, [a.whpk]);
  }
  assert.equal(other.hits, 0, "the other host was never asked");
  // A redirect loop within the origin stops after 3.
  server.serve = (req, res) => res.writeHead(302, { location: server.url }).end();
  now.advance(60_000);
  const hits = server.hits;
  assert.equal(await keys.refresh(), false);
  assert.match(keys.lastError.message, /more than 3 redirects/);
  assert.equal(server.hits - hits, 4);
});

test("with no key cached, deliveries are refused with the fetch's code, and the URL is still asked once per interval", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  server.serve = (req, res) => res.writeHead(503).end();
  const now = clock();
  const keys = new RemoteKeySet(server.url, { now });
  const d = delivery(a);
  for (let i = 0; i < 50; i++) await assert.rejects(keys.verify(d.body, d.headers), { code: "key_set_unavailable" });
  assert.equal(server.hits, 1);
  server.serve = (req, res) => res.end("{}");
  now.advance(60_000);
  await assert.rejects(keys.verify(d.body, d.headers), { code: "invalid_key_set", message: /keys/ });
  server.serve = null;
  server.doc = jwks(a);
  await assert.rejects(keys.verify(d.body, d.headers), { code: "invalid_key_set" }, "still within the interval");
  now.advance(60_000);
  assert.equal((await keys.verify(d.body, d.headers)).id, d.id);
  assert.equal(server.hits, 3);
  // A server that is gone altogether.
  const gone = new RemoteKeySet("http://127.0.0.1:9/keys.jwks", { now });
  await assert.rejects(gone.verify(d.body, d.headers), { code: "key_set_unavailable" });
});

test("options are checked", () => {
  assert.throws(() => new RemoteKeySet("not a url"), TypeError);
  assert.throws(() => new RemoteKeySet("ftp://example.com/keys"), TypeError);
  assert.throws(() => new RemoteKeySet("https://example.com/keys", { minRefreshIntervalMs: -1 }), TypeError);
  assert.throws(() => new RemoteKeySet("https://example.com/keys", { timeoutMs: 0 }), TypeError);
  assert.throws(() => new RemoteKeySet("https://example.com/keys", { toleranceInSeconds: -5 }), RangeError);
  assert.equal(new RemoteKeySet(new URL("https://example.com/keys")).url, "https://example.com/keys");
});

test("the adapters and processOnce take a key set: 204, 400 for a forgery, 503 with retry-after with no key to be had", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const a = newKey();
  server.doc = jwks(a);
  const seen = [];
  const keys = new RemoteKeySet(server.url);
  const handler = nextHandler({ "webhook.test": (event) => void seen.push(event.id) }, { keySet: keys });
  const post = (d) => handler(new Request("http://receiver.test/webhooks", { method: "POST", body: d.body, headers: d.headers }));
  const d = delivery(a);
  assert.equal((await post(d)).status, 204);
  const again = await post(d);
  assert.equal(again.status, 200, "a copy is a duplicate");
  const forged = await post(delivery(newKey()));
  assert.equal(forged.status, 400);
  assert.equal((await forged.json()).code, "invalid_signature");
  assert.deepEqual(seen, [d.id]);

  const down = new RemoteKeySet("http://127.0.0.1:9/keys.jwks");
  const downHandler = nextHandler({ "webhook.test": () => {} }, { keySet: down });
  const errors = console.error;
  console.error = () => {};
  try {
    const res = await downHandler(new Request("http://receiver.test/webhooks", { method: "POST", body: d.body, headers: d.headers }));
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "60");
    assert.equal((await res.json()).code, "key_set_unavailable");
  } finally {
    console.error = errors;
  }
  assert.throws(() => nextHandler({}, { keySet: {} }), TypeError);
  assert.throws(() => nextHandler({}, { keySet: keys, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }), TypeError);

  // processOnce takes the event a key set verified.
  const store = memoryStore();
  const e = delivery(a);
  const event = await keys.verifyEvent(e.body, e.headers);
  assert.equal((await processOnce(event, () => {}, store)).status, 204);
  assert.equal((await processOnce(await keys.verifyEvent(e.body, e.headers), () => {}, store)).status, 200);
  assert.equal(server.hits, 1);
});

test("RemoteKeySet in Deno and Bun (global fetch, their own export conditions): rotation followed, forgery refused", async (t) => {
  const server = await keyServer();
  t.after(server.close);
  const npmDir = fileURLToPath(new URL("../", import.meta.url));
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const a = newKey();
  const b = newKey();
  // The child asks for /rotate between its deliveries: the set becomes [B, A].
  server.serve = (req, res) => {
    if (req.url === "/rotate") {
      server.doc = jwks(b, a);
      return res.end("ok");
    }
    defaultServe(server, req, res);
  };
  const runtimes = [
    [root + "node_modules/@deno/linux-x64-glibc/deno", ["run", "--allow-all", "--no-lock", "test/key-set/runtime.mjs"]],
    [root + "node_modules/@oven/bun-linux-x64/bin/bun", ["test/key-set/runtime.mjs"]],
  ];
  for (const [bin, args] of runtimes) {
    assert.ok(existsSync(bin), `${bin} (the root package.json installs it)`);
    server.doc = jwks(a);
    const hits = server.hits;
    const input = JSON.stringify({ url: server.url, deliveries: [delivery(a), delivery(b), delivery(newKey())] });
    const r = await runChild(bin, args, npmDir, { POSTWIRE_KEY_SET_INPUT: input });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout.trim().split("\n").pop());
    assert.deepEqual(out, { first: "ok", beforeRotation: "invalid_signature", afterRotation: "ok", forged: "invalid_signature", fetches: 4 }, bin);
    assert.equal(server.hits - hits, 5, `${bin}: four fetches and the rotation`);
  }
});

/** What keyServer answers without `serve`: the current document. */
function defaultServe(server, req, res) {
  res.writeHead(200, { "content-type": "application/jwk-set+json", "cache-control": "public, max-age=300" });
  res.end(server.doc);
}

/** Runs a child without blocking this process (whose server answers it). */
function runChild(bin, args, cwd, env) {
  return new Promise((resolve) => {
    import("node:child_process").then(({ spawn }) => {
      const child = spawn(bin, args, { cwd, env: { ...process.env, ...env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" } });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c) => (stdout += c));
      child.stderr.on("data", (c) => (stderr += c));
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
      child.on("close", (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
      child.stdin.end();
    });
  });
}
