// Listen mode (LISTEN_TOKEN set): the built Worker in workerd (Miniflare) with the real
// ListenObject Durable Object and real WebSockets, the real `postwire listen --worker` CLI
// (POSTWIRE_CLI) connected to it over loopback, and a local endpoint on loopback that
// verifies with the standardwebhooks npm package holding only the CLI's local secret.
//
// Forward mode (wrangler.toml, KV) and inbox mode (wrangler.inbox.toml): the listener takes
// the origin's place while LISTEN_TOKEN is set; without a listener the sender gets 503.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import crypto from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import WebSocket from "ws";
import { startWorker, delivery, newSecret, newId, sampleBody, assertErrorBody, sleep } from "../support/worker.mjs";

const CLI = process.env.POSTWIRE_CLI;
const TOKEN = "listen-token-0123456789abcdef";
const ADMIN_TOKEN = "admin-token-0123456789abcdef";
const senderSecret = newSecret();
const localSecret = newSecret();

/**
 * The developer's local endpoint: verifies with `localSecret`, records each request it
 * answered, answers `plan(record)` ({status, hang, delayMs}); a hung request is never
 * answered, a delayed one after `delayMs`.
 */
async function startLocalEndpoint() {
  const wh = new Webhook(localSecret);
  const answered = [];
  const arrived = [];
  let plan = () => ({ status: 204 });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let verified = false;
      try {
        wh.verify(body, req.headers);
        verified = true;
      } catch {}
      const record = { id: req.headers["webhook-id"], headers: { ...req.headers }, body, verified };
      arrived.push(record);
      const p = plan(record) ?? { status: 204 };
      if (p.hang) return; // never answered; the connection drops when the CLI dies
      const status = verified ? p.status : 400;
      const answer = () => {
        res.writeHead(status, { "content-type": "text/plain" });
        res.end("local");
        answered.push({ ...record, status });
      };
      if (p.delayMs) setTimeout(answer, p.delayMs);
      else answer();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks`,
    answered,
    arrived,
    setPlan: (p) => (plan = p),
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

/**
 * `postwire listen --worker … --forward …`; resolves once it printed "connected". The token
 * goes in POSTWIRE_LISTEN_TOKEN, or with `tokenFile` in that file (--token-file) alone.
 */
async function startListener(workerUrl, forward, { token = TOKEN, tokenFile, extra = [], env = {} } = {}) {
  const childEnv = { ...process.env, POSTWIRE_LISTEN_TOKEN: token, POSTWIRE_SECRET: "", ...env };
  const args = ["listen", "--worker", workerUrl, "--forward", forward, "--secret", localSecret, "--json", ...extra];
  if (tokenFile) {
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    delete childEnv.POSTWIRE_LISTEN_TOKEN;
    args.push("--token-file", tokenFile);
  }
  const child = spawn(CLI, args, { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  const lines = [];
  let stderr = "";
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
    let i;
    while ((i = out.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(out.slice(0, i)));
      out = out.slice(i + 1);
    }
  });
  const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
  const connected = new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => {
      stderr += d;
      if (stderr.includes("connected to")) resolve();
    });
    exited.then((e) => reject(new Error(`listener exited ${JSON.stringify(e)}: ${stderr}`)));
  });
  await Promise.race([connected, sleep(15_000).then(() => { throw new Error(`listener did not connect: ${stderr}`); })]);
  return { child, lines, exited, stderr: () => stderr, kill: () => { child.kill("SIGKILL"); return exited; } };
}

/** A WebSocket upgrade request by hand: resolves {status, body} or {status: 101}. */
function upgrade(base, { authorization, path = "/_postwire/listen", websocket = true } = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const headers = websocket
      ? { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": crypto.randomBytes(16).toString("base64") }
      : {};
    if (authorization !== undefined) headers.authorization = authorization;
    const req = http.request(url, { method: "GET", headers });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode, headers: res.headers, body: "" });
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function postwireEvent(id) {
  return sampleBody(id);
}

describe("listen mode, forward (wrangler.toml)", { skip: !CLI && "POSTWIRE_CLI is not set" }, () => {
  let worker, local, origin, originHits = 0;
  const listeners = [];
  before(async () => {
    origin = http.createServer((req, res) => { originHits += 1; res.writeHead(200); res.end(); });
    await new Promise((r) => origin.listen(0, "127.0.0.1", r));
    local = await startLocalEndpoint();
    worker = await startWorker({
      WEBHOOK_SECRETS: senderSecret,
      LISTEN_TOKEN: TOKEN,
      ORIGIN_URL: `http://127.0.0.1:${origin.address().port}/origin`,
    });
  });
  after(async () => {
    for (const l of listeners) l.child.kill("SIGKILL");
    await worker?.dispose();
    await local?.close();
    origin?.close();
  });
  const send = (d) => worker.send({ headers: d.headers, body: d.body });

  it("with no listener connected, a verified delivery is 503 listener_absent with retry-after", async () => {
    const res = await send(delivery({ secrets: [senderSecret] }));
    assertErrorBody(assert, res, 503, "listener_absent");
    assert.equal(res.headers.get("retry-after"), "10");
    assert.equal(originHits, 0, "the origin is not used while LISTEN_TOKEN is set");
  });

  it("wrong, missing and other-length tokens are refused before the upgrade, exactly like an unknown admin path", async () => {
    const base = worker.url();
    const unknown = await upgrade(base, { authorization: `Bearer ${TOKEN}`, path: "/_postwire/no-such-path" });
    assert.equal(unknown.status, 404);
    const wrongSameLength = "x".repeat(TOKEN.length);
    for (const authorization of [undefined, `Bearer ${wrongSameLength}`, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, "Bearer ", TOKEN, `bearer ${TOKEN}`]) {
      const res = await upgrade(base, { authorization });
      assert.equal(res.status, 404, `${authorization}`);
      assert.equal(res.body, unknown.body, "the same answer as any unknown admin path");
      assert.ok(!res.body.includes(TOKEN.slice(0, 8)), "nothing of the token leaks");
    }
    // The right token but no upgrade: refused, never a socket.
    const plain = await upgrade(base, { authorization: `Bearer ${TOKEN}`, websocket: false });
    assert.equal(plain.status, 400);
    // The CLI with a wrong token stops at once and does not print the token.
    const child = spawn(CLI, ["listen", "--worker", base.toString(), "--forward", local.url], {
      env: { ...process.env, POSTWIRE_LISTEN_TOKEN: wrongSameLength },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((r) => child.on("exit", r));
    assert.equal(code, 2, stderr);
    assert.match(stderr, /refused/);
    assert.ok(!stderr.includes(wrongSameLength), "the token is never printed");
  });

  it("a connected listener gets each delivery re-signed with the local secret; the sender sees the local status", async () => {
    const listener = await startListener(worker.url().toString(), local.url);
    listeners.push(listener);
    const d = delivery({ secrets: [senderSecret] });
    const res = await send(d);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.code, "delivered");
    const got = local.answered.find((r) => r.id === d.id);
    assert.ok(got, "the local endpoint received it");
    assert.equal(got.verified, true, "it verifies with the local secret alone");
    assert.equal(got.body, d.body, "the body byte for byte");
    assert.ok(!got.headers["webhook-signature"].includes(d.headers["webhook-signature"].slice(3)), "the sender's signature is not passed on");
    assert.equal(got.headers["webhook-timestamp"], d.headers["webhook-timestamp"]);
    // The CLI printed it: id, type, local status, latency.
    await waitFor(() => listener.lines.find((l) => l.id === d.id));
    const line = listener.lines.find((l) => l.id === d.id);
    assert.equal(line.status, 204);
    assert.equal(line.type, "webhook.test");
    assert.equal(typeof line.latency_ms, "number");
    // A repeat of a delivered id is a duplicate, not relayed again.
    const again = await send(d);
    assert.equal(again.json.code, "duplicate");
    assert.equal(local.arrived.filter((r) => r.id === d.id).length, 1);

    // The local endpoint answers 500: the sender is not acknowledged and sees the status.
    const failing = delivery({ secrets: [senderSecret] });
    local.setPlan((r) => (r.id === failing.id ? { status: 500 } : { status: 204 }));
    const refused = await send(failing);
    assertErrorBody(assert, refused, 502, "origin_rejected");
    assert.equal(refused.headers.get("x-postwire-origin-status"), "500");
    local.setPlan(() => ({ status: 204 }));
    const retried = await send(failing);
    assert.equal(retried.status, 200, "the sender's retry goes through once the local code is fixed");
    // A forged delivery never reaches the listener.
    const forged = delivery({ secrets: [newSecret()] });
    assertErrorBody(assert, await send(forged), 401, "invalid_signature");
    assert.equal(local.arrived.filter((r) => r.id === forged.id).length, 0);
    assert.equal(originHits, 0);
  });

  it("the listener dying mid-delivery gives the sender 503; the retry reaches the local endpoint once after reconnection", async () => {
    const listener = listeners.at(-1);
    const d = delivery({ secrets: [senderSecret] });
    local.setPlan((r) => {
      if (r.id === d.id && local.arrived.filter((a) => a.id === d.id).length === 1) {
        listener.kill(); // the CLI dies while the local endpoint is handling it
        return { hang: true };
      }
      return { status: 204 };
    });
    const started = Date.now();
    const res = await send(d);
    assertErrorBody(assert, res, 503, "listener_absent");
    assert.ok(Date.now() - started < 8000, `answered at once when the socket closed, not at the timeout (${Date.now() - started} ms)`);
    assert.equal(local.answered.filter((r) => r.id === d.id).length, 0);
    // The sender retries while nobody listens: 503 again, nothing lost.
    assertErrorBody(assert, await send(d), 503, "listener_absent");
    const again = await startListener(worker.url().toString(), local.url);
    listeners.push(again);
    const retry = await send(d);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(local.answered.filter((r) => r.id === d.id && r.verified).length, 1, "acknowledged once");
    assert.equal((await send(d)).json.code, "duplicate");
  });

  it("a second listener on the same token replaces the first, which exits", async () => {
    const first = listeners.at(-1);
    const other = await startLocalEndpoint();
    try {
      // This one reads its token from a file (--token-file), the other way to give it.
      const tokenFile = path.join(mkdtempSync(path.join(os.tmpdir(), "postwire-listen-")), "token");
      const second = await startListener(worker.url().toString(), other.url, { tokenFile });
      listeners.push(second);
      const { code } = await Promise.race([first.exited, sleep(10_000).then(() => ({ code: "still running" }))]);
      assert.equal(code, 2, first.stderr());
      assert.match(first.stderr(), /newer listener/);
      const d = delivery({ secrets: [senderSecret] });
      const res = await send(d);
      assert.equal(res.status, 200, res.text);
      assert.equal(other.answered.filter((r) => r.id === d.id).length, 1, "the newest listener gets it");
      assert.equal(local.arrived.filter((r) => r.id === d.id).length, 0, "the replaced one does not");
    } finally {
      await other.close();
    }
  });
});

describe("listen mode, inbox (wrangler.inbox.toml)", { skip: !CLI && "POSTWIRE_CLI is not set" }, () => {
  let worker, local, listener;
  before(async () => {
    local = await startLocalEndpoint();
    worker = await startWorker(
      { WEBHOOK_SECRETS: senderSecret, LISTEN_TOKEN: TOKEN, ADMIN_TOKEN, VALIDATE_EVENTS: "none", ORDERING: "none", ORIGIN_URL: "http://127.0.0.1:9/unused" },
      { file: "wrangler.inbox.toml" },
    );
  });
  after(async () => {
    listener?.child.kill("SIGKILL");
    await worker?.dispose();
    await local?.close();
  });

  it("accepts with 202 while nobody listens and delivers to the listener once it connects", async () => {
    const d = delivery({ secrets: [senderSecret] });
    const res = await worker.send({ headers: d.headers, body: d.body });
    assert.equal(res.status, 202, res.text);
    listener = await startListener(worker.url().toString(), local.url);
    // The inbox retries with back-off (first retries within seconds).
    await waitFor(() => local.answered.find((r) => r.id === d.id && r.verified), 30_000);
    assert.equal(local.answered.filter((r) => r.id === d.id).length, 1);

    // --replay ID: once connected, the new listener asks the inbox to send it again (once the
    // inbox recorded it delivered: an open delivery is not replayed, 409).
    const state = async () => {
      const res = await fetch(new URL(`/_postwire/deliveries/${encodeURIComponent(d.id)}`, worker.url()), {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return (await res.json()).state;
    };
    const until = Date.now() + 10_000;
    while ((await state()) !== "delivered" && Date.now() < until) await sleep(50);
    assert.equal(await state(), "delivered");
    listener.child.kill("SIGKILL");
    await listener.exited;
    listener = await startListener(worker.url().toString(), local.url, {
      extra: ["--replay", d.id],
      env: { POSTWIRE_EDGE_TOKEN: ADMIN_TOKEN },
    });
    await waitFor(() => local.answered.filter((r) => r.id === d.id && r.verified).length === 2, 30_000);
    assert.match(listener.stderr(), /replay of .* requested/);
    assert.ok(!listener.stderr().includes(ADMIN_TOKEN) && !listener.stderr().includes(TOKEN), "no token printed");
  });
});

describe("listen mode under stress: dropped connections, a burst, a hostile listener", { skip: !CLI && "POSTWIRE_CLI is not set" }, () => {
  let worker, local, proxy;
  const children = [];
  before(async () => {
    local = await startLocalEndpoint();
    // A shorter wait, so that a listener that never answers costs the test 4 s, not 8 (and
    // 60 simultaneous deliveries through 60 cold Durable Objects on a loaded 2-core machine
    // still fit in it).
    worker = await startWorker({ WEBHOOK_SECRETS: senderSecret, LISTEN_TOKEN: TOKEN, FORWARD_TIMEOUT_MS: "4000", ORIGIN_URL: "http://127.0.0.1:9/unused" });
    proxy = await startProxy(new URL(worker.url()));
  });
  after(async () => {
    for (const c of children) c.child.kill("SIGKILL");
    await worker?.dispose();
    await local?.close();
    await proxy?.close();
  });
  const send = (d) => worker.send({ headers: d.headers, body: d.body });

  it("the same listener reconnects with back-off when its connection drops mid-delivery; the retry reaches the local endpoint once", async () => {
    const listener = await startListener(proxy.url, local.url);
    children.push(listener);
    const d = delivery({ secrets: [senderSecret] });
    let cut = false;
    local.setPlan((r) => {
      if (r.id === d.id && !cut) {
        cut = true;
        proxy.cut(); // the network between the laptop and the Worker fails
        return { hang: true };
      }
      return { status: 204 };
    });
    const res = await send(d);
    assertErrorBody(assert, res, 503, "listener_absent");
    await waitFor(() => (listener.stderr().match(/connected to/g) ?? []).length >= 2, 15_000);
    assert.match(listener.stderr(), /disconnected/);
    assert.match(listener.stderr(), /reconnecting in \d+ ms/);
    const retry = await send(d);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(local.answered.filter((r) => r.id === d.id).length, 1, "acknowledged by the local endpoint once");
  });

  it("a burst of 60 simultaneous deliveries: each relayed, verified and acknowledged once", async () => {
    local.setPlan(() => ({ status: 204 }));
    const burst = Array.from({ length: 60 }, () => delivery({ secrets: [senderSecret] }));
    const answers = await Promise.all(burst.map(send));
    assert.deepEqual(answers.map((a) => a.status), burst.map(() => 200), answers.map((a) => a.text).find((t) => !t.includes("delivered")));
    for (const d of burst) {
      assert.equal(local.answered.filter((r) => r.id === d.id && r.verified).length, 1, d.id);
    }
  });

  it("a local endpoint slower than the Worker's wait: the listener gives up first, so the sender gets its verdict, not the Worker's timeout", async () => {
    const listener = children.at(-1);
    // The Worker waits 4 s (FORWARD_TIMEOUT_MS) and says so in its hello; the listener gives
    // its local endpoint that less the margin (3 s). An answer after 4.5 s comes too late
    // for the sender either way: the sender must hear the listener's "no answer", as the
    // listener prints it, not a timeout of the Worker's while the listener still waits.
    const slow = delivery({ secrets: [senderSecret] });
    local.setPlan((r) => (r.id === slow.id ? { status: 204, delayMs: 4500 } : { status: 204 }));
    const started = Date.now();
    const res = await send(slow);
    const elapsed = Date.now() - started;
    assertErrorBody(assert, res, 502, "origin_unavailable");
    assert.match(res.json.message, /listener/, res.text);
    assert.ok(elapsed < 4000, `answered by the listener before the Worker's wait ran out (${elapsed} ms)`);
    const line = await waitFor(() => listener.lines.find((l) => l.id === slow.id));
    assert.equal(line.status ?? null, null, "the listener reports no status, to the Worker or on screen");
    assert.match(line.error, /no answer within 3(\.0)? s/, JSON.stringify(line));
    // An answer within the listener's time reaches the sender as the local status.
    const prompt = delivery({ secrets: [senderSecret] });
    local.setPlan((r) => (r.id === prompt.id ? { status: 204, delayMs: 2000 } : { status: 204 }));
    const ok = await send(prompt);
    assert.equal(ok.status, 200, ok.text);
    local.setPlan(() => ({ status: 204 }));
  });

  it("a hostile listener's junk frames are ignored; only a well-formed answer with the right correlation id counts", async () => {
    const ws = new WebSocket(new URL("/_postwire/listen", worker.url()).toString().replace(/^http/, "ws"), {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const frames = [];
    ws.on("message", (m) => frames.push(JSON.parse(m.toString())));
    await new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); });
    let policy = "junk";
    ws.on("message", (m) => {
      const f = JSON.parse(m.toString());
      if (policy === "junk") {
        for (const junk of ["not json", "[]", "{}", JSON.stringify({ type: "answer", correlation_id: "nope", status: 200 }),
          JSON.stringify({ type: "answer", correlation_id: f.correlation_id, status: 99 }),
          JSON.stringify({ type: "answer", correlation_id: f.correlation_id, status: "200" }), Buffer.alloc(100_000, 1)]) ws.send(junk);
      } else {
        ws.send(JSON.stringify({ type: "answer", correlation_id: f.correlation_id, status: 202 }));
      }
    });
    // The CLI listener of the previous tests was replaced by this one.
    const d = delivery({ secrets: [senderSecret] });
    const started = Date.now();
    const junked = await send(d);
    assertErrorBody(assert, junked, 504, "origin_timeout");
    assert.ok(Date.now() - started < 7000, "bounded by FORWARD_TIMEOUT_MS");
    assert.deepEqual(frames[0], { type: "hello", wait_ms: 4000 }, "the first frame: the Worker's wait (FORWARD_TIMEOUT_MS)");
    const frame = frames.find((f) => f.id === d.id);
    assert.equal(frame.type, "delivery");
    assert.equal(frame.body, d.body);
    assert.equal(frame.headers["webhook-id"], d.id);
    assert.equal(frame.headers["webhook-signature"], d.headers["webhook-signature"], "the sender's signature, for the listener to replace");
    policy = "answer";
    const ok = await send(d);
    assert.equal(ok.status, 200, ok.text);
    ws.close();
  });
});

/** A TCP proxy to `target` whose connections can all be cut at once. */
async function startProxy(target) {
  const sockets = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.pipe(upstream);
    upstream.pipe(client);
    for (const s of [client, upstream]) {
      s.on("error", end);
      s.on("close", end);
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    cut: () => { for (const s of sockets) s.destroy(); },
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(r); }),
  };
}

async function waitFor(check, ms = 10_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const v = check();
    if (v) return v;
    await sleep(50);
  }
  throw new Error("timed out waiting");
}
