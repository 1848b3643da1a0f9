// Copies of one delivery sent at the same moment, against the built Worker in workerd with
// its real store (POSTWIRE_DEDUP_STORE: KV, or the Durable Object) and a slow real origin on
// loopback. The Worker must forward each webhook-id once: in KV mode through its in-isolate
// in-flight set (Miniflare runs one isolate, so every copy reaches the same one); in Durable
// Object mode through the object, where copies wait for the first attempt's outcome
// (blockConcurrencyWhile) and so are answered 200 duplicate, never 409.
//
// Checked to fail when the feature is removed: without the in-flight set, KV mode forwarded
// up to 16 copies per round; without blockConcurrencyWhile, Durable Object mode still
// forwarded once (its storage writes are atomic) but answered the copies 409 instead.
//
// POSTWIRE_CONCURRENCY_ROUNDS overrides the number of rounds (default 50).
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { MODE, startWorker, delivery, newSecret, newId, sampleBody } from "./support/worker.mjs";

const ROUNDS = Number(process.env.POSTWIRE_CONCURRENCY_ROUNDS ?? 50);
const FAILING_ROUNDS = Math.max(1, Math.round(ROUNDS / 5));
const COPIES = 20;
const ORIGIN_DELAY_MS = 250;
const secret = newSecret();

/** Sends `COPIES` identical requests at once; the answers' codes. */
async function burst(worker, d) {
  const results = await Promise.all(
    Array.from({ length: COPIES }, () => worker.send({ headers: d.headers, body: d.body })),
  );
  return results.map((r) => r.json?.code ?? `status ${r.status}`);
}

function count(codes) {
  const out = {};
  for (const c of codes) out[c] = (out[c] ?? 0) + 1;
  return out;
}

describe(`${MODE}: ${COPIES} simultaneous identical deliveries, origin answering after ${ORIGIN_DELAY_MS} ms`, () => {
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

  it(`${ROUNDS} rounds: the origin sees each id exactly once; one 200 delivered, the rest 409 or 200 duplicate`, async (t) => {
    origin.always({ status: 200, delayMs: ORIGIN_DELAY_MS });
    const forwards = [];
    const totals = {};
    const bad = [];
    const started = Date.now();
    for (let round = 0; round < ROUNDS; round++) {
      const id = newId("burst");
      const d = delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
      const codes = await burst(worker, d);
      const tally = count(codes);
      for (const [c, n] of Object.entries(tally)) totals[c] = (totals[c] ?? 0) + n;
      const seen = origin.receivedFor(id).length;
      forwards.push(seen);
      const others = codes.filter((c) => c !== "delivered");
      // KV mode: copies that arrive while the first is in flight are refused (409). Durable
      // Object mode: they wait for its outcome, so every other copy is a duplicate.
      const allowed = MODE === "kv" ? ["delivery_in_progress", "duplicate"] : ["duplicate"];
      if (seen !== 1 || tally.delivered !== 1 || others.some((c) => !allowed.includes(c))) {
        bad.push({ round, seen, tally });
      }
    }
    t.diagnostic(
      `${ROUNDS} rounds in ${Date.now() - started} ms; origin requests per round: ` +
        `min ${Math.min(...forwards)}, max ${Math.max(...forwards)}, total ${forwards.reduce((a, b) => a + b, 0)}; ` +
        `answers: ${JSON.stringify(totals)}`,
    );
    assert.deepEqual(bad, [], `rounds where the id was not forwarded exactly once: ${JSON.stringify(bad)}`);
  });

  it(`${FAILING_ROUNDS} rounds: the first attempt fails at the origin while copies wait; exactly one copy is forwarded next`, async (t) => {
    origin.always({ status: 200, delayMs: ORIGIN_DELAY_MS });
    const bad = [];
    const totals = {};
    for (let round = 0; round < FAILING_ROUNDS; round++) {
      const id = newId("fail");
      const d = delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
      origin.next({ status: 500, delayMs: ORIGIN_DELAY_MS });
      // The burst during which the first attempt fails, then the senders' next attempt.
      const codes = [...(await burst(worker, d)), ...(await burst(worker, d))];
      const tally = count(codes);
      for (const [c, n] of Object.entries(tally)) totals[c] = (totals[c] ?? 0) + n;
      const got = origin.receivedFor(id).length;
      // In Durable Object mode the waiting copies never see 409: the next one in line is
      // forwarded, the rest are duplicates.
      const allowed = new Set(MODE === "kv" ? ["delivered", "origin_rejected", "delivery_in_progress", "duplicate"] : ["delivered", "origin_rejected", "duplicate"]);
      if (got !== 2 || tally.delivered !== 1 || tally.origin_rejected !== 1 || codes.some((c) => !allowed.has(c))) {
        bad.push({ round, originRequests: got, tally });
      }
    }
    t.diagnostic(`answers over ${FAILING_ROUNDS} rounds of 2 × ${COPIES}: ${JSON.stringify(totals)}`);
    assert.deepEqual(bad, [], `rounds not forwarded exactly once after the failure: ${JSON.stringify(bad)}`);
  });
});
