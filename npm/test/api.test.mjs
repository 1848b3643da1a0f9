// The drop-in API and everything beyond it, on the built Node package.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import {
  Webhook,
  WebhookVerificationError,
  ReplayGuard,
  generateSecret,
  isWebhookId,
  EVENT_TYPES,
  ERROR_CODES,
} from "postwire";

const require = createRequire(new URL("../../package.json", import.meta.url));
const { Webhook: StandardWebhook, WebhookVerificationError: StandardError } = require("standardwebhooks");

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER = "whsec_" + Buffer.alloc(32, 7).toString("base64");

function delivery(secret, body, { id = "msg_1", at = new Date(), sign = new StandardWebhook(secret) } = {}) {
  const ts = String(Math.floor(at.getTime() / 1000));
  return { body, headers: { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sign.sign(id, at, body) } };
}

const testEvent = (id = "msg_1") =>
  JSON.stringify({ id, type: "webhook.test", createdAt: "2026-11-22T09:00:00.000Z", workspaceId: "ws_1", data: { message: "hi" } });

test("drop-in: same results as standardwebhooks on the same calls", () => {
  const ours = new Webhook(SECRET);
  const theirs = new StandardWebhook(SECRET);
  for (const body of ['{"a":1}', "[1,2,3]", '"text"', "", '{"unicode":"héllo ✓ 🎉"}']) {
    const { headers } = delivery(SECRET, body);
    assert.deepEqual(ours.verify(body, headers), theirs.verify(body, headers), body);
    assert.deepEqual(ours.verify(Buffer.from(body), headers), theirs.verify(Buffer.from(body), headers), body);
  }
  // sign: the same header value for the same inputs, with and without the prefix.
  for (let i = 0; i < 50; i++) {
    const id = `msg_${i}_${Math.random().toString(36).slice(2)}`;
    const at = new Date(1_600_000_000_000 + i * 12_345_678);
    const body = JSON.stringify({ i, s: "é".repeat(i) });
    assert.equal(ours.sign(id, at, body), theirs.sign(id, at, body));
    assert.equal(new Webhook(SECRET.slice(6)).sign(id, at, body), theirs.sign(id, at, body));
  }
  // format: "raw" with a string key and with bytes, as standardwebhooks reads them.
  for (const key of ["my-raw-key", new Uint8Array([1, 2, 3, 250])]) {
    const a = new Webhook(key, { format: "raw" }).sign("msg_1", new Date(0), "x");
    const b = new StandardWebhook(key, { format: "raw" }).sign("msg_1", new Date(0), "x");
    assert.equal(a, b);
  }
  // Failures throw our WebhookVerificationError where standardwebhooks throws its own.
  const { headers } = delivery(SECRET, "{}");
  assert.throws(() => theirs.verify("{ }", headers), StandardError);
  assert.throws(() => ours.verify("{ }", headers), WebhookVerificationError);
});

test("errors: real Error subclass with a stable code and a fixing message", () => {
  const wh = new Webhook(SECRET);
  const { headers } = delivery(SECRET, "{}");
  try {
    wh.verify("{ }", headers);
    assert.fail("should throw");
  } catch (e) {
    assert.ok(e instanceof Error && e instanceof WebhookVerificationError);
    assert.equal(e.name, "WebhookVerificationError");
    assert.equal(e.code, "invalid_signature");
    assert.match(e.message, /raw body/);
    assert.ok(e.stack.includes("WebhookVerificationError"));
    assert.ok(!e.message.includes(SECRET.slice(6)) && !e.message.includes(headers["webhook-signature"].slice(3)));
  }
  assert.throws(() => wh.verify({ a: 1 }, headers), { code: "invalid_payload", message: /already-parsed object.*express\.raw/ });
  assert.throws(() => wh.verify("{}", {}), { code: "missing_header", message: /webhook-id/ });
  assert.throws(() => new Webhook("whsec_!!!not base64"), (e) => e.code === "invalid_secret" && !e.message.includes("!!!not"));
  assert.throws(() => new Webhook([]), { code: "invalid_secret" });
  assert.throws(() => new Webhook(SECRET, { toleranceInSeconds: -1 }), RangeError);
  assert.deepEqual([...ERROR_CODES].sort(), [
    "invalid_header", "invalid_key_set", "invalid_payload", "invalid_provider_settings", "invalid_public_key", "invalid_secret",
    "invalid_signature", "key_set_unavailable", "missing_header", "timestamp_too_new", "timestamp_too_old",
  ]);
});

test("payload types: string, Uint8Array, Buffer, ArrayBuffer, DataView agree", () => {
  const wh = new Webhook(SECRET);
  const body = '{"x":"✓"}';
  const { headers } = delivery(SECRET, body);
  const bytes = new TextEncoder().encode(body);
  const inBigger = new Uint8Array(bytes.length + 10);
  inBigger.set(bytes, 5);
  for (const p of [body, bytes, Buffer.from(body), bytes.buffer.slice(0), new DataView(inBigger.buffer, 5, bytes.length), inBigger.subarray(5, 5 + bytes.length)]) {
    assert.deepEqual(wh.verify(p, headers), { x: "✓" });
  }
});

test("headers: plain object in any case, Fetch Headers, Node arrays, svix-* names", () => {
  const wh = new Webhook(SECRET);
  const { body, headers } = delivery(SECRET, "{}");
  const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(wh.verify(body, upper), {});
  assert.deepEqual(wh.verify(body, new Headers(headers)), {});
  assert.deepEqual(wh.verify(body, { ...headers, "webhook-id": [headers["webhook-id"], "other"] }), {});
  const svix = { "svix-id": headers["webhook-id"], "svix-timestamp": headers["webhook-timestamp"], "svix-signature": headers["webhook-signature"] };
  assert.deepEqual(wh.verify(body, svix), {});
  assert.deepEqual(wh.verify(body, new Headers(svix)), {});
  assert.deepEqual(wh.verify(body, new Map(Object.entries(headers))), {});
});

test("rotation: several secrets verify either signature; sign signs with all", () => {
  const both = new Webhook([OTHER, SECRET]);
  for (const s of [SECRET, OTHER]) {
    const { body, headers } = delivery(s, '{"k":1}');
    assert.deepEqual(both.verify(body, headers), { k: 1 });
  }
  const { body, headers } = delivery("whsec_" + Buffer.alloc(32, 9).toString("base64"), "{}");
  assert.throws(() => both.verify(body, headers), { code: "invalid_signature" });
  const value = both.sign("msg_1", new Date(0), "{}");
  const entries = value.split(" ");
  assert.equal(entries.length, 2);
  assert.equal(entries[1], new StandardWebhook(SECRET).sign("msg_1", new Date(0), "{}"));
  assert.equal(entries[0], new StandardWebhook(OTHER).sign("msg_1", new Date(0), "{}"));
  // Large bodies go through node:crypto on Node; rotation works there too.
  const big = JSON.stringify({ pad: "x".repeat(100_000) });
  const d = delivery(OTHER, big);
  assert.equal(both.verify(big, d.headers).pad.length, 100_000);
});

test("tolerance: 300 s by default, both ways; configurable", () => {
  const { body, headers } = delivery(SECRET, "{}", { at: new Date(1_700_000_000_000) });
  const wh = new Webhook(SECRET);
  assert.deepEqual(wh.verify(body, headers, { now: new Date(1_700_000_300_000) }), {});
  assert.throws(() => wh.verify(body, headers, { now: 1_700_000_301_000 }), { code: "timestamp_too_old" });
  assert.throws(() => wh.verify(body, headers, { now: 1_699_999_699_000 }), { code: "timestamp_too_new" });
  const tight = new Webhook(SECRET, { toleranceInSeconds: 10 });
  assert.throws(() => tight.verify(body, headers, { now: 1_700_000_011_000 }), { code: "timestamp_too_old" });
});

test("verifyEvent returns the typed event and checks the id", () => {
  const wh = new Webhook(SECRET);
  const { body, headers } = delivery(SECRET, testEvent("msg_1"), { id: "msg_1" });
  const event = wh.verifyEvent(body, headers);
  assert.equal(event.type, "webhook.test");
  assert.equal(event.data.message, "hi");
  const other = delivery(SECRET, testEvent("msg_2"), { id: "msg_1" });
  assert.throws(() => wh.verifyEvent(other.body, other.headers), { code: "invalid_payload", message: /differs/ });
  const notEvent = delivery(SECRET, '{"hello":1}');
  assert.throws(() => wh.verifyEvent(notEvent.body, notEvent.headers), { code: "invalid_payload" });
  assert.equal(EVENT_TYPES.length, 9);
  // The post content is never handed on.
  const post = {
    id: "msg_p", type: "post.scheduled", createdAt: "2026-11-22T09:00:00Z", workspaceId: "ws",
    data: { post: { id: "p", externalId: "e", group: "g", state: "QUEUE", publishDate: "2026-11-22T10:00:00Z",
      integration: { id: "a", name: "A", providerIdentifier: "x" }, content: "secret draft" } },
  };
  const p = delivery(SECRET, JSON.stringify(post), { id: "msg_p" });
  assert.equal(wh.verifyEvent(p.body, p.headers).data.post.content, undefined);
});

test("verifyRequest reads a Fetch Request's raw body once", async () => {
  const wh = new Webhook(SECRET);
  const { body, headers } = delivery(SECRET, testEvent("msg_r"), { id: "msg_r" });
  const req = () => new Request("https://example.com/hook", { method: "POST", headers, body });
  const event = await wh.verifyRequest(req());
  assert.equal(event.id, "msg_r");
  assert.deepEqual(await wh.verifyRequest(req(), { parse: "json" }), JSON.parse(body));
  const used = req();
  await used.json();
  await assert.rejects(wh.verifyRequest(used), { code: "invalid_payload", message: /already read/ });
  const tampered = new Request("https://example.com/hook", { method: "POST", headers, body: body.replace("hi", "ho") });
  await assert.rejects(wh.verifyRequest(tampered), { code: "invalid_signature" });
});

test("generateSecret: whsec_ + base64 of 32 random bytes, usable at once", () => {
  const a = generateSecret();
  const b = generateSecret();
  assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.notEqual(a, b);
  assert.equal(Buffer.from(a.slice(6), "base64").length, 32);
  const { body, headers } = delivery(a, "{}");
  assert.deepEqual(new Webhook(a).verify(body, headers), {});
});

test("ReplayGuard: fresh once, duplicate after, forget, TTL and capacity", () => {
  const g = new ReplayGuard({ capacity: 3, ttlSeconds: 60 });
  const t = 1_700_000_000_000;
  assert.equal(g.checkAndRecord("msg_1", t), "fresh");
  assert.equal(g.checkAndRecord("msg_1", t + 1000), "duplicate");
  g.forget("msg_1");
  assert.equal(g.checkAndRecord("msg_1", t), "fresh");
  assert.equal(g.checkAndRecord("msg_1", t + 61_000), "fresh", "expired after the TTL");
  for (const id of ["a", "b", "c", "d"]) g.checkAndRecord(id, t + 61_000);
  assert.equal(g.size, 3);
  assert.equal(g.checkAndRecord("msg_1", t + 61_000), "fresh", "evicted beyond the capacity");
  assert.equal(g.checkAndRecord("é✓", t), "fresh");
  assert.throws(() => g.checkAndRecord(42), TypeError);
  assert.throws(() => new ReplayGuard({ capacity: 0 }), RangeError);
});

test("the contested edge cases, as postwire-core decides them", () => {
  const wh = new Webhook(SECRET);
  const at = new Date(1_700_000_000_000);
  const { body, headers } = delivery(SECRET, "{}", { at });
  const now = { now: at };
  const sig = headers["webhook-signature"];
  // Unpadded secrets and signatures are accepted.
  assert.deepEqual(new Webhook("whsec_" + Buffer.alloc(31, 1).toString("base64").replace(/=+$/, "")).verify(
    "{}", delivery("whsec_" + Buffer.alloc(31, 1).toString("base64"), "{}", { at }).headers, now), {});
  assert.deepEqual(wh.verify(body, { ...headers, "webhook-signature": sig.replace(/=+$/, "") }, now), {});
  // Timestamps with trailing characters are rejected (standardwebhooks' parseInt accepts them).
  assert.throws(() => wh.verify(body, { ...headers, "webhook-timestamp": headers["webhook-timestamp"] + "abc" }, now), { code: "invalid_header" });
  const fresh = delivery(SECRET, "{}");
  const trailing = { ...fresh.headers, "webhook-timestamp": fresh.headers["webhook-timestamp"] + "abc" };
  assert.doesNotThrow(() => new StandardWebhook(SECRET).verify("{}", trailing));
  assert.throws(() => wh.verify("{}", trailing), { code: "invalid_header" });
  // `v1,<sig>,extra` is malformed and skipped.
  assert.throws(() => wh.verify(body, { ...headers, "webhook-signature": sig + ",extra" }, now), { code: "invalid_signature" });
  assert.deepEqual(wh.verify(body, { ...headers, "webhook-signature": `${sig},extra ${sig}` }, now), {});
  // isWebhookId is the header rule.
  assert.ok(isWebhookId("msg_1") && !isWebhookId("a b") && !isWebhookId("x".repeat(257)) && !isWebhookId(""));
  // sign refuses an id that cannot be a header value.
  assert.throws(() => wh.sign("a b", at, "{}"), { code: "invalid_header" });
  assert.throws(() => wh.sign("msg", new Date(NaN), "{}"), { code: "invalid_header" });
});
