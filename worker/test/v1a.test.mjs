// The opt-in v1a extension at the edge: the built Worker in workerd (Miniflare), configured
// with WEBHOOK_PUBLIC_KEYS only (no secret at all), against a real origin on loopback. A
// delivery signed with the matching ed25519 key is forwarded; a forged one (another key, a
// tampered body, a non-canonical signature, a v1 signature by a guessed secret) is refused
// and never reaches the origin. Signatures are made with node:crypto's Ed25519, independently
// of the Rust code under test.
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, newId, newSecret, nowSecs, sign, sampleBody, assertErrorBody } from "./support/worker.mjs";

/** An ed25519 key pair: node's private key object and the `whpk_` text of its public key. */
function keyPair() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url");
  return { privateKey, whpk: `whpk_${raw.toString("base64")}` };
}

function signV1a(privateKey, id, timestamp, body) {
  const msg = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), Buffer.from(body)]);
  return `v1a,${crypto.sign(null, msg, privateKey).toString("base64")}`;
}

function v1aDelivery(privateKey, { id = newId("v1a"), timestamp = nowSecs(), body = sampleBody(id), extra = [] } = {}) {
  const signature = [...extra, signV1a(privateKey, id, timestamp, body)].join(" ");
  return {
    id,
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature,
    },
  };
}

// L, the order of the base point: S + L is the same scalar, which only a lax verifier accepts.
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
function withHighS(entry) {
  const sig = Buffer.from(entry.slice(4), "base64");
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]);
  s += L;
  for (let i = 32; i < 64; i++) {
    sig[i] = Number(s & 0xffn);
    s >>= 8n;
  }
  return `v1a,${sig.toString("base64")}`;
}

describe("v1a: public keys only", () => {
  const signer = keyPair();
  const other = keyPair();
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: undefined, WEBHOOK_PUBLIC_KEYS: `${other.whpk}, ${signer.whpk}`, ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  beforeEach(() => origin.reset());

  it("forwards a real v1a delivery byte for byte, with its headers", async () => {
    const d = v1aDelivery(signer.privateKey);
    const res = await worker.send({ headers: d.headers, body: d.body });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.code, "delivered");
    const got = origin.receivedFor(d.id);
    assert.equal(got.length, 1);
    assert.ok(got[0].body.equals(Buffer.from(d.body)));
    assert.equal(got[0].headers["webhook-signature"], d.headers["webhook-signature"]);
  });

  it("forwards a header mixing v1 and v1a when the v1a entry is valid", async () => {
    const id = newId("mixed");
    const ts = nowSecs();
    const body = sampleBody(id);
    const d = v1aDelivery(signer.privateKey, { id, timestamp: ts, body, extra: [sign(newSecret(), id, ts, body)] });
    const res = await worker.send({ headers: d.headers, body: d.body });
    assert.equal(res.status, 200, res.text);
    assert.equal(origin.receivedFor(id).length, 1);
  });

  it("refuses forgeries, and none reaches the origin", async () => {
    const stranger = keyPair();
    const good = v1aDelivery(signer.privateKey);
    const forgeries = {
      "another key": v1aDelivery(stranger.privateKey),
      "a tampered body": { ...good, body: good.body.replace("hello", "hellp") },
      "S + L": { ...good, headers: { ...good.headers, "webhook-signature": withHighS(good.headers["webhook-signature"]) } },
      "a v1 signature by a guessed secret": (() => {
        const id = newId("v1");
        const ts = nowSecs();
        const body = sampleBody(id);
        return { id, body, headers: { ...good.headers, "webhook-id": id, "webhook-signature": sign(newSecret(), id, ts, body) } };
      })(),
    };
    for (const [what, d] of Object.entries(forgeries)) {
      const res = await worker.send({ headers: d.headers, body: d.body });
      assertErrorBody(assert, res, 401, "invalid_signature");
      assert.ok(!res.text.includes(d.headers["webhook-signature"].slice(4, 20)), `${what}: the answer quotes no signature`);
    }
    assert.equal(origin.received.length, 0, "nothing forged was forwarded");
    // The genuine one still goes through afterwards.
    assert.equal((await worker.send({ headers: good.headers, body: good.body })).status, 200);
  });
});

describe("v1a: misconfiguration", () => {
  it("a whsk_ signing key in WEBHOOK_PUBLIC_KEYS is a 500 worker_misconfigured, never echoed", async () => {
    const origin = await startOrigin();
    const whsk = `whsk_${crypto.randomBytes(32).toString("base64")}`;
    const worker = await startWorker({ WEBHOOK_SECRETS: undefined, WEBHOOK_PUBLIC_KEYS: whsk, ORIGIN_URL: origin.url });
    try {
      const d = v1aDelivery(keyPair().privateKey);
      const res = await worker.send({ headers: d.headers, body: d.body });
      assertErrorBody(assert, res, 500, "worker_misconfigured");
      assert.ok(!res.text.includes(whsk.slice(5, 25)));
      assert.equal(origin.received.length, 0);
    } finally {
      await worker.dispose();
      await origin.close();
    }
  });
});
