// Provider routes (PROVIDER_ROUTES) in listen mode (LISTEN_TOKEN), in the mode's store
// (POSTWIRE_DEDUP_STORE): a WebSocket client on loopback (npm `ws`) speaks the listen frames
// of postwire-edge-wire to the real ListenObject in workerd. A verified provider delivery
// reaches the listener as the origin would receive it: the namespaced webhook-id, the body
// byte for byte, the signature made with ORIGIN_SECRET alone, postwire-provider,
// postwire-event-type and the provider's own headers; the sender gets the listener's
// verdict; a copy is a duplicate; a handshake is answered without the listener.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import WebSocket from "ws";
import { MODE, startWorker, sign, sleep } from "../support/worker.mjs";
import { BINDINGS, ORIGIN_SECRET, githubEvent, send, slackRequest, stripeEvent } from "../support/providers.mjs";

const TOKEN = "listen-token-for-providers-0123456789";

/** A listener answering each delivery frame with `status`; records the frames. */
async function connect(base, status = 200) {
  const url = new URL("/_postwire/listen", base);
  url.protocol = "ws:";
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  const frames = [];
  ws.on("message", (data) => {
    const frame = JSON.parse(data.toString());
    frames.push(frame);
    if (frame.type === "delivery") ws.send(JSON.stringify({ type: "answer", correlation_id: frame.correlation_id, status }));
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const end = Date.now() + 5000;
  while (!frames.some((f) => f.type === "hello")) {
    if (Date.now() > end) throw new Error("no hello frame");
    await sleep(10);
  }
  return { frames, deliveries: () => frames.filter((f) => f.type === "delivery"), close: () => ws.close() };
}

describe(`${MODE}: listen mode, provider routes`, () => {
  let worker, listener;
  before(async () => {
    worker = await startWorker({ ...BINDINGS, LISTEN_TOKEN: TOKEN, ORIGIN_URL: "http://127.0.0.1:9/unused" });
    listener = await connect(worker.url());
  });
  after(async () => {
    listener?.close();
    await worker?.dispose();
  });

  it("a Stripe event and a GitHub delivery reach the listener re-signed, with their headers; copies are duplicates", async () => {
    const stripe = stripeEvent();
    const res = await send(worker, "/stripe", stripe);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.code, "delivered");
    const github = await githubEvent();
    assert.equal((await send(worker, "/github", github)).json?.code, "delivered");
    const [first, second] = listener.deliveries();
    assert.equal(listener.deliveries().length, 2);
    for (const [frame, sent, id, provider, type, kept] of [
      [first, stripe, `stripe:${stripe.id}`, "stripe", "invoice.paid", "stripe-signature"],
      [second, github, `github:${github.id}`, "github", "push", "x-github-delivery"],
    ]) {
      assert.equal(frame.id, id);
      assert.equal(frame.body, sent.body, "the body byte for byte");
      const h = frame.headers;
      assert.equal(h["webhook-id"], id);
      assert.equal(h["webhook-signature"], sign(ORIGIN_SECRET, id, h["webhook-timestamp"], Buffer.from(sent.body)), "ORIGIN_SECRET's signature alone");
      assert.equal(h["postwire-provider"], provider);
      assert.equal(h["postwire-event-type"], type);
      assert.equal(h[kept], sent.headers[kept]);
    }
    assert.equal((await send(worker, "/stripe", stripe)).json?.code, "duplicate");
    assert.equal(listener.deliveries().length, 2, "a copy is not relayed");
  });

  it("Slack's url_verification is answered without the listener", async () => {
    const challenge = crypto.randomBytes(16).toString("hex");
    const res = await send(worker, "/slack", slackRequest(JSON.stringify({ token: "x", challenge, type: "url_verification" })));
    assert.deepEqual([res.status, res.json], [200, { challenge }]);
    assert.equal(listener.deliveries().length, 2, "nothing relayed");
  });
});
