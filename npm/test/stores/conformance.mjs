// The one suite every once-processing store passes (memoryStore, Redis with node-redis and
// ioredis, PostgreSQL with a Pool and a Client, D1, Durable Objects and KV in workerd):
// claim, duplicate, a live lease answered busy, an expired lease taken over, release,
// complete, expiry after keepMs, a stale token that can neither complete nor release, and
// renewal: only the holder's claim, which then outlives its first lease.
// `make(times)` returns a store with those `{leaseMs, keepMs}`; expiry uses short real
// times (the stores keep time in Redis, PostgreSQL or workerd, which no test clock reaches).
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";

const LONG = { leaseMs: 60_000, keepMs: 120_000 };
/** Short enough to wait out, long enough for a store call on a loaded machine. */
const SHORT = { leaseMs: 600, keepMs: 1_200 };

let serial = 0;
const freshId = (label) => `msg_conf_${label}_${process.pid}_${Date.now()}_${serial++}`;

/**
 * Runs the suite as `t`'s subtests against the stores `make` builds. `atomic: false` (KV,
 * best effort) leaves out the simultaneous claims, which such a store cannot order.
 */
export async function conformance(t, label, make, { atomic = true } = {}) {
  const long = await make(LONG);
  const short = await make(SHORT);

  await t.test(`${label}: the first claim holds the id, a second copy is busy with the lease's time left`, async () => {
    const id = freshId(label);
    assert.deepEqual(await long.claim(id, "tok_a"), { state: "claimed" });
    const busy = await long.claim(id, "tok_b");
    assert.equal(busy.state, "busy");
    assert.ok(busy.retryAfterMs > 0 && busy.retryAfterMs <= LONG.leaseMs, `retryAfterMs ${busy.retryAfterMs}`);
    assert.equal((await long.claim(id, "tok_a")).state, "busy", "the same token again is still a second copy");
  });

  await t.test(`${label}: complete marks the id done; every later copy is a duplicate`, async () => {
    const id = freshId(label);
    assert.deepEqual(await long.claim(id, "tok_a"), { state: "claimed" });
    assert.equal(await long.complete(id, "tok_a"), true);
    assert.deepEqual(await long.claim(id, "tok_b"), { state: "done" });
    assert.deepEqual(await long.claim(id, "tok_a"), { state: "done" });
    assert.equal(await long.release(id, "tok_a"), false, "a done id is not released");
    assert.equal(await long.complete(id, "tok_b"), false, "nor completed again");
    assert.deepEqual(await long.claim(id, "tok_c"), { state: "done" });
  });

  await t.test(`${label}: release frees the id for the next copy; a wrong token cannot release or complete`, async () => {
    const id = freshId(label);
    assert.deepEqual(await long.claim(id, "tok_a"), { state: "claimed" });
    assert.equal(await long.release(id, "tok_x"), false);
    assert.equal(await long.complete(id, "tok_x"), false);
    assert.equal((await long.claim(id, "tok_b")).state, "busy", "the wrong token changed nothing");
    assert.equal(await long.release(id, "tok_a"), true);
    assert.deepEqual(await long.claim(id, "tok_b"), { state: "claimed" });
    assert.equal(await long.release(id, "tok_a"), false, "the old token no longer holds it");
    assert.equal(await long.complete(id, "tok_b"), true);
    assert.deepEqual(await long.claim(id, "tok_c"), { state: "done" });
  });

  await t.test(`${label}: ids are independent`, async () => {
    const a = freshId(label);
    const b = freshId(label);
    assert.deepEqual(await long.claim(a, "tok_a"), { state: "claimed" });
    assert.deepEqual(await long.claim(b, "tok_a"), { state: "claimed" });
    assert.equal(await long.complete(a, "tok_a"), true);
    assert.equal((await long.claim(b, "tok_b")).state, "busy");
  });

  await t.test(`${label}: twenty copies claiming at once: exactly one holds the id`, { skip: !atomic && "best effort: no compare-and-set" }, async () => {
    const id = freshId(label);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => long.claim(id, `tok_${i}`)));
    assert.equal(results.filter((r) => r.state === "claimed").length, 1, JSON.stringify(results));
    assert.ok(results.every((r) => r.state === "claimed" || r.state === "busy"), JSON.stringify(results));
  });

  await t.test(`${label}: an expired lease is taken over, and the stale holder can neither complete nor release`, async () => {
    const id = freshId(label);
    assert.deepEqual(await short.claim(id, "tok_a"), { state: "claimed" });
    await sleep(SHORT.leaseMs + 300);
    assert.deepEqual(await short.claim(id, "tok_b"), { state: "claimed" }, "the lease ran out: the next copy takes it");
    assert.equal(await short.complete(id, "tok_a"), false, "the stale holder cannot mark it done");
    assert.equal(await short.release(id, "tok_a"), false, "nor release the new holder's claim");
    assert.equal((await short.claim(id, "tok_c")).state, "busy");
    assert.equal(await short.complete(id, "tok_b"), true);
    assert.deepEqual(await short.claim(id, "tok_c"), { state: "done" });
  });

  await t.test(`${label}: renew extends only the holder's claim; not renewed, it expires after one lease`, async () => {
    const id = freshId(label);
    assert.equal(short.leaseMs, SHORT.leaseMs, "the store says its lease (the renewal period)");
    assert.deepEqual(await short.claim(id, "tok_a"), { state: "claimed" });
    await sleep(SHORT.leaseMs * 0.6);
    assert.equal(await short.renew(id, "tok_a"), true);
    assert.equal(await short.renew(id, "tok_b"), false, "not tok_b's claim");
    await sleep(SHORT.leaseMs * 0.6); // past the first lease's end
    assert.equal((await short.claim(id, "tok_b")).state, "busy", "the renewed claim holds");
    await sleep(SHORT.leaseMs + 300);
    assert.deepEqual(await short.claim(id, "tok_b"), { state: "claimed" }, "not renewed: taken over");
    assert.equal(await short.renew(id, "tok_a"), false, "tok_a lost it to tok_b");
    assert.equal(await short.complete(id, "tok_b"), true);
    assert.equal(await short.renew(id, "tok_b"), false, "a done id is no claim");
    assert.equal(await short.renew(freshId(label), "tok_a"), false, "never claimed");
  });

  await t.test(`${label}: a done id is forgotten after keepMs`, async () => {
    const id = freshId(label);
    assert.deepEqual(await short.claim(id, "tok_a"), { state: "claimed" });
    assert.equal(await short.complete(id, "tok_a"), true);
    assert.deepEqual(await short.claim(id, "tok_b"), { state: "done" });
    await sleep(SHORT.keepMs + 300);
    assert.deepEqual(await short.claim(id, "tok_b"), { state: "claimed" }, "kept keepMs, then claimable again");
  });
}
