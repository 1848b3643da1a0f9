// Hostile inputs: every one must end in a WebhookVerificationError (or a TypeError for a
// programming mistake such as a bad option), never a WebAssembly trap, and the module
// must keep working afterwards.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Webhook, WebhookVerificationError } from "postwire";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const REF = {
  body: '{"test": 2432232314}',
  headers: {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  },
  now: 1614265330_000,
};
const SIG = REF.headers["webhook-signature"];

/** Asserts `fn` throws a WebhookVerificationError with `code` (and nothing worse). */
function rejects(fn, code, what) {
  assert.throws(fn, (e) => {
    assert.ok(!(e instanceof WebAssembly.RuntimeError), `${what}: wasm trap ${e}`);
    assert.ok(e instanceof WebhookVerificationError, `${what}: ${e}`);
    assert.equal(e.code, code, `${what}: ${e.message}`);
    return true;
  });
}

function stillWorks() {
  for (const hmac of ["wasm", "native"]) {
    assert.deepEqual(new Webhook(SECRET, { hmac }).verify(REF.body, REF.headers, { now: REF.now }), { test: 2432232314 });
  }
}

for (const hmac of ["wasm", "native"]) {
  const wh = new Webhook(SECRET, { hmac });
  const at = { now: REF.now };

  test(`huge headers (hmac: ${hmac})`, () => {
    for (const size of [8193, 1 << 20, 16 << 20]) {
      rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": "v".repeat(size) }, at), "invalid_header", `signature ${size}`);
      rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": "i".repeat(size) }, at), "invalid_header", `id ${size}`);
      rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-timestamp": "1".repeat(size) }, at), "invalid_header", `timestamp ${size}`);
    }
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-timestamp": "99999999999999999999" }, at), "invalid_header", "overflowing timestamp");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-timestamp": "9223372036854775807" }, at), "timestamp_too_new", "i64::MAX");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": "é" }, at), "invalid_header", "non-ASCII id");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": "v1,é" }, at), "invalid_header", "non-ASCII signature");
    stillWorks();
  });

  test(`thousands of signatures (hmac: ${hmac})`, () => {
    const many = (n) => Array(n).fill("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").join(" ");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": many(5000) }, at), "invalid_header", "5000 entries");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": many(65) }, at), "invalid_header", "65 entries");
    assert.deepEqual(wh.verify(REF.body, { ...REF.headers, "webhook-signature": many(63) + " " + SIG }, at), { test: 2432232314 });
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": " ".repeat(8000) }, at), "invalid_signature", "only spaces");
    stillWorks();
  });

  test(`non-string payloads (hmac: ${hmac})`, () => {
    for (const p of [undefined, null, 42, 1n, true, {}, { test: 2432232314 }, [1, 2], () => 1, Symbol("s"), new Date()]) {
      rejects(() => wh.verify(p, REF.headers, at), "invalid_payload", String(typeof p));
      rejects(() => wh.sign("msg_1", new Date(), p), "invalid_payload", `sign ${typeof p}`);
    }
    stillWorks();
  });

  test(`invalid UTF-8 and lone surrogates (hmac: ${hmac})`, () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x7b, 0x7d, 0xc3]);
    const sig = wh.sign("msg_1", new Date(REF.now), bytes);
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": "1614265330", "webhook-signature": sig };
    assert.equal(wh.verify(bytes, headers, { ...at, jsonParse: false }), undefined, "verifies as bytes");
    rejects(() => wh.verify(bytes, headers, at), "invalid_payload", "JSON of invalid UTF-8");
    rejects(() => wh.verifyEvent(bytes, headers, at), "invalid_payload", "event of invalid UTF-8");
    // A lone surrogate is encoded as U+FFFD, as TextEncoder and every HTTP client do.
    const lone = '{"a":"\ud800"}';
    const s2 = wh.sign("msg_1", new Date(REF.now), lone);
    const h2 = { ...headers, "webhook-signature": s2 };
    assert.deepEqual(wh.verify(new TextEncoder().encode(lone), h2, at), { a: "\ufffd" });
    stillWorks();
  });

  test(`odd header containers and values (hmac: ${hmac})`, () => {
    for (const h of [undefined, null, "webhook-id: x", 42]) rejects(() => wh.verify(REF.body, h, at), "missing_header", String(h));
    rejects(() => wh.verify(REF.body, {}, at), "missing_header", "empty object");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": { toString: () => "x" } }, at), "invalid_header", "object value");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": Symbol("x") }, at), "invalid_header", "symbol value");
    rejects(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": [] }, at), "missing_header", "empty array");
    const nullProto = Object.assign(Object.create(null), REF.headers);
    assert.deepEqual(wh.verify(REF.body, nullProto, at), { test: 2432232314 });
    assert.deepEqual(wh.verify(REF.body, { ...REF.headers, "webhook-timestamp": 1614265330 }, at), { test: 2432232314 });
    assert.throws(() => wh.verify(REF.body, REF.headers, { now: NaN }), TypeError);
    rejects(() => wh.verify(REF.body, REF.headers, { now: 8.64e15 }), "timestamp_too_old", "far future clock");
    stillWorks();
  });

  test(`huge bodies (hmac: ${hmac})`, () => {
    const big = "x".repeat(64 << 20);
    rejects(() => wh.verify(big, REF.headers, at), "invalid_signature", "64 MiB string");
    const bytes = new Uint8Array(64 << 20);
    rejects(() => wh.verify(bytes, REF.headers, at), "invalid_signature", "64 MiB bytes");
    const sig = wh.sign("msg_1", new Date(REF.now), bytes);
    assert.equal(wh.verify(bytes, { "webhook-id": "msg_1", "webhook-timestamp": "1614265330", "webhook-signature": sig }, { ...at, jsonParse: false }), undefined);
    stillWorks();
  });
}

test("random garbage never traps", () => {
  const wh = new Webhook(SECRET);
  const alphabet = "v1,= \t+/AZaz09é\u0000\ud800.-_";
  const rand = (n) => Array.from({ length: Math.floor(Math.random() * n) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join("");
  for (let i = 0; i < 3000; i++) {
    const headers = { "webhook-id": rand(20), "webhook-timestamp": Math.random() < 0.5 ? rand(12) : "1614265330", "webhook-signature": rand(200) };
    const body = Math.random() < 0.5 ? rand(100) : new Uint8Array(Array.from({ length: 50 }, () => Math.floor(Math.random() * 256)));
    try {
      wh.verify(body, headers, { now: REF.now });
      assert.fail("garbage verified");
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError, String(e));
    }
    try {
      new Webhook(rand(60));
    } catch (e) {
      assert.ok(e instanceof WebhookVerificationError && e.code === "invalid_secret", String(e));
    }
  }
  stillWorks();
});

test("huge headers are cut before they are copied, with the same outcome", () => {
  const wh = new Webhook(SECRET);
  const at = { now: REF.now };
  // Leading and trailing spaces are trimmed first: a padded valid value still verifies.
  const pad = " ".repeat(100_000);
  assert.deepEqual(wh.verify(REF.body, { "webhook-id": pad + REF.headers["webhook-id"] + pad, "webhook-timestamp": pad + "1614265330", "webhook-signature": pad + SIG + pad }, at), { test: 2432232314 });
  // A non-ASCII character far down a long signature header is still "not ASCII", reported
  // before the timestamp window, exactly as postwire-core orders its checks.
  const longNonAscii = SIG + " " + "v".repeat(20_000) + "é";
  assert.throws(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": longNonAscii }, { now: REF.now + 10_000_000 }), (e) => e.code === "invalid_header" && /ASCII/.test(e.message));
  assert.throws(() => wh.verify(REF.body, { ...REF.headers, "webhook-signature": SIG + " " + "v".repeat(20_000) }, at), (e) => e.code === "invalid_header" && /8192/.test(e.message));
  assert.throws(() => wh.verify(REF.body, { ...REF.headers, "webhook-id": "i".repeat(300) }, at), (e) => e.code === "invalid_header" && /256/.test(e.message));
  // Mixed ASCII and non-ASCII bodies of every length round-trip through the grow path.
  for (const body of ["é", "a".repeat(5000) + "é", "é".repeat(5000), "🎉".repeat(3) + "x".repeat(70_000), "x".repeat(70_000) + "\ud800"]) {
    const sig = wh.sign("msg_1", new Date(REF.now), body);
    const bytes = new TextEncoder().encode(body);
    assert.equal(sig, wh.sign("msg_1", new Date(REF.now), bytes));
    assert.equal(wh.verify(body, { "webhook-id": "msg_1", "webhook-timestamp": "1614265330", "webhook-signature": sig }, { ...at, jsonParse: false }), undefined);
  }
});
