// End to end, every part for real: the sender (`postwire serve`, SQLite) delivers to the
// edge Worker (worker-build output in workerd via Miniflare, KV de-duplication), which
// forwards to a Node origin that verifies with the `postwire` npm package.
//
// The story: events about six posts on two accounts are published through the ingest API
// in four batches. The origin works, then fails (503) for a while, then is slow while the
// sender is killed with SIGKILL in the middle of forwards, then works again after the
// sender restarts on the same database. Checked at the end:
//   - every event reached the origin, and none twice (retries and the restart's repeats
//     are absorbed: the origin refuses while failing, the Worker answers duplicates);
//   - per post and per account, the origin saw events in the order they were published;
//   - the deliveries API lists every delivery as delivered, with the failed attempts;
//   - no secret appears in the sender's log.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { call, createToken, freePort, sleep, startOrigin, startSender, startWorker } from "./support.mjs";

const WS = "ws_e2e";
const INGEST = `ingest_${crypto.randomBytes(16).toString("hex")}`;
const ORIGIN_SECRET = `whsec_${crypto.randomBytes(32).toString("base64")}`;
const dir = mkdtempSync(path.join(os.tmpdir(), "postwire-e2e-"));
const db = path.join(dir, "postwire.db");
const logFile = path.join(dir, "serve.log");
const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
  if (!process.env.POSTWIRE_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
});

const log = (...a) => console.log(`[e2e +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const t0 = Date.now();

/** Polls `check` until it returns a truthy value, or fails with `what`. */
async function until(what, check, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const accounts = {
  acc_a: { id: "acc_a", name: "Northwind on LinkedIn", providerIdentifier: "linkedin" },
  acc_b: { id: "acc_b", name: "@northwind", providerIdentifier: "x" },
};
const postAccount = { p1: "acc_a", p2: "acc_a", p3: "acc_b", p4: "acc_b", p5: "acc_a", p6: "acc_b" };
const STATE = { scheduled: "QUEUE", publishing: "PUBLISHING", published: "PUBLISHED", failed: "ERROR" };

function postChange(postId, change) {
  const post = {
    id: postId,
    externalId: `ext-${postId}`,
    group: "grp_launch",
    state: STATE[change],
    publishDate: "2026-12-01T09:00:00.000Z",
    integration: accounts[postAccount[postId]],
    content: "launch text that must never reach a webhook",
  };
  const c = { kind: "post", workspaceId: WS, change, post };
  if (change === "published") Object.assign(post, { releaseURL: `https://social.example/${postId}`, releaseId: `rel_${postId}` });
  if (change === "failed") c.error = { code: "provider_error", message: "provider down", retryable: true };
  return c;
}
const accountChange = (acc, change) => ({
  kind: "account",
  workspaceId: WS,
  change,
  integration: accounts[acc],
  ...(change === "disconnected" ? { reason: "reconnect_required" } : {}),
});

test("sender → Worker (KV) → origin: everything once, in order, through failures and a SIGKILL", async () => {
  // ---- set up: token, sender, subscription, origin, Worker
  const token = createToken(db, WS);
  let sender = await startSender({ db, ingestToken: INGEST, logFile });
  cleanup.push(() => sender.stop());
  const workerPort = await freePort();
  const workerUrl = `http://127.0.0.1:${workerPort}/`;
  const created = await call(sender.base, "POST", `/public/v1/workspaces/${WS}/webhooks`, token, { name: "edge verifier", url: workerUrl });
  assert.equal(created.status, 201, created.text);
  const { id: subscriptionId, secret } = created.json;
  assert.match(secret, /^whsec_/);
  for (const a of Object.values(accounts)) {
    const r = await call(sender.base, "PUT", `/internal/v1/workspaces/${WS}/integrations/${a.id}`, INGEST, { name: a.name, providerIdentifier: a.providerIdentifier });
    assert.equal(r.status, 200, r.text);
  }
  const origin = await startOrigin({ originSecret: ORIGIN_SECRET, subscriptionSecret: secret });
  cleanup.push(() => origin.close());
  const worker = await startWorker({ port: workerPort, webhookSecret: secret, originUrl: origin.url, originSecret: ORIGIN_SECRET });
  cleanup.push(() => worker.dispose());
  assert.equal(worker.url, workerUrl);
  log(`sender ${sender.base}, Worker ${worker.url}, origin ${origin.url}`);

  // What was published, in order, per ordering key (post, or account for account events).
  const published = []; // { id, type, key }
  async function publish(changes) {
    const r = await call(sender.base, "POST", "/internal/v1/events", INGEST, { changes });
    assert.equal(r.status, 200, r.text);
    const ids = r.json.results.map((x, i) => {
      assert.equal(x.deliveries, 1, `one delivery for change ${i}: ${JSON.stringify(x)}`);
      const c = changes[i];
      const key = c.kind === "post" ? `post:${c.post.id}` : `account:${c.integration.id}`;
      const type = c.kind === "post" ? `post.${c.change === "publishing" ? "publishing" : c.change}` : `integration.${c.change}`;
      published.push({ id: x.eventId, type, key });
      return x.eventId;
    });
    return ids;
  }
  const acceptedIds = () => new Set(origin.accepted.map((a) => a.id));

  // ---- 1. healthy
  const batch1 = await publish([...["p1", "p2", "p3", "p4"].map((p) => postChange(p, "scheduled")), accountChange("acc_b", "disconnected")]);
  await until("batch 1 at the origin", () => batch1.every((id) => acceptedIds().has(id)), 20_000);
  log("batch 1 delivered");

  // ---- 2. the origin fails: first attempts are refused, later events wait behind them
  origin.mode = "fail";
  const batch2 = await publish([...["p1", "p2", "p3", "p4"].map((p) => postChange(p, "publishing")), accountChange("acc_b", "reconnected")]);
  await until("batch 2 refused by the failing origin", () => batch2.every((id) => origin.refused.some((r) => r.id === id)), 20_000);
  const batch3 = await publish([postChange("p1", "published"), postChange("p2", "published"), postChange("p3", "failed"), postChange("p4", "published")]);
  await sleep(1000);
  assert.equal(batch3.some((id) => origin.received.includes(id)), false, "later events about a post wait for the earlier one");
  log("batch 2 refused by the origin; batch 3 waiting behind it");

  // ---- 3. the origin is slow; SIGKILL the sender while the Worker is forwarding
  origin.mode = "slow";
  const batch4 = await publish([postChange("p5", "scheduled"), postChange("p6", "scheduled")]);
  await until("batch 4 in flight at the origin", () => batch4.every((id) => origin.received.includes(id)), 20_000);
  const killed = await sender.kill();
  assert.equal(killed.signal, "SIGKILL");
  log("sender killed with SIGKILL while batch 4 was being forwarded");
  await sleep(origin.slowMs + 500);
  origin.mode = "ok";

  // ---- 4. restart on the same database; everything must get through
  sender = await startSender({ db, ingestToken: INGEST, logFile });
  log(`sender restarted: ${sender.base}`);
  const all = published.map((p) => p.id);
  await until("every event at the origin", () => all.every((id) => acceptedIds().has(id)), 150_000);
  const deliveries = await until(
    "every delivery marked delivered",
    async () => {
      const r = await call(sender.base, "GET", `/public/v1/workspaces/${WS}/webhooks/${subscriptionId}/deliveries?limit=100`, token);
      assert.equal(r.status, 200, r.text);
      return r.json.data.length === all.length && r.json.data.every((d) => d.state === "delivered") ? r.json.data : null;
    },
    60_000,
  );
  log(`all ${all.length} events delivered`);

  // ---- checks
  // Every event reached the origin, exactly once.
  for (const id of all) assert.equal(origin.accepted.filter((a) => a.id === id).length, 1, `event ${id} accepted once`);
  assert.equal(origin.accepted.length, all.length, "nothing else was accepted");
  assert.deepEqual(origin.refused.filter((r) => r.status !== 503), [], "every request the origin saw verified");

  // Per post and per account, in publish order.
  const keys = [...new Set(published.map((p) => p.key))];
  for (const key of keys) {
    const sent = published.filter((p) => p.key === key).map((p) => p.type);
    const got = origin.accepted.filter((a) => a.key === key).map((a) => a.type);
    assert.deepEqual(got, sent, `order for ${key}`);
  }

  // The deliveries API shows the attempts: batch 2 failed first (the Worker's 502 for the
  // origin's 503), then succeeded on a retry.
  const byEvent = new Map(deliveries.map((d) => [d.eventId, d]));
  for (const id of batch2) {
    const d = byEvent.get(id);
    assert.ok(d.attempts.length >= 2, `${id}: ${JSON.stringify(d.attempts)}`);
    const oldest = d.attempts.at(-1);
    assert.equal(oldest.success, false);
    assert.equal(oldest.responseStatus, 502, JSON.stringify(oldest));
    assert.equal(d.attempts[0].success, true);
  }
  for (const id of batch1) assert.equal(byEvent.get(id).attempts.length, 1);
  // Batch 4 was in flight when the sender died, so the sender never recorded those
  // attempts and sent the events again after the restart. The Worker had finished the
  // forwards and recorded them in KV, so it answered the repeats `200 duplicate` (or
  // `409 delivery_in_progress` first, while still forwarding) and never forwarded them
  // again: the origin saw each once.
  for (const id of batch4) {
    const d = byEvent.get(id);
    const summary = d.attempts.map((a) => `${a.responseStatus ?? a.error} ${a.responseBody ?? ""}`).reverse();
    log(`batch 4 ${id} attempts after the kill: ${summary.join(" → ")}`);
    assert.match(d.attempts[0].responseBody ?? "", /"code":\s*"duplicate"/, `the Worker de-duplicated ${id}`);
    assert.equal(origin.received.filter((r) => r === id).length, 1, `the origin got ${id} once`);
  }
  const attempts = deliveries.reduce((n, d) => n + d.attempts.length, 0);
  log(`${all.length} events, ${attempts} attempts, ${origin.received.length} requests at the origin, ${origin.accepted.length} accepted`);
  assert.ok(attempts > all.length, "there were retries");

  // The Worker remembers every delivered id.
  const kv = await worker.kvKeys();
  for (const id of all) assert.ok(kv.some((e) => e.key.includes(id) && /delivered/.test(e.value ?? "")), `KV marks ${id} delivered`);

  // The sender's log never shows a secret or token.
  await sender.stop();
  const text = readFileSync(logFile, "utf8");
  for (const s of [secret, secret.slice(6, 26), ORIGIN_SECRET, token, INGEST]) assert.equal(text.includes(s), false, "a secret reached the log");
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
});
