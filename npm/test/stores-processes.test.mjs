// Once-processing across processes, on real servers: two Node processes
// (test/stores/receiver.mjs, postwire/express) share one store, on a throwaway Redis (one
// process with node-redis, the other with ioredis) and on a throwaway PostgreSQL cluster.
// Deliveries are signed by `standardwebhooks` and sent over loopback HTTP; each handler run
// is appended to a file, so "ran once" is counted across processes.
//   - 50 simultaneous copies of one delivery over both processes: one run; the others 200 duplicate or 409
//   - a slow handler and a retry meanwhile: 409; the handler throws: 500, the next retry runs
//     it; it succeeds: 204, then 200 duplicate
//   - SIGKILL mid-handler: 409 while the lease lives, then the next retry runs it: exactly two runs
//   - the store stopped: 503 with retry-after, nothing run, nothing marked done; restarted:
//     the retries run it once, and what was done before is still done
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { startPostgres, startRedis } from "./stores/servers.mjs";

const require = createRequire(new URL("../../package.json", import.meta.url));
const { Webhook: StandardWebhook } = require("standardwebhooks");
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const npmDir = fileURLToPath(new URL("..", import.meta.url));
/** The receivers' lease: short, so the crash test waits it out quickly. */
const LEASE_MS = 1_500;

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** Starts a receiver process; resolves to `{ url, child }`. */
async function receiver(env) {
  const child = spawn(process.execPath, ["test/stores/receiver.mjs"], {
    cwd: npmDir,
    env: { ...process.env, ...env, LEASE_MS: String(LEASE_MS) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanups.push(async () => child.kill("SIGKILL"));
  let out = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the receiver did not start: ${out}`)), 20_000);
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line).url);
      }
    });
    child.once("exit", (code) => reject(new Error(`the receiver exited with ${code}: ${out}`)));
  });
  return { url, child };
}

/** One signed copy of the delivery `id` (a fresh timestamp and signature, as each retry has). */
async function deliver(base, id, message) {
  const body = JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws_1", data: { message } });
  const at = new Date();
  const res = await fetch(`${base}/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new StandardWebhook(SECRET).sign(id, at, body),
    },
    body,
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get("retry-after"), json: text ? JSON.parse(text) : undefined };
}

/** The handler runs of `id` so far, as the pids that ran it. */
function runsOf(file, id) {
  return readFileSync(file, "utf8").split("\n").filter((l) => l.endsWith(` ${id}`)).map((l) => Number(l.split(" ")[0]));
}

async function waitFor(what, check, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(25);
  }
}

async function openGate(base, id, outcome) {
  assert.equal((await fetch(`${base}/gate/${encodeURIComponent(id)}?outcome=${outcome}`, { method: "POST" })).status, 204);
}

/** The scenarios against one shared store: `envs` are the two processes' environments, `server` stops and starts it. */
async function scenarios(t, label, envs, server) {
  const dir = mkdtempSync(join(tmpdir(), `postwire-${label}-`));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const runs = join(dir, "runs");
  writeFileSync(runs, "");
  let [a, b] = await Promise.all(envs.map((env) => receiver({ ...env, RUNS: runs })));

  await t.test(`${label}: 50 simultaneous copies over two processes run the handler once`, async () => {
    const id = `msg_burst_${label}`;
    const copies = await Promise.all(Array.from({ length: 50 }, (_, i) => deliver((i % 2 ? a : b).url, id, "sleep:1000")));
    const statuses = copies.map((c) => c.status);
    assert.deepEqual(runsOf(runs, id).length, 1, "one run in all");
    assert.equal(statuses.filter((s) => s === 204).length, 1, statuses.join(","));
    for (const c of copies) {
      if (c.status === 200) assert.deepEqual(c.json, { duplicate: true });
      else if (c.status === 409) {
        assert.equal(c.json.code, "in_progress");
        assert.ok(Number(c.retryAfter) >= 1, `retry-after ${c.retryAfter}`);
      } else assert.equal(c.status, 204);
    }
    assert.ok(statuses.filter((s) => s === 409).length > 0, "copies during the run are answered 409, never 2xx");
    assert.deepEqual(await deliver(a.url, id, "sleep:1"), { status: 200, retryAfter: null, json: { duplicate: true } });
    assert.deepEqual((await deliver(b.url, id, "sleep:1")).json, { duplicate: true });
  });

  await t.test(`${label}: a slow handler and a retry meanwhile: 409; it throws, the next retry runs it; it succeeds, then duplicate`, async () => {
    const id = `msg_slow_${label}`;
    const first = deliver(a.url, id, "gated");
    await waitFor("the first run", () => runsOf(runs, id).length === 1);
    const retry = await deliver(b.url, id, "gated");
    assert.equal(retry.status, 409, "never 2xx while the first copy may still fail");
    assert.ok(Number(retry.retryAfter) >= 1 && Number(retry.retryAfter) <= LEASE_MS / 1000 + 1, `retry-after ${retry.retryAfter}`);
    assert.deepEqual(runsOf(runs, id).length, 1);
    await openGate(a.url, id, "throw");
    assert.equal((await first).status, 500);
    const second = deliver(b.url, id, "gated");
    await waitFor("the second run", () => runsOf(runs, id).length === 2);
    assert.equal((await deliver(a.url, id, "gated")).status, 409, "the second run holds the claim");
    await openGate(b.url, id, "ok");
    assert.equal((await second).status, 204);
    assert.deepEqual((await deliver(a.url, id, "gated")).json, { duplicate: true });
    assert.deepEqual(runsOf(runs, id), [a.child.pid, b.child.pid]);
  });

  await t.test(`${label}: SIGKILL mid-handler: the next retry after the lease runs it, two runs in all`, async () => {
    const id = `msg_kill_${label}`;
    const first = deliver(a.url, id, "gated").catch(() => "connection lost");
    await waitFor("the first run", () => runsOf(runs, id).length === 1);
    a.child.kill("SIGKILL");
    assert.equal(await first, "connection lost");
    assert.equal((await deliver(b.url, id, "gated")).status, 409, "the dead process's lease is still live");
    let second;
    await waitFor("a retry after the lease that runs the handler", async () => {
      const attempt = deliver(b.url, id, "gated");
      const raced = await Promise.race([attempt, sleep(500).then(() => "running")]);
      if (raced === "running") return (second = attempt), true;
      assert.equal(raced.status, 409);
      await sleep(200);
      return false;
    });
    await waitFor("the second run", () => runsOf(runs, id).length === 2);
    await openGate(b.url, id, "ok");
    assert.equal((await second).status, 204);
    assert.deepEqual((await deliver(b.url, id, "gated")).json, { duplicate: true });
    assert.equal(runsOf(runs, id).length, 2, "exactly two runs: the killed one and the retry");
    a = await receiver({ ...envs[0], RUNS: runs });
  });

  await t.test(`${label}: the store stopped: 503, nothing run or marked done; restarted: the retries run it once`, async () => {
    const id = `msg_down_${label}`;
    await server.stop();
    for (const r of [a, b]) {
      const down = await deliver(r.url, id, "sleep:1");
      assert.equal(down.status, 503);
      assert.equal(down.json.code, "store_unavailable");
      assert.ok(Number(down.retryAfter) >= 1);
    }
    assert.equal(runsOf(runs, id).length, 0, "never processed without the claim");
    await server.start();
    // A claim sent before the stop may reach the store after the restart (a client's
    // offline queue): its lease then runs out like a crashed copy's.
    await waitFor("a retry that runs the handler", async () => (await deliver(b.url, id, "sleep:1")).status === 204, 20_000);
    assert.equal(runsOf(runs, id).length, 1, "nothing was marked done while the store was down, and one retry ran it");
    assert.deepEqual((await deliver(a.url, id, "sleep:1")).json, { duplicate: true });
    assert.deepEqual((await deliver(a.url, `msg_burst_${label}`, "sleep:1")).json, { duplicate: true }, "what was done before the restart is still done");
  });
}

test("two processes sharing Redis (node-redis and ioredis)", async (t) => {
  const redis = await startRedis();
  cleanups.push(() => redis.close());
  await scenarios(t, "redis", [{ STORE: "redis-node", REDIS_URL: redis.url }, { STORE: "redis-io", REDIS_URL: redis.url }], redis);
});

test("two processes sharing PostgreSQL (pg Pools)", async (t) => {
  const postgres = await startPostgres();
  cleanups.push(() => postgres.close());
  const env = { STORE: "postgres", PG_CONFIG: JSON.stringify(postgres.config) };
  await scenarios(t, "postgres", [env, env], postgres);
});
