// The Worker's behaviour in real workerd (Miniflare) with its real store (a KV namespace, or
// the DedupObject Durable Object: POSTWIRE_DEDUP_STORE), against a real origin HTTP server on
// loopback: forwarding, de-duplication, origin failures and retries, in-flight repeats, bad
// input, rotation, the origin signature and misconfiguration. The same tests run in both
// modes; where the modes differ on purpose (a repeat while in flight), each has its own
// expectation.
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { startOrigin, closedPortUrl } from "./support/origin.mjs";
import {
  MODE,
  startWorker,
  delivery,
  newSecret,
  newId,
  nowSecs,
  sign,
  sampleBody,
  assertErrorBody,
  sleep,
} from "./support/worker.mjs";

const DAY_PLUS = 90000; // DEDUP_TTL_SECS in wrangler.toml
const secret = newSecret();

/** Waits until `cond()` holds, or fails after `ms`. */
async function until(cond, ms = 5000, what = "condition") {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function post(worker, d, extraHeaders = {}) {
  return worker.send({ headers: { ...d.headers, ...extraHeaders }, body: d.body });
}

const storeRecord = (worker, id) => worker.record(id);

describe("forwarding and de-duplication", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  beforeEach(() => origin.reset());

  it("forwards a first delivery with the raw body and original headers, then records it", async () => {
    const d = delivery({ secrets: [secret] });
    const res = await post(worker, d);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.code, "delivered");
    assert.equal(res.headers.get("x-postwire-duplicate"), null);

    const got = origin.receivedFor(d.id);
    assert.equal(got.length, 1);
    assert.equal(got[0].method, "POST");
    assert.equal(got[0].path, "/webhooks");
    assert.ok(got[0].body.equals(Buffer.from(d.body)), "body forwarded byte for byte");
    for (const h of ["webhook-id", "webhook-timestamp", "webhook-signature", "content-type"]) {
      assert.equal(got[0].headers[h], d.headers[h], h);
    }
    // The origin can verify it with the sender's secret (no origin secret configured here).
    assert.doesNotThrow(() => new Webhook(secret).verify(got[0].body.toString(), got[0].headers));

    const rec = await storeRecord(worker, d.id);
    assert.match(rec.value, /^delivered:\d+$/);
    assert.ok(Math.abs(rec.expiration - (nowSecs() + DAY_PLUS)) < 60, `expiration ${rec.expiration}`);
  });

  it("answers a repeat of a delivered id 2xx with the duplicate header, without forwarding", async () => {
    const d = delivery({ secrets: [secret] });
    assert.equal((await post(worker, d)).status, 200);
    // A retry: same id and body, new timestamp and signature.
    const retry = delivery({ secrets: [secret], id: d.id, body: d.body, timestamp: nowSecs() + 1 });
    for (let i = 0; i < 3; i++) {
      const res = await post(worker, retry);
      assert.equal(res.status, 200);
      assert.equal(res.json.code, "duplicate");
      assert.equal(res.headers.get("x-postwire-duplicate"), "true");
    }
    assert.equal(origin.receivedFor(d.id).length, 1);
  });

  it("a binary (non-UTF-8) body with a valid signature is 400 invalid_payload, not forwarded", async () => {
    const id = newId();
    const body = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x7b, 0x0a, 0xc3, 0x28]);
    const d = delivery({ secrets: [secret], id, body });
    d.headers["content-type"] = "application/octet-stream";
    const res = await post(worker, d);
    assertErrorBody(assert, res, 400, "invalid_payload");
    assert.equal(origin.receivedFor(id).length, 0);
    assert.equal(await storeRecord(worker, id), undefined);
  });

  for (const [name, plan, status, code] of [
    ["answers 500", { status: 500 }, 502, "origin_rejected"],
    ["answers 400", { status: 400 }, 502, "origin_rejected"],
    ["redirects (not followed)", { status: 302 }, 502, "origin_rejected"],
    ["drops the connection", { destroy: true }, 502, "origin_unavailable"],
  ]) {
    it(`origin ${name}: ${status} ${code}, not recorded; the retry is forwarded exactly once more`, async () => {
      const d = delivery({ secrets: [secret] });
      origin.next(plan);
      const res = await post(worker, d);
      assertErrorBody(assert, res, status, code);
      if (plan.status) assert.equal(res.headers.get("x-postwire-origin-status"), String(plan.status));
      assert.equal(await storeRecord(worker, d.id), undefined, "nothing recorded after a failure");
      assert.equal(origin.receivedFor(d.id).length, 1);

      const retry = delivery({ secrets: [secret], id: d.id, body: d.body });
      const ok = await post(worker, retry);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.json.code, "delivered");
      assert.equal(origin.receivedFor(d.id).length, 2);
      const again = await post(worker, retry);
      assert.equal(again.json.code, "duplicate");
      assert.equal(origin.receivedFor(d.id).length, 2);
    });
  }

  it(
    MODE === "kv"
      ? "a repeat while the first attempt is in flight is 409 with retry-after, never 2xx"
      : "a repeat while the first attempt is in flight waits for its outcome, then is 200 duplicate",
    async () => {
      const d = delivery({ secrets: [secret] });
      origin.next({ status: 200, delayMs: 1500 });
      const first = post(worker, d);
      await until(() => origin.receivedFor(d.id).length === 1, 5000, "the first forward");
      if (MODE === "kv") {
        const rec = await storeRecord(worker, d.id);
        assert.match(rec.value, /^in_flight:\d+$/);
        assert.ok(Math.abs(rec.expiration - (nowSecs() + 60)) < 15, `in-flight expiration ${rec.expiration}`);
      }
      const started = Date.now();
      const second = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
      if (MODE === "kv") {
        assertErrorBody(assert, second, 409, "delivery_in_progress");
        assert.equal(second.headers.get("retry-after"), "60");
        assert.equal(origin.receivedFor(d.id).length, 1, "not forwarded while in flight");
      } else {
        assert.equal(second.status, 200, second.text);
        assert.equal(second.json.code, "duplicate");
        assert.ok(Date.now() - started > 500, "the repeat waited for the first attempt");
      }
      assert.equal((await first).json.code, "delivered");
      const third = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
      assert.equal(third.json.code, "duplicate");
      assert.equal(origin.receivedFor(d.id).length, 1);
    },
  );

  it(
    MODE === "kv"
      ? "in flight then the origin fails: the repeat was refused, and the next retry goes through"
      : "in flight then the origin fails: the waiting repeat is forwarded itself, once",
    async () => {
      const d = delivery({ secrets: [secret] });
      origin.next({ status: 503, delayMs: 1500 });
      const first = post(worker, d);
      await until(() => origin.receivedFor(d.id).length === 1, 5000, "the first forward");
      const second = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
      const firstRes = await first;
      assertErrorBody(assert, firstRes, 502, "origin_rejected");
      if (MODE === "kv") {
        assert.equal(second.status, 409);
        assert.equal(await storeRecord(worker, d.id), undefined);
        const retry = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
        assert.equal(retry.json.code, "delivered");
      } else {
        assert.equal(second.json?.code, "delivered", second.text);
      }
      assert.equal(origin.receivedFor(d.id).length, 2);
      const after = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
      assert.equal(after.json.code, "duplicate");
      assert.equal(origin.receivedFor(d.id).length, 2);
    },
  );

  it("origin unreachable: 502 origin_unavailable, nothing recorded; retry after it is back", async () => {
    const d = delivery({ secrets: [secret] });
    await worker.reconfigure({ WEBHOOK_SECRETS: secret, ORIGIN_URL: await closedPortUrl() });
    try {
      const res = await post(worker, d);
      assertErrorBody(assert, res, 502, "origin_unavailable");
      assert.equal(await storeRecord(worker, d.id), undefined);
    } finally {
      await worker.reconfigure({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url });
    }
    const ok = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
    assert.equal(ok.json.code, "delivered");
    assert.equal(origin.receivedFor(d.id).length, 1);
  });
});

describe("origin timeout", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, FORWARD_TIMEOUT_MS: "1000" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("gives up after FORWARD_TIMEOUT_MS with 504, records nothing, and forwards the retry", async () => {
    const d = delivery({ secrets: [secret] });
    origin.next({ status: 200, delayMs: 4000 });
    const started = Date.now();
    const res = await post(worker, d);
    const took = Date.now() - started;
    assertErrorBody(assert, res, 504, "origin_timeout");
    assert.ok(took >= 950 && took < 3500, `answered after ${took} ms`);
    assert.equal(await storeRecord(worker, d.id), undefined);

    const ok = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
    assert.equal(ok.json.code, "delivered");
    assert.equal(origin.receivedFor(d.id).length, 2);
  });
});

describe("bad input is rejected with the spec's error body and never forwarded", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url });
  });
  after(async () => {
    // Nothing of this block reached the origin or the store.
    assert.equal(origin.received.length, 0, "bad input reached the origin");
    await worker?.dispose();
    await origin?.close();
  });

  async function expectRejected(res, status, code, d) {
    assertErrorBody(assert, res, status, code);
    const secretB64 = secret.slice(6);
    assert.ok(!res.text.includes(secretB64), "no secret in the answer");
    if (d) {
      for (const sig of d.headers["webhook-signature"]?.split(" ") ?? []) {
        assert.ok(!res.text.includes(sig.slice(3)), "no signature in the answer");
      }
      assert.equal(await storeRecord(worker, d.id), undefined);
    }
  }

  for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
    it(`${method} is 405 with allow: POST`, async () => {
      const d = delivery({ secrets: [secret] });
      const res = await worker.send({ method, headers: d.headers, body: method === "GET" ? undefined : d.body });
      await expectRejected(res, 405, "method_not_allowed", d);
      assert.equal(res.headers.get("allow"), "POST");
    });
  }

  for (const header of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    it(`missing ${header} is 400 missing_header`, async () => {
      const d = delivery({ secrets: [secret] });
      delete d.headers[header];
      const res = await post(worker, d);
      await expectRejected(res, 400, "missing_header", d);
      assert.match(res.json.message, new RegExp(header));
    });
  }

  for (const [what, header, value] of [
    ["a timestamp with trailing characters", "webhook-timestamp", `${nowSecs()}abc`],
    ["a fractional timestamp", "webhook-timestamp", `${nowSecs()}.5`],
    ["an id with a space", "webhook-id", "msg 1"],
    ["a signature header over 8 KiB", "webhook-signature", "v1,x".padEnd(9000, "x")],
  ]) {
    it(`${what} is 400 invalid_header`, async () => {
      const d = delivery({ secrets: [secret] });
      const res = await post(worker, d, { [header]: value });
      await expectRejected(res, 400, "invalid_header", d);
    });
  }

  it("a signature made with another secret is 401 invalid_signature", async () => {
    const d = delivery({ secrets: [newSecret()] });
    await expectRejected(await post(worker, d), 401, "invalid_signature", d);
  });

  it("a tampered body is 401 invalid_signature", async () => {
    const d = delivery({ secrets: [secret] });
    const res = await worker.send({ headers: d.headers, body: d.body.replace("hello", "hellp") });
    await expectRejected(res, 401, "invalid_signature", d);
  });

  it("a body re-serialized with other whitespace is 401 invalid_signature", async () => {
    const d = delivery({ secrets: [secret] });
    const res = await worker.send({ headers: d.headers, body: JSON.stringify(JSON.parse(d.body), null, 2) });
    await expectRejected(res, 401, "invalid_signature", d);
  });

  it("a timestamp 301 s old is 401 timestamp_too_old, 301 s ahead 401 timestamp_too_new", async () => {
    const old = delivery({ secrets: [secret], timestamp: nowSecs() - 301 });
    await expectRejected(await post(worker, old), 401, "timestamp_too_old", old);
    const ahead = delivery({ secrets: [secret], timestamp: nowSecs() + 305 });
    await expectRejected(await post(worker, ahead), 401, "timestamp_too_new", ahead);
    const dayOld = delivery({ secrets: [secret], timestamp: nowSecs() - 86400 });
    await expectRejected(await post(worker, dayOld), 401, "timestamp_too_old", dayOld);
  });

  it("a body over MAX_BODY_BYTES (1 MiB) is 413, whether declared or streamed", async () => {
    const id = newId();
    const big = Buffer.alloc(1024 * 1024 + 1, 0x61);
    const d = delivery({ secrets: [secret], id, body: big });
    await expectRejected(await post(worker, d), 413, "payload_too_large", d);

    // Chunked: no content-length, so the Worker must count while reading.
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 17; i++) controller.enqueue(new Uint8Array(64 * 1024).fill(0x61));
        controller.close();
      },
    });
    const res = await worker.send({ headers: d.headers, body: stream });
    await expectRejected(res, 413, "payload_too_large", d);
  });
});

describe("a body of exactly MAX_BODY_BYTES passes", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, MAX_BODY_BYTES: "4096" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("4096 bytes with MAX_BODY_BYTES=4096 is forwarded; 4097 is 413", async () => {
    const id = newId();
    const body = sampleBody(id, 4096); // a JSON object of exactly 4096 bytes
    assert.equal(Buffer.byteLength(body), 4096);
    const d = delivery({ secrets: [secret], id, body });
    assert.equal((await post(worker, d)).json.code, "delivered");
    assert.equal(origin.receivedFor(d.id)[0].body.length, 4096);
    const overId = newId();
    const over = delivery({ secrets: [secret], id: overId, body: sampleBody(overId, 4097) });
    assert.equal(Buffer.byteLength(over.body), 4097);
    assertErrorBody(assert, await post(worker, over), 413, "payload_too_large");
    assert.equal(origin.receivedFor(over.id).length, 0);
  });
});

describe("secret rotation", () => {
  const oldSecret = newSecret();
  const newSecretValue = newSecret();
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: `${newSecretValue} ${oldSecret}`, ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("a Worker holding new and old secrets accepts deliveries signed with either", async () => {
    for (const s of [oldSecret, newSecretValue]) {
      const d = delivery({ secrets: [s] });
      const res = await post(worker, d);
      assert.equal(res.json?.code, "delivered", res.text);
    }
    const neither = delivery({ secrets: [newSecret()] });
    assertErrorBody(assert, await post(worker, neither), 401, "invalid_signature");
  });

  it("a header with old and new signatures passes a Worker holding only one of them", async () => {
    for (const held of [newSecretValue, oldSecret]) {
      await worker.reconfigure({ WEBHOOK_SECRETS: held, ORIGIN_URL: origin.url });
      const d = delivery({ secrets: [oldSecret, newSecretValue] });
      assert.equal(d.headers["webhook-signature"].split(" ").length, 2);
      const res = await post(worker, d);
      assert.equal(res.json?.code, "delivered", res.text);
      assert.equal(origin.receivedFor(d.id)[0].headers["webhook-signature"], d.headers["webhook-signature"]);
    }
    // Comma-separated secrets are accepted too.
    await worker.reconfigure({ WEBHOOK_SECRETS: `${newSecretValue},${oldSecret}`, ORIGIN_URL: origin.url });
    assert.equal((await post(worker, delivery({ secrets: [oldSecret] }))).json?.code, "delivered");
  });

  it("a signature header sent as two lines counts both (joined with \", \" on the way in)", async () => {
    await worker.reconfigure({ WEBHOOK_SECRETS: oldSecret, ORIGIN_URL: origin.url });
    const d = delivery({ secrets: [oldSecret, newSecretValue] });
    const [first, second] = d.headers["webhook-signature"].split(" ");
    const headers = Object.entries(d.headers).filter(([name]) => name !== "webhook-signature");
    headers.push(["webhook-signature", first], ["webhook-signature", second]);
    const res = await worker.send({ headers, body: d.body });
    assert.equal(res.json?.code, "delivered", res.text);
  });
});

describe("origin secret: the Worker's proof for the origin", () => {
  const originSecret = newSecret();
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ORIGIN_SECRET: originSecret });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("the origin verifies the forwarded delivery with the origin secret alone (npm standardwebhooks)", async () => {
    const d = delivery({ secrets: [secret] });
    assert.equal((await post(worker, d)).json?.code, "delivered");
    const [got] = origin.receivedFor(d.id);
    const forwardedSig = got.headers["webhook-signature"];
    assert.equal(forwardedSig.split(" ").length, 2, forwardedSig);
    assert.ok(forwardedSig.endsWith(d.headers["webhook-signature"]), "the sender's signature is kept");
    assert.equal(forwardedSig.split(" ")[0], sign(originSecret, d.id, d.headers["webhook-timestamp"], d.body));
    assert.equal(got.headers["webhook-id"], d.id);
    assert.equal(got.headers["webhook-timestamp"], d.headers["webhook-timestamp"]);
    assert.deepEqual(new Webhook(originSecret).verify(got.body.toString(), got.headers), JSON.parse(d.body));
    // A delivery sent straight to the origin (no Worker) fails the origin's check.
    assert.throws(() => new Webhook(originSecret).verify(d.body, d.headers));
    assert.throws(() => new Webhook(newSecret()).verify(got.body.toString(), got.headers));
  });
});

describe("misconfiguration fails closed with 500, never forwarding, never echoing settings", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: undefined, ORIGIN_URL: origin.url });
  });
  after(async () => {
    assert.equal(origin.received.length, 0);
    await worker?.dispose();
    await origin?.close();
  });

  for (const [what, bindings, opts] of [
    ["no WEBHOOK_SECRETS", { WEBHOOK_SECRETS: undefined }, { store: true }],
    ["a malformed WEBHOOK_SECRETS", { WEBHOOK_SECRETS: "whsec_!!not-base64!!" }, { store: true }],
    ["a malformed ORIGIN_SECRET", { WEBHOOK_SECRETS: secret, ORIGIN_SECRET: "whsec_??bad??" }, { store: true }],
    ["FORWARD_TIMEOUT_MS above 9000", { WEBHOOK_SECRETS: secret, FORWARD_TIMEOUT_MS: "15000" }, { store: true }],
    MODE === "kv"
      ? ["DEDUP_TTL_SECS below KV's 60 s", { WEBHOOK_SECRETS: secret, DEDUP_TTL_SECS: "30" }, { store: true }]
      : ["DEDUP_TTL_SECS not a number", { WEBHOOK_SECRETS: secret, DEDUP_TTL_SECS: "ninety" }, { store: true }],
    ["no ORIGIN_URL", { WEBHOOK_SECRETS: secret, ORIGIN_URL: undefined }, { store: true }],
    ["an unknown DEDUP_STORE", { WEBHOOK_SECRETS: secret, DEDUP_STORE: "redis" }, { store: true }],
    ["ALLOW_NON_JSON neither true nor false", { WEBHOOK_SECRETS: secret, ALLOW_NON_JSON: "yes" }, { store: true }],
    [MODE === "kv" ? "no KV binding" : "no Durable Object binding", { WEBHOOK_SECRETS: secret }, { store: false }],
  ]) {
    it(`${what}: 500 worker_misconfigured`, async () => {
      await worker.reconfigure({ ORIGIN_URL: origin.url, ...bindings }, opts);
      const d = delivery({ secrets: [secret] });
      const res = await post(worker, d);
      assertErrorBody(assert, res, 500, "worker_misconfigured");
      for (const v of Object.values(bindings)) if (v) assert.ok(!res.text.includes(v), "a setting was echoed");
    });
  }
});

describe("bodies that are not a JSON object are 400 invalid_payload, never forwarded or recorded", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url });
  });
  after(async () => {
    assert.equal(origin.received.length, 0, "a body that is not a JSON object reached the origin");
    await worker?.dispose();
    await origin?.close();
  });

  for (const [what, body] of [
    ["an empty body", ""],
    ["whitespace only", " \n "],
    ["text that is not JSON", "hello"],
    ["truncated JSON", '{"id": "x", "type":'],
    ["a JSON array", '[{"id": "x"}]'],
    ["a JSON string", '"{\\"id\\": 1}"'],
    ["a JSON number", "42"],
    ["JSON null", "null"],
    ["an object followed by more", '{"a": 1} {"b": 2}'],
  ]) {
    it(`${what}, validly signed`, async () => {
      const d = delivery({ secrets: [secret], body });
      const res = await post(worker, d);
      assertErrorBody(assert, res, 400, "invalid_payload");
      assert.equal(await storeRecord(worker, d.id), undefined, "not recorded");
      // The same body badly signed is 401: the signature is checked first.
      const forged = delivery({ secrets: [newSecret()], id: newId(), body });
      assertErrorBody(assert, await post(worker, forged), 401, "invalid_signature");
    });
  }
});

describe("ALLOW_NON_JSON = \"true\" forwards any body", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ALLOW_NON_JSON: "true" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  for (const [what, body] of [
    ["an empty body", Buffer.alloc(0)],
    ["a binary (non-UTF-8) body", Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x7b, 0x0a, 0xc3, 0x28])],
    ["a JSON array", Buffer.from("[1,2,3]")],
  ]) {
    it(`${what} is forwarded unchanged, once`, async () => {
      const d = delivery({ secrets: [secret], body });
      const res = await post(worker, d);
      assert.equal(res.json?.code, "delivered", res.text);
      assert.ok(origin.receivedFor(d.id)[0].body.equals(body));
      assert.equal((await post(worker, d)).json?.code, "duplicate");
      assert.equal(origin.receivedFor(d.id).length, 1);
    });
  }
});

describe("VALIDATE_EVENTS = \"postwire\" forwards only postwire events", () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, VALIDATE_EVENTS: "postwire" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("an event of a known type whose id is the webhook-id is forwarded", async () => {
    const d = delivery({ secrets: [secret] }); // sampleBody: a webhook.test event with id = webhook-id
    assert.equal((await post(worker, d)).json?.code, "delivered");
    assert.equal(origin.receivedFor(d.id).length, 1);
  });

  for (const [what, makeBody] of [
    ["a JSON object that is no event", () => '{"hello": "world"}'],
    ["an unknown type", (id) => sampleBody(id).replace("webhook.test", "webhook.unknown")],
    ["data of the wrong shape", (id) => sampleBody(id).replace('"message":"hello"', '"message":42')],
    ["an envelope id that is not the webhook-id", () => sampleBody("msg_someone_else")],
  ]) {
    it(`${what} is 400 invalid_payload, not forwarded`, async () => {
      const id = newId();
      const d = delivery({ secrets: [secret], id, body: makeBody(id) });
      assertErrorBody(assert, await post(worker, d), 400, "invalid_payload");
      assert.equal(origin.receivedFor(id).length, 0);
      assert.equal(await storeRecord(worker, id), undefined);
    });
  }
});

describe("Durable Object mode: a record expires through the object's alarm", { skip: MODE !== "durable-object" }, () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, DEDUP_TTL_SECS: "2" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("delivered, remembered with an alarm at its expiry, then deleted by the alarm: the object holds nothing", async () => {
    const d = delivery({ secrets: [secret] });
    const before = Date.now();
    assert.equal((await post(worker, d)).json?.code, "delivered");
    const state = await worker.objectState(d.id);
    assert.match(state.record, /^delivered:\d+$/);
    assert.ok(state.alarm >= before + 1500 && state.alarm <= Date.now() + 2500, `alarm at ${state.alarm - before} ms`);
    assert.equal((await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }))).json?.code, "duplicate");

    // The alarm fires about 2 s later and deletes the record and itself.
    const deadline = Date.now() + 8000;
    let after;
    do {
      await sleep(200);
      after = await worker.objectState(d.id);
    } while (after.record !== null && Date.now() < deadline);
    assert.deepEqual(after, { record: null, alarm: null }, "the object still holds data after its span");

    // Past the span, the id is new again (as the sender's retries are over by then).
    const again = await post(worker, delivery({ secrets: [secret], id: d.id, body: d.body }));
    assert.equal(again.json?.code, "delivered");
    assert.equal(origin.receivedFor(d.id).length, 2);
  });
});

describe("Durable Object mode: a copy that waited longer than the forward timeout is not forwarded", { skip: MODE !== "durable-object" }, () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, FORWARD_TIMEOUT_MS: "1000" });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("the first two attempts fail after 0.7 s each: the second copy (waited 0.7 s) is forwarded, the third (waited 1.4 s) is 409", async () => {
    origin.next({ status: 500, delayMs: 700 }, { status: 500, delayMs: 700 });
    const d = delivery({ secrets: [secret] });
    const first = post(worker, d);
    await until(() => origin.receivedFor(d.id).length === 1, 5000, "the first forward");
    const second = post(worker, d);
    await sleep(50);
    const third = post(worker, d);
    const [a, b, c] = await Promise.all([first, second, third]);
    assertErrorBody(assert, a, 502, "origin_rejected");
    // Waited about 0.7 s for the first, below FORWARD_TIMEOUT_MS (1 s): forwarded itself.
    assertErrorBody(assert, b, 502, "origin_rejected");
    // Waited about 1.4 s for both: answered from the record (nothing), not forwarded.
    assertErrorBody(assert, c, 409, "delivery_in_progress");
    assert.equal(origin.receivedFor(d.id).length, 2);
    assert.equal(await storeRecord(worker, d.id), undefined, "nothing recorded: the next retry goes through");
    assert.equal((await post(worker, d)).json?.code, "delivered");
    assert.equal(origin.receivedFor(d.id).length, 3);
  });
});
