// Inbox mode (DELIVERY_MODE = "inbox", wrangler.inbox.toml: its [vars], the INBOX binding and
// the SQLite-backed InboxObject class) in workerd through Miniflare, against a real origin
// on loopback that counts what it receives: the outage, the paced burst, simultaneous
// copies, a restart mid-request on persisted storage, the horizon and replay, pause and
// resume, the admin API's authentication and input checks, and a 1 MiB body; the rate cap
// across alarm runs, what a poll reads with a backlog (query plans and rows read), erasure,
// and a dead delivery revived by a new copy from the sender.
//
// POSTWIRE_INBOX_BURST overrides the burst's size (default 5000 deliveries over 200 keys).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { startWorker, delivery, newSecret, newId, assertErrorBody, sleep } from "../support/worker.mjs";
import { postEvent } from "../support/events.mjs";

const FILE = "wrangler.inbox.toml";
const BURST = Number(process.env.POSTWIRE_INBOX_BURST ?? 5000);
const BURST_KEYS = 200;
const secret = newSecret();
const TOKEN = "test-admin-token-0123456789abcdef";

/**
 * An origin that records each request (id, arrival, body) and the most requests it held at
 * once; `answer(record)` returns {status, delayMs, headers} (default 200 at once).
 */
async function startCountingOrigin() {
  const received = [];
  let current = 0;
  let maxConcurrent = 0;
  let answer = () => ({ status: 200 });
  const server = http.createServer((req, res) => {
    current += 1;
    maxConcurrent = Math.max(maxConcurrent, current);
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const record = { id: req.headers["webhook-id"], headers: { ...req.headers }, body: Buffer.concat(chunks), at: Date.now() };
      received.push(record);
      const plan = answer(record) ?? { status: 200 };
      record.status = plan.status;
      const reply = () => {
        res.writeHead(plan.status, { "content-type": "text/plain", ...(plan.headers ?? {}) });
        res.end(`origin says ${plan.status}`);
      };
      if (plan.delayMs) setTimeout(reply, plan.delayMs);
      else reply();
    });
    // Once per request: when the answer is sent or the connection dropped.
    res.on("close", () => {
      current -= 1;
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks`,
    received,
    maxConcurrent: () => maxConcurrent,
    answerWith: (fn) => {
      answer = fn;
    },
    /** Arrivals the origin answered 2xx. */
    accepted: () => received.filter((r) => r.status >= 200 && r.status < 300),
    /** The most arrivals within any `ms` window. */
    maxWithin(ms) {
      const times = received.map((r) => r.at).sort((a, b) => a - b);
      let best = 0;
      for (let i = 0, j = 0; i < times.length; i++) {
        while (times[i] - times[j] >= ms) j++;
        best = Math.max(best, i - j + 1);
      }
      return best;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

function send(worker, d) {
  return worker.send({ headers: d.headers, body: d.body });
}

/** Sends every delivery, `parallel` at a time, in order of starting; their answers. */
async function sendAll(worker, deliveries, parallel = 32) {
  const answers = new Array(deliveries.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < deliveries.length) {
        const i = next++;
        answers[i] = await send(worker, deliveries[i]);
      }
    }),
  );
  return answers;
}

/** An admin request over loopback. */
async function call(worker, pathAndQuery, { method = "GET", token = TOKEN } = {}) {
  const res = await fetch(new URL(pathAndQuery, worker.url()), {
    method,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

/** Asserts that, per key, the origin accepted the ids in the order they were accepted. */
function assertKeyOrder(origin, deliveries, keyOf) {
  const expected = new Map();
  for (const d of deliveries) {
    const k = keyOf(d);
    if (!expected.has(k)) expected.set(k, []);
    expected.get(k).push(d.id);
  }
  const seen = new Map();
  for (const r of origin.accepted()) {
    const k = keyOf({ id: r.id });
    if (!seen.has(k)) seen.set(k, []);
    seen.get(k).push(r.id);
  }
  for (const [k, ids] of expected) assert.deepEqual(seen.get(k), ids, `order of key ${k}`);
}

function makeDeliveries(n, keys, prefix) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const id = newId(`${prefix}_k${i % keys}`);
    out.push({ ...delivery({ secrets: [secret], id, body: postEvent(id, `p_${prefix}_${i % keys}`) }), key: i % keys });
  }
  return out;
}
const keyOfId = (d) => /_k(\d+)_/.exec(d.id)?.[1];

const base = (origin, extra = {}) => ({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ADMIN_TOKEN: TOKEN, ...extra });

describe("inbox: accept, then deliver through an outage, in order", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("the origin down for its first 10 requests: each delivery reaches it accepted exactly once, per key in acceptance order; the sender saw 202", async () => {
    let failures = 10;
    origin.answerWith(() => (failures-- > 0 ? { status: 500 } : { status: 200 }));
    const ds = makeDeliveries(30, 5, "outage");
    for (const d of ds) {
      const res = await send(worker, d);
      assert.equal(res.status, 202, res.text);
      assert.equal(res.json.code, "accepted");
    }
    await until(() => origin.accepted().length >= ds.length, 30_000, "every delivery accepted by the origin");
    await sleep(300);
    const counts = new Map();
    for (const r of origin.accepted()) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    assert.deepEqual([...counts.values()].filter((n) => n !== 1), [], "each accepted exactly once");
    assert.equal(counts.size, ds.length);
    assert.ok(origin.received.length >= ds.length + 10, "the failed attempts happened");
    assertKeyOrder(origin, ds, keyOfId);
    const got = (await call(worker, "/_postwire/counts")).json;
    assert.deepEqual(got, { counts: { pending: 0, retrying: 0, delivered: 30, dead: 0, erased: 0 }, paused: false });
  });

  it("20 simultaneous copies of one id: stored once (one 202, the rest 200 duplicate), delivered once", async () => {
    const before = origin.received.length;
    const id = newId("copies");
    const d = delivery({ secrets: [secret], id, body: postEvent(id, "p_copies") });
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(worker, d)));
    const codes = answers.map((a) => a.json?.code).sort();
    assert.deepEqual(codes, ["accepted", ...Array(19).fill("duplicate")]);
    await until(() => origin.received.length > before, 10_000, "the delivery");
    await sleep(500);
    assert.equal(origin.received.filter((r) => r.id === id).length, 1);
  });

  it("a 1 MiB body (MAX_BODY_BYTES) round-trips byte for byte, with the origin signature", async () => {
    const id = newId("big");
    const body = postEvent(id, "p_big", 1024 * 1024);
    assert.equal(Buffer.byteLength(body), 1024 * 1024);
    const d = delivery({ secrets: [secret], id, body });
    assert.equal((await send(worker, d)).status, 202);
    await until(() => origin.accepted().some((r) => r.id === id), 10_000, "the big delivery");
    const got = origin.accepted().find((r) => r.id === id);
    assert.ok(got.body.equals(Buffer.from(body)), "body intact");
    assert.doesNotThrow(() => new Webhook(secret).verify(got.body.toString(), got.headers));
    const one = (await call(worker, `/_postwire/deliveries/${encodeURIComponent(id)}`)).json;
    assert.equal(one.body_bytes, 1024 * 1024);
    assert.equal(one.state, "delivered");
    const over = delivery({ secrets: [secret], id: newId("over"), body: postEvent("x", "p", 1024 * 1024 + 1) });
    assertErrorBody(assert, await send(worker, over), 413, "payload_too_large");
  });
});

describe(`inbox: a burst of ${BURST} deliveries over ${BURST_KEYS} keys, ORIGIN_MAX_IN_FLIGHT = 4, ORIGIN_MAX_PER_SECOND = 200`, () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    // Mostly quick, every 10th slow: slow answers pile up, so all four slots get taken.
    let n = 0;
    origin.answerWith(() => ({ status: 200, delayMs: ++n % 10 === 0 ? 250 : 5 + Math.floor(Math.random() * 20) }));
    worker = await startWorker(base(origin, { ORIGIN_MAX_IN_FLIGHT: "4", ORIGIN_MAX_PER_SECOND: "200" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("accepted while paused, then resumed: the origin never sees more than 4 at once nor 200 in any second; nothing lost; per key in order", async (t) => {
    // Accepted first (the backlog of an outage or a deploy), so the drain runs at the caps.
    await call(worker, "/_postwire/pause", { method: "POST" });
    const ds = makeDeliveries(BURST, BURST_KEYS, "burst");
    const started = Date.now();
    const answers = await sendAll(worker, ds);
    const acceptedIn = Date.now() - started;
    assert.deepEqual(answers.filter((a) => a.status !== 202).map((a) => a.text), []);
    const resumed = Date.now();
    await call(worker, "/_postwire/resume", { method: "POST" });
    await until(() => origin.accepted().length >= BURST, 120_000, "every delivery");
    const drainMs = Date.now() - resumed;
    await sleep(300);
    t.diagnostic(
      `accepted ${BURST} in ${acceptedIn} ms (${Math.round((BURST * 1000) / acceptedIn)}/s); delivered all in ${drainMs} ms ` +
        `(${Math.round((BURST * 1000) / drainMs)}/s); origin max in flight ${origin.maxConcurrent()}, ` +
        `max in any 1000 ms ${origin.maxWithin(1000)}`,
    );
    assert.ok(origin.maxConcurrent() <= 4, `max in flight ${origin.maxConcurrent()}`);
    assert.ok(origin.maxWithin(1000) <= 200, `max per second ${origin.maxWithin(1000)}`);
    assert.equal(origin.received.length, BURST, "each exactly once");
    assert.equal(new Set(origin.received.map((r) => r.id)).size, BURST);
    assertKeyOrder(origin, ds, keyOfId);
  });
});

describe("inbox: ORIGIN_MAX_PER_SECOND = 20 binds", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin, { ORIGIN_MAX_PER_SECOND: "20", ORDERING: "none" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("100 held, then resumed: never more than 20 within any 1000 ms, so it takes at least 4 s", async (t) => {
    await call(worker, "/_postwire/pause", { method: "POST" });
    const ds = makeDeliveries(100, 100, "rate");
    assert.ok((await sendAll(worker, ds, 8)).every((a) => a.status === 202));
    const resumed = Date.now();
    await call(worker, "/_postwire/resume", { method: "POST" });
    await until(() => origin.accepted().length >= 100, 20_000, "every delivery");
    const took = Date.now() - resumed;
    t.diagnostic(`100 in ${took} ms; max in any 1000 ms ${origin.maxWithin(1000)}`);
    assert.ok(origin.maxWithin(1000) <= 20, `max per second ${origin.maxWithin(1000)}`);
    assert.ok(took >= 4000, `took ${took} ms`);
  });
});

describe("inbox: restart mid-request on persisted storage", () => {
  let origin, worker, dir;
  before(async () => {
    origin = await startCountingOrigin();
    dir = mkdtempSync(path.join(tmpdir(), "postwire-inbox-"));
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("Miniflare disposed with deliveries pending and one mid-request, started again: nothing lost, only that one sent twice", async () => {
    const bindings = base(origin, { ORIGIN_MAX_IN_FLIGHT: "1", ORDERING: "none" });
    origin.answerWith(() => ({ status: 200, delayMs: 10_000 }));
    worker = await startWorker(bindings, { file: FILE, persist: dir });
    const ds = makeDeliveries(10, 10, "restart");
    for (const d of ds) assert.equal((await send(worker, d)).status, 202);
    await until(() => origin.received.length === 1, 10_000, "the first request");
    const mid = origin.received[0].id;
    await worker.dispose();
    worker = undefined;
    origin.answerWith(() => ({ status: 200 }));
    worker = await startWorker(bindings, { file: FILE, persist: dir });
    // No new request: the object's alarm resumes delivery by itself.
    await until(() => new Set(origin.accepted().map((r) => r.id)).size === ds.length, 30_000, "every delivery after the restart");
    await sleep(500);
    for (const d of ds) {
      const n = origin.received.filter((r) => r.id === d.id).length;
      if (d.id === mid) assert.ok(n >= 1 && n <= 2, `the one in flight: ${n}`);
      else assert.equal(n, 1, d.id);
    }
    const counts = (await call(worker, "/_postwire/counts")).json.counts;
    assert.equal(counts.delivered, ds.length);
  });
});

describe("inbox: the horizon, dead deliveries and replay", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin, { ORIGIN_RETRY_HORIZON_SECS: "2" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("refused until the horizon: dead, listed with its answers, frees its key; replayed, delivered", async () => {
    let broken = true;
    const ds = makeDeliveries(2, 1, "dead"); // one key: the second waits behind the first
    const [doomed, next] = ds;
    origin.answerWith((r) => (broken && r.id === doomed.id ? { status: 503, headers: { "retry-after": "1" } } : { status: 200 }));
    for (const d of ds) assert.equal((await send(worker, d)).status, 202);
    await sleep(1000);
    assert.equal(origin.received.filter((r) => r.id === next.id).length, 0, "the next one waits while the first retries");
    await until(async () => (await call(worker, "/_postwire/counts")).json.counts.dead === 1, 15_000, "the dead one");
    await until(() => origin.accepted().some((r) => r.id === next.id), 10_000, "the next one of its key");
    const list = (await call(worker, "/_postwire/deliveries?state=dead")).json;
    assert.deepEqual(list.deliveries.map((x) => x.id), [doomed.id]);
    assert.equal(list.next_cursor, null);
    const one = (await call(worker, `/_postwire/deliveries/${encodeURIComponent(doomed.id)}`)).json;
    assert.equal(one.state, "dead");
    assert.equal(one.last_status, 503);
    assert.ok(one.attempts >= 2, `attempts ${one.attempts}`);
    assert.equal(one.attempt_log.length, one.attempts);
    assert.equal(one.attempt_log[0].answer, "origin says 503");
    assert.ok(!JSON.stringify(one).includes(secret.slice(6)), "no secret in answers");
    assert.equal(one.body, undefined, "no body in answers");

    broken = false;
    const since = Math.floor(Date.now() / 1000) - 60;
    const replay = await call(worker, `/_postwire/replay-dead?since=${since}`, { method: "POST" });
    assert.deepEqual(replay.json, { replayed: 1 });
    await until(() => origin.accepted().some((r) => r.id === doomed.id), 10_000, "the replayed one");
    // The origin answers before the inbox records the answer: wait for the record.
    const state = async () => (await call(worker, `/_postwire/deliveries/${encodeURIComponent(doomed.id)}`)).json.state;
    await until(async () => (await state()) === "delivered", 10_000, "the replayed one recorded as delivered");
    // A delivered one replays by id; a pending one is refused.
    const again = await call(worker, `/_postwire/deliveries/${encodeURIComponent(doomed.id)}/replay`, { method: "POST" });
    assert.deepEqual(again.json, { replayed: 1 });
    await until(() => origin.accepted().filter((r) => r.id === doomed.id).length === 2, 10_000, "the second replay");
  });
});

describe("inbox: pause and resume", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("paused: 100 accepted and held; resumed: all delivered, per key in acceptance order", async () => {
    assert.deepEqual((await call(worker, "/_postwire/pause", { method: "POST" })).json, { paused: true });
    const ds = makeDeliveries(100, 4, "pause");
    const answers = await sendAll(worker, ds, 1);
    assert.ok(answers.every((a) => a.status === 202));
    await sleep(1000);
    assert.equal(origin.received.length, 0, "nothing delivered while paused");
    assert.deepEqual((await call(worker, "/_postwire/counts")).json, {
      counts: { pending: 100, retrying: 0, delivered: 0, dead: 0, erased: 0 },
      paused: true,
    });
    const page = (await call(worker, "/_postwire/deliveries?state=pending&limit=60")).json;
    assert.equal(page.deliveries.length, 60);
    const rest = (await call(worker, `/_postwire/deliveries?state=pending&limit=60&cursor=${page.next_cursor}`)).json;
    assert.equal(rest.deliveries.length, 40);
    assert.equal(rest.next_cursor, null);
    assert.deepEqual([...page.deliveries, ...rest.deliveries].map((x) => x.id), ds.map((d) => d.id), "listed in acceptance order");
    assert.deepEqual((await call(worker, "/_postwire/resume", { method: "POST" })).json, { paused: false });
    await until(() => origin.accepted().length >= 100, 20_000, "every delivery after resume");
    assert.equal(origin.received.length, 100);
    assertKeyOrder(origin, ds, keyOfId);
  });
});

describe("inbox: the admin API's door", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("no token, a wrong token, a token of another length: 404 on every path; the right one: 200", async () => {
    const paths = [
      ["GET", "/_postwire/counts"],
      ["GET", "/_postwire/deliveries?state=dead"],
      ["GET", "/_postwire/deliveries/msg_1"],
      ["POST", "/_postwire/pause"],
      ["POST", "/_postwire/nope"],
    ];
    const wrongSameLength = TOKEN.slice(0, -1) + (TOKEN.endsWith("f") ? "e" : "f");
    for (const [method, p] of paths) {
      for (const token of [null, wrongSameLength, TOKEN + "0", TOKEN.slice(1), ""]) {
        assertErrorBody(assert, await call(worker, p, { method, token }), 404, "not_found");
      }
    }
    assert.equal((await call(worker, "/_postwire/counts")).status, 200);
  });

  it("malformed cursor, state and ids: 400 invalid_request; an unknown id: 404", async () => {
    for (const p of [
      "/_postwire/deliveries?state=dead&cursor=nope",
      "/_postwire/deliveries?state=dead&cursor=s12x",
      "/_postwire/deliveries?state=lost",
      "/_postwire/deliveries?state=dead&limit=0",
      "/_postwire/deliveries/bad%20id",
      `/_postwire/deliveries/${"a".repeat(300)}`,
    ]) {
      assertErrorBody(assert, await call(worker, p), 400, "invalid_request");
    }
    assertErrorBody(assert, await call(worker, "/_postwire/replay-dead?since=yesterday", { method: "POST" }), 400, "invalid_request");
    assertErrorBody(assert, await call(worker, "/_postwire/deliveries/msg_unknown"), 404, "not_found");
  });

  it("without ADMIN_TOKEN configured, every admin path is 404 whatever is sent", async () => {
    await worker.reconfigure(base(origin, { ADMIN_TOKEN: undefined }));
    for (const token of [null, TOKEN, ""]) {
      assertErrorBody(assert, await call(worker, "/_postwire/counts", { token }), 404, "not_found");
    }
  });

  it("a knob out of range fails every request naming nothing secret: 500 worker_misconfigured", async () => {
    await worker.reconfigure(base(origin, { ORIGIN_MAX_IN_FLIGHT: "0" }));
    const id = newId("conf");
    assertErrorBody(assert, await send(worker, delivery({ secrets: [secret], id, body: postEvent(id, "p") })), 500, "worker_misconfigured");
    await worker.reconfigure(base(origin), { store: false });
    assertErrorBody(assert, await send(worker, delivery({ secrets: [secret], id, body: postEvent(id, "p") })), 500, "worker_misconfigured");
  });
});

describe("inbox: ORIGIN_MAX_PER_SECOND across alarm runs", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin, { ORIGIN_MAX_PER_SECOND: "20", ORDERING: "none" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("15 sent, the run ends, 20 more accepted at once: a new run counts the 15, so never more than 20 within any 1000 ms", async (t) => {
    await call(worker, "/_postwire/pause", { method: "POST" });
    const first = makeDeliveries(15, 15, "runA");
    assert.ok((await sendAll(worker, first, 8)).every((a) => a.status === 202));
    await call(worker, "/_postwire/resume", { method: "POST" });
    await until(() => origin.accepted().length >= 15, 10_000, "the first 15");
    // Their outcomes recorded, nothing due, room left in the window: the run ends here.
    await until(async () => (await call(worker, "/_postwire/counts")).json.counts.delivered === 15, 10_000, "the 15 recorded");
    const second = makeDeliveries(20, 20, "runB");
    assert.ok((await sendAll(worker, second, 20)).every((a) => a.status === 202));
    await until(() => origin.accepted().length >= 35, 20_000, "all 35");
    t.diagnostic(`max in any 1000 ms ${origin.maxWithin(1000)}`);
    assert.ok(origin.maxWithin(1000) <= 20, `max per second across two runs ${origin.maxWithin(1000)}`);
  });

  it("a new instance knows nothing of the starts before it: its first request waits one window (1.2 s)", async () => {
    // A new Miniflare instance: a new object, created by this delivery's accept.
    await worker.dispose();
    worker = await startWorker(base(origin, { ORIGIN_MAX_PER_SECOND: "20", ORDERING: "none" }), { file: FILE });
    const [d] = makeDeliveries(1, 1, "fresh");
    const sent = Date.now();
    assert.equal((await send(worker, d)).status, 202);
    await until(() => origin.accepted().some((r) => r.id === d.id), 10_000, "the delivery");
    const waited = origin.accepted().find((r) => r.id === d.id).at - sent;
    assert.ok(waited >= 1_100, `the first start came ${waited} ms after the accept`);
  });
});

describe("inbox: a poll reads what is due, not the backlog", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin, { ORIGIN_MAX_IN_FLIGHT: "50" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  const assertIndexed = (poll) => {
    assert.ok(poll.plan.some((line) => line.includes("open_by_due")), `${poll.name} uses open_by_due: ${poll.plan.join(" | ")}`);
    assert.deepEqual(poll.plan.filter((line) => /^SCAN\b/.test(line)), [], `${poll.name}: no full scan`);
    assert.deepEqual(poll.plan.filter((line) => /TEMP B-TREE/.test(line)), [], `${poll.name}: no sort`);
  };

  it("EXPLAIN QUERY PLAN of both polls (the due heads, the next due time): the due index, no scan, no sort", async () => {
    const cost = (await call(worker, "/_postwire/poll-cost")).json;
    assert.deepEqual(cost.polls.map((p) => p.name), ["due_heads", "next_head_due"]);
    for (const poll of cost.polls) assertIndexed(poll);
  });

  it("20 retrying heads with 180 waiting behind them: a poll reads a handful of rows, not 200", async (t) => {
    // Every attempt refused with retry-after of an hour: each head retries in an hour.
    origin.answerWith(() => ({ status: 503, headers: { "retry-after": "3600" } }));
    const ds = makeDeliveries(200, 20, "backlog");
    assert.ok((await sendAll(worker, ds, 16)).every((a) => a.status === 202));
    await until(async () => (await call(worker, "/_postwire/counts")).json.counts.retrying === 20, 20_000, "20 retrying heads");
    const cost = (await call(worker, "/_postwire/poll-cost?repeat=3")).json;
    t.diagnostic(JSON.stringify(cost.polls.map(({ name, rows_read, rows_returned }) => ({ name, rows_read, rows_returned }))));
    const [due, next] = cost.polls;
    assert.equal(due.rows_returned, 0, "nothing is due");
    assert.ok(due.rows_read <= 5, `due heads read ${due.rows_read} rows`);
    assert.equal(next.rows_returned, 1);
    assert.ok(next.rows_read <= 5, `next due read ${next.rows_read} rows`);
    for (const poll of cost.polls) assertIndexed(poll);
    // Waiting ones show no time of their own; a head shows its retry time.
    const pending = (await call(worker, "/_postwire/deliveries?state=pending&limit=1")).json.deliveries[0];
    assert.equal(pending.next_attempt_at_ms, null);
    const retrying = (await call(worker, "/_postwire/deliveries?state=retrying&limit=1")).json.deliveries[0];
    assert.ok(retrying.next_attempt_at_ms > Date.now() + 3_000_000, JSON.stringify(retrying));
  });
});

/** A signed postwire event about `post` of `account`, or (no post) an account event. */
function subjectDelivery(prefix, { post, account }) {
  const id = newId(prefix);
  const event = post
    ? JSON.parse(postEvent(id, post))
    : {
        id,
        type: "integration.disconnected",
        createdAt: "2026-11-22T09:00:00.000Z",
        workspaceId: "ws1",
        data: { integration: { id: account, name: "A", providerIdentifier: "x" }, reason: "reconnect_required" },
      };
  if (post) event.data.post.integration.id = account;
  return delivery({ secrets: [secret], id, body: JSON.stringify(event) });
}

describe("inbox: erasure of a delivery's body, by id, post and account", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  const show = async (id) => (await call(worker, `/_postwire/deliveries/${encodeURIComponent(id)}`)).json;
  const erase = (p) => call(worker, p, { method: "POST" });

  it("held deliveries erased by id, post and account are cancelled (never sent), keep their id and answer copies as duplicates; the rest are delivered", async () => {
    await call(worker, "/_postwire/pause", { method: "POST" });
    const a1 = subjectDelivery("eraseA", { post: "pA", account: "accX" });
    const a2 = subjectDelivery("eraseA", { post: "pA", account: "accX" });
    const b1 = subjectDelivery("eraseB", { post: "pB", account: "accX" });
    const c1 = subjectDelivery("eraseC", { post: "pC", account: "accY" });
    const dx = subjectDelivery("eraseD", { account: "accX" });
    const keep = subjectDelivery("keep", { post: "pK", account: "accZ" });
    const all = [a1, a2, b1, c1, dx, keep];
    for (const d of all) assert.equal((await send(worker, d)).status, 202);

    assert.deepEqual((await erase(`/_postwire/deliveries/${encodeURIComponent(c1.id)}/erase`)).json, { erased: 1, cancelled: 1 });
    assert.deepEqual((await erase("/_postwire/erase?post=pA")).json, { erased: 2, cancelled: 2 });
    // The account's own event and its posts' events (a1 and a2 are erased already).
    assert.deepEqual((await erase("/_postwire/erase?account=accX")).json, { erased: 2, cancelled: 2 });
    assert.deepEqual((await erase("/_postwire/erase?account=accX")).json, { erased: 0, cancelled: 0 });
    assertErrorBody(assert, await erase("/_postwire/deliveries/msg_unknown/erase"), 404, "not_found");
    assertErrorBody(assert, await erase("/_postwire/erase?post=p1&account=a1"), 400, "invalid_request");

    const one = await show(a1.id);
    assert.equal(one.state, "erased");
    assert.equal(one.body_bytes, 0);
    assert.equal(one.ordering_key, "post:pA");
    assert.equal(one.next_attempt_at_ms, null);
    assert.ok(one.finished_at_ms > 0);
    const counts = (await call(worker, "/_postwire/counts")).json.counts;
    assert.deepEqual(counts, { pending: 1, retrying: 0, delivered: 0, dead: 0, erased: 5 });
    const listed = (await call(worker, "/_postwire/deliveries?state=erased")).json.deliveries.map((d) => d.id);
    assert.deepEqual(listed, [a1, a2, b1, c1, dx].map((d) => d.id), "listed in acceptance order");

    await call(worker, "/_postwire/resume", { method: "POST" });
    await until(() => origin.accepted().some((r) => r.id === keep.id), 10_000, "the one kept");
    await sleep(500);
    assert.deepEqual(origin.received.map((r) => r.id), [keep.id], "no erased delivery reached the origin");
    // A copy of an erased one is a duplicate: not stored, not sent.
    const copy = await send(worker, delivery({ secrets: [secret], id: a1.id, body: a1.body }));
    assert.equal(copy.json.code, "duplicate");
    assertErrorBody(assert, await erase(`/_postwire/deliveries/${encodeURIComponent(a1.id)}/replay`), 404, "not_found");
  });

  it("erasing a retrying head lets the next delivery of its key go at once; a delivered one keeps its attempts", async () => {
    const head = subjectDelivery("eraseHead", { post: "pH", account: "accH" });
    const next = subjectDelivery("eraseNext", { post: "pH", account: "accH" });
    origin.answerWith((r) => (r.id === head.id ? { status: 503, headers: { "retry-after": "3600" } } : { status: 200 }));
    assert.equal((await send(worker, head)).status, 202);
    assert.equal((await send(worker, next)).status, 202);
    await until(async () => (await show(head.id)).state === "retrying", 10_000, "the head retrying");
    await sleep(300);
    assert.ok(!origin.received.some((r) => r.id === next.id), "the next one waits behind the head");
    assert.deepEqual((await erase(`/_postwire/deliveries/${encodeURIComponent(head.id)}/erase`)).json, { erased: 1, cancelled: 1 });
    await until(() => origin.accepted().some((r) => r.id === next.id), 5_000, "the next one after the erasure");
    await until(async () => (await show(next.id)).state === "delivered", 5_000, "the next one recorded");
    assert.deepEqual((await erase("/_postwire/erase?post=pH")).json, { erased: 1, cancelled: 0 });
    const delivered = await show(next.id);
    assert.equal(delivered.state, "erased");
    assert.equal(delivered.body_bytes, 0);
    assert.equal(delivered.attempt_log.length, 1);
    assert.equal(delivered.attempt_log[0].outcome, "accepted");
  });
});

describe("inbox: a new copy of a dead delivery from the sender revives it", () => {
  let origin, worker;
  before(async () => {
    origin = await startCountingOrigin();
    worker = await startWorker(base(origin, { ORIGIN_RETRY_HORIZON_SECS: "4" }), { file: FILE });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  const show = async (id) => (await call(worker, `/_postwire/deliveries/${encodeURIComponent(id)}`)).json;

  it("dead, then resent: 202 and delivered, behind the open delivery of its key accepted before it; a copy of a delivered one stays a duplicate", async () => {
    const first = subjectDelivery("revive", { post: "pR", account: "accR" });
    const later = subjectDelivery("reviveLater", { post: "pR", account: "accR" });
    const refused = new Set([first.id]);
    origin.answerWith((r) => (refused.has(r.id) ? { status: 503, headers: { "retry-after": "1" } } : { status: 200 }));
    assert.equal((await send(worker, first)).status, 202);
    await until(async () => (await show(first.id)).state === "dead", 15_000, "the first one dead");
    // The next of its key is held at the origin for now (retrying).
    refused.add(later.id);
    assert.equal((await send(worker, later)).status, 202);
    await until(async () => (await show(later.id)).state === "retrying", 10_000, "the later one retrying");

    // The sender's operator resends: the same webhook-id and body, a new timestamp and signature.
    const ts = Math.floor(Date.now() / 1000) + 1;
    const resent = delivery({ secrets: [secret], id: first.id, body: first.body, timestamp: ts });
    const answer = await send(worker, resent);
    assert.equal(answer.status, 202, answer.text);
    assert.equal(answer.json.code, "accepted");
    const revived = await show(first.id);
    assert.equal(revived.state, "pending");
    assert.equal(revived.next_attempt_at_ms, null, "it waits behind the later one, accepted before its revival");

    refused.clear();
    await until(() => origin.accepted().some((r) => r.id === first.id), 10_000, "the revived one delivered");
    const order = origin.accepted().map((r) => r.id).filter((id) => id === first.id || id === later.id);
    assert.deepEqual(order, [later.id, first.id], "per key in (re)acceptance order");
    const got = origin.accepted().find((r) => r.id === first.id);
    assert.equal(got.headers["webhook-timestamp"], String(ts), "sent with the new copy's timestamp");
    assert.doesNotThrow(() => new Webhook(secret).verify(got.body.toString(), got.headers));
    await until(async () => (await show(first.id)).state === "delivered", 5_000, "recorded as delivered");
    assert.ok((await show(first.id)).attempt_log.length >= 2, "the earlier attempts are kept");

    const again = await send(worker, delivery({ secrets: [secret], id: first.id, body: first.body }));
    assert.equal(again.json.code, "duplicate");
    await sleep(300);
    assert.equal(origin.accepted().filter((r) => r.id === first.id).length, 1, "delivered once");
  });
});
