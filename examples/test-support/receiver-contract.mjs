// The behaviour every JavaScript receiver example must have, as one test suite that each
// example's test runs against its own server over real loopback HTTP:
//   a signed delivery is handled once (200); a duplicate is acknowledged (200) but not
//   handled again; tampered, stale, unsigned or malformed deliveries get 400 with the
//   stable error code; a failing handler gives 500 and its retry is handled; an oversized
//   body gives 413; the secret never appears in the logs.
//
// `start({ secret, onEvent, log })` starts the example and resolves to
// `{ url, close() }`; `onEvent(event)` is the example's business logic (here: recorded).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { newSecret, delivery, post, sign, nowSecs } from "./deliveries.mjs";
import { SAMPLE_TYPES } from "../playground/samples.js";

export function receiverContract(name, start) {
  const secret = newSecret();
  const handled = [];
  const logs = [];
  let failNext = 0;
  let server;

  before(async () => {
    server = await start({
      secret,
      onEvent: async (event) => {
        if (failNext > 0) {
          failNext -= 1;
          throw new Error("the database is down (simulated)");
        }
        handled.push(event);
      },
      log: (line) => logs.push(String(line)),
    });
  });
  after(() => server?.close());

  const assertError = (res, status, code) => {
    assert.equal(res.status, status, res.text);
    assert.equal(res.json?.code, code, res.text);
    assert.equal(res.json?.statusCode, status);
    assert.equal(typeof res.json?.message, "string");
  };

  test(`${name}: a signed delivery of each type is handled, typed`, async () => {
    for (const type of SAMPLE_TYPES) {
      const d = delivery(secret, { type });
      const res = await post(server.url, d);
      assert.equal(res.status, 200, `${type}: ${res.text}`);
      assert.deepEqual(res.json, { received: true, duplicate: false });
      const event = handled.at(-1);
      assert.equal(event.id, d.id);
      assert.equal(event.type, type);
      assert.deepEqual(event, JSON.parse(d.body));
    }
    assert.equal(handled.length, SAMPLE_TYPES.length);
  });

  test(`${name}: a duplicate is acknowledged but handled once`, async () => {
    const d = delivery(secret, { type: "post.failed" });
    const first = await post(server.url, d);
    assert.deepEqual(first.json, { received: true, duplicate: false });
    const before = handled.length;
    // The same event again (a retry): re-signed with a new timestamp, as the sender does.
    const again = delivery(secret, { id: d.id, body: d.body, timestamp: nowSecs() + 1 });
    const second = await post(server.url, again);
    assert.equal(second.status, 200, "a duplicate must be 2xx, or the sender keeps retrying it");
    assert.deepEqual(second.json, { received: true, duplicate: true });
    assert.equal(handled.length, before, "not handled twice");
    assert.equal(handled.filter((e) => e.id === d.id).length, 1);
  });

  test(`${name}: a tampered delivery is refused with invalid_signature`, async () => {
    const d = delivery(secret);
    const count = handled.length;
    assertError(await post(server.url, { ...d, body: d.body.replace('"PUBLISHED"', '"ERROR"') }), 400, "invalid_signature");
    assertError(await post(server.url, { ...d, body: d.body + "\n" }), 400, "invalid_signature");
    assertError(await post(server.url, delivery(newSecret())), 400, "invalid_signature");
    assert.equal(handled.length, count, "nothing handled");
    // The refused attempts did not mark the id as seen: the genuine one is still handled.
    assert.equal((await post(server.url, d)).json?.duplicate, false);
  });

  test(`${name}: missing, stale and malformed headers`, async () => {
    const d = delivery(secret);
    const { ["webhook-signature"]: _, ...unsigned } = d.headers;
    assertError(await post(server.url, { ...d, headers: unsigned }), 400, "missing_header");
    const old = nowSecs() - 3600;
    assertError(await post(server.url, delivery(secret, { timestamp: old })), 400, "timestamp_too_old");
    assertError(await post(server.url, delivery(secret, { timestamp: nowSecs() + 3600 })), 400, "timestamp_too_new");
    assertError(await post(server.url, { ...d, headers: { ...d.headers, "webhook-timestamp": "12ab" } }), 400, "invalid_header");
  });

  test(`${name}: a signed body that is not an event is refused with invalid_payload`, async () => {
    const id = `msg_notevent_${Date.now()}`;
    for (const body of ["not json", JSON.stringify({ id, type: "post.exploded", data: {} })]) {
      const ts = nowSecs();
      const headers = { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": sign(secret, id, ts, body) };
      assertError(await post(server.url, { headers, body }), 400, "invalid_payload");
    }
  });

  test(`${name}: the raw body is verified whatever the content-type`, async () => {
    const d = delivery(secret, { type: "webhook.test" });
    const res = await post(server.url, { ...d, headers: { ...d.headers, "content-type": "text/plain" } });
    assert.equal(res.status, 200, res.text);
    assert.equal(handled.at(-1).id, d.id);
  });

  test(`${name}: a failing handler gives 500, and the sender's retry is handled`, async () => {
    const d = delivery(secret, { type: "post.deleted" });
    failNext = 1;
    const first = await post(server.url, d);
    assertError(first, 500, "handler_failed");
    assert.equal(handled.some((e) => e.id === d.id), false);
    const retry = await post(server.url, delivery(secret, { id: d.id, body: d.body }));
    assert.equal(retry.status, 200, retry.text);
    assert.deepEqual(retry.json, { received: true, duplicate: false }, "the failed attempt was forgotten");
    assert.equal(handled.filter((e) => e.id === d.id).length, 1);
  });

  test(`${name}: an oversized body gives 413 without being handled`, async () => {
    const count = handled.length;
    const res = await post(server.url, { headers: { "content-type": "application/json" }, body: "x".repeat(2 * 1024 * 1024) });
    assertError(res, 413, "payload_too_large");
    assert.equal(handled.length, count);
  });

  test(`${name}: other methods and paths are refused cleanly`, async () => {
    const res = await fetch(server.url, { method: "GET" });
    assert.ok([404, 405].includes(res.status), String(res.status));
    const json = await res.json();
    assert.equal(typeof json.code, "string");
  });

  test(`${name}: the logs say what happened and never contain the secret`, () => {
    assert.ok(logs.length > 0, "something was logged");
    const all = logs.join("\n");
    assert.equal(all.includes(secret), false);
    assert.equal(all.includes(secret.slice(6, 30)), false);
    assert.match(all, /invalid_signature/);
    assert.match(all, /duplicate/);
  });
}
