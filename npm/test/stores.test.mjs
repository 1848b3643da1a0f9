// Every once-processing store against the shared conformance suite (test/stores/
// conformance.mjs) on real servers: memoryStore; redisStore over node-redis and over
// ioredis on a throwaway redis-server; postgresStore over a pg Pool and a pg Client on a
// throwaway PostgreSQL cluster; d1Store, durableObjectStore and kvStore in workerd
// (Miniflare) with real bindings. Plus what only some stores have: the table PostgreSQL
// creates and sweeps, the Redis keys and their expiry, and the scripts surviving a
// SCRIPT FLUSH.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { Miniflare } from "miniflare";
import { memoryStore, processOnce } from "postwire/once";
import { redisStore } from "postwire/stores/redis";
import { postgresStore, postgresSchema } from "postwire/stores/postgres";
import { conformance } from "./stores/conformance.mjs";
import { startPostgres, startRedis } from "./stores/servers.mjs";

const require = createRequire(new URL("../../package.json", import.meta.url));
const { createClient } = require("redis");
const IoRedis = require("ioredis");
const pg = require("pg");
const npmDir = fileURLToPath(new URL("..", import.meta.url));
const rootDir = fileURLToPath(new URL("../..", import.meta.url));

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

test("memoryStore passes the conformance suite", async (t) => {
  await conformance(t, "memory", (times) => memoryStore(times));
});

test("memoryStore full: the oldest done mark goes, never a live claim; full of live claims, a claim throws store_full", () => {
  let now = 1_000_000;
  // The lease shorter than the keep, as in use: a fresh claim is the entry that expires soonest.
  const store = memoryStore({ capacity: 3, leaseMs: 30_000, keepMs: 3_600_000, now: () => now });
  assert.deepEqual(store.claim("live_1", "t1"), { state: "claimed" });
  for (const id of ["done_1", "done_2"]) {
    assert.deepEqual(store.claim(id, "t"), { state: "claimed" });
    assert.equal(store.complete(id, "t"), true);
    now += 1;
  }
  assert.deepEqual(store.claim("live_2", "t2"), { state: "claimed" }, "room made by the oldest done mark");
  assert.equal(store.size, 3);
  assert.equal(store.claim("live_1", "u").state, "busy", "the oldest entry, a live claim, was kept");
  assert.deepEqual(store.claim("done_1", "u"), { state: "claimed" }, "done_1 (the oldest mark) was dropped");
  assert.throws(() => store.claim("live_4", "u"), (err) => err.code === "store_full" && err.name === "StoreFullError");
  assert.equal(store.claim("live_1", "u").state, "busy");
  assert.equal(store.complete("live_1", "t1"), true, "a claim becoming done takes no more room");
  assert.deepEqual(store.claim("live_4", "u"), { state: "claimed" }, "live_1's mark made room");
  now += 31_000;
  assert.deepEqual(store.claim("live_5", "u"), { state: "claimed" });
  assert.equal(store.size, 1, "ended leases and nothing else: all swept");
});

test("memoryStore is bounded by capacity, and by keepMs on an injected clock", () => {
  let now = 1_000_000;
  const store = memoryStore({ capacity: 3, keepMs: 1000, leaseMs: 100, now: () => now });
  for (const id of ["a", "b", "c", "d"]) {
    assert.deepEqual(store.claim(id, "t"), { state: "claimed" });
    assert.equal(store.complete(id, "t"), true);
  }
  assert.equal(store.size, 3, "the oldest id is dropped beyond capacity");
  assert.deepEqual(store.claim("d", "u"), { state: "done" });
  now += 999;
  assert.deepEqual(store.claim("d", "u"), { state: "done" });
  now += 1;
  assert.deepEqual(store.claim("x", "u"), { state: "claimed" });
  assert.equal(store.size, 1, "expired ids are swept on the next claim");
  now += 100;
  assert.deepEqual(store.claim("x", "v"), { state: "claimed" }, "the lease ran out");
  assert.throws(() => memoryStore({ leaseMs: 0 }), /leaseMs must be a positive whole number/);
  assert.throws(() => memoryStore({ keepMs: 1.5 }), /keepMs/);
  assert.deepEqual(memoryStore({ ttlSeconds: 1, now: () => now }).claim("y", "t"), { state: "claimed" }, "the former ttlSeconds is accepted");
});

const redis = await startRedis();
cleanups.push(() => redis.close());

test("redisStore over node-redis passes the conformance suite", async (t) => {
  const client = createClient({ url: redis.url });
  await client.connect();
  cleanups.push(() => client.quit());
  await conformance(t, "node-redis", (times) => redisStore(client, { ...times, prefix: "conf:nr:" }));
});

test("redisStore over ioredis passes the conformance suite", async (t) => {
  const client = new IoRedis(redis.url);
  cleanups.push(async () => client.disconnect());
  await conformance(t, "ioredis", (times) => redisStore(client, { ...times, prefix: "conf:io:" }));
});

test("redisStore: one key per id with its expiry, shared by both clients; scripts reloaded after SCRIPT FLUSH", async () => {
  const nodeRedis = createClient({ url: redis.url });
  await nodeRedis.connect();
  const io = new IoRedis(redis.url);
  try {
    const a = redisStore(nodeRedis, { prefix: "both:", leaseMs: 5_000, keepMs: 50_000 });
    const b = redisStore(io, { prefix: "both:", leaseMs: 5_000, keepMs: 50_000 });
    assert.deepEqual(await a.claim("msg_1", "tok_a"), { state: "claimed" });
    assert.equal(await io.get("both:msg_1"), "c:tok_a");
    const pttl = await io.pttl("both:msg_1");
    assert.ok(pttl > 4_000 && pttl <= 5_000, `lease PTTL ${pttl}`);
    assert.equal((await b.claim("msg_1", "tok_b")).state, "busy", "the other client sees the claim");
    assert.equal(await b.complete("msg_1", "tok_b"), false);
    assert.equal(await a.complete("msg_1", "tok_a"), true);
    assert.equal(await io.get("both:msg_1"), "d");
    const kept = await io.pttl("both:msg_1");
    assert.ok(kept > 45_000 && kept <= 50_000, `done PTTL ${kept}`);
    assert.deepEqual(await b.claim("msg_1", "tok_b"), { state: "done" });
    await io.script("FLUSH");
    assert.equal(await b.release("msg_1", "tok_b"), false, "EVALSHA after a flush falls back to EVAL");
    assert.deepEqual(await a.claim("msg_1", "tok_c"), { state: "done" });
    assert.throws(() => redisStore({}), /node-redis \(v4\+\) or ioredis/);
  } finally {
    await nodeRedis.quit();
    io.disconnect();
  }
});

const postgres = await startPostgres();
cleanups.push(() => postgres.close());

test("postgresStore over a pg Pool passes the conformance suite", async (t) => {
  const pool = new pg.Pool({ ...postgres.config, max: 8 });
  cleanups.push(() => pool.end());
  await conformance(t, "pg-pool", (times) => postgresStore(pool, { ...times, table: `conf_pool_${times.leaseMs}` }));
});

test("postgresStore over a pg Client passes the conformance suite", async (t) => {
  const client = new pg.Client(postgres.config);
  await client.connect();
  cleanups.push(() => client.end());
  await conformance(t, "pg-client", (times) => postgresStore(client, { ...times, table: `conf_client_${times.leaseMs}` }));
});

test("postgresStore creates its table on first use and sweeps expired rows in bounded steps", async () => {
  const pool = new pg.Pool(postgres.config);
  try {
    const store = postgresStore(pool, { table: "swept", leaseMs: 200, keepMs: 200, sweepEvery: 5, sweepLimit: 3 });
    const columns = async () =>
      (await pool.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'swept' ORDER BY ordinal_position")).rows;
    assert.deepEqual(await columns(), [], "nothing before the first delivery");
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(await store.claim(`msg_${i}`, "t"), { state: "claimed" });
      assert.equal(await store.complete(`msg_${i}`, "t"), true);
    }
    assert.deepEqual(await columns(), [
      { column_name: "id", data_type: "text" },
      { column_name: "token", data_type: "text" },
      { column_name: "expires_at", data_type: "timestamp with time zone" },
    ]);
    const count = async () => Number((await pool.query("SELECT count(*) FROM swept")).rows[0].count);
    assert.equal(await count(), 4);
    await sleep(400);
    await store.claim("msg_new", "t"); // the fifth claim starts a sweep of at most 3 expired rows
    for (let i = 0; i < 100 && (await count()) !== 2; i++) await sleep(20);
    assert.equal(await count(), 2, "4 expired rows, 3 swept, and the new claim");
    assert.equal(await store.sweep(), 1);
    assert.equal(await count(), 1);
    assert.match(postgresSchema("swept").join(";"), /CREATE TABLE IF NOT EXISTS swept .*CREATE INDEX IF NOT EXISTS swept_expires_at/s);
    assert.throws(() => postgresStore(pool, { table: "x; DROP TABLE y" }), /options\.table/);
    assert.throws(() => postgresStore({}), /pg Pool or Client/);
  } finally {
    await pool.end();
  }
});

test("postgresStore: a sweep keeps a claim that takes an expired row over between its read and its delete", async () => {
  const pool = new pg.Pool({ ...postgres.config, max: 4 });
  const claimer = new pg.Client(postgres.config);
  await claimer.connect();
  try {
    // The lease shorter than the keep, as in use; a done mark beside the claim is kept.
    const store = postgresStore(pool, { table: "interleaved", leaseMs: 50, keepMs: 3_600_000, sweepEvery: 1_000_000 });
    assert.deepEqual(await store.claim("msg_s", "tok_a"), { state: "claimed" });
    assert.deepEqual(await store.claim("msg_kept", "tok_k"), { state: "claimed" });
    assert.equal(await store.complete("msg_kept", "tok_k"), true);
    await sleep(200); // tok_a's lease ran out (its process died)
    // tok_b takes the row over with the store's own statement, in a transaction left open.
    const claimSql = readFileSync(new URL("../../crates/postwire-receiver/protocol/postgres/claim.sql", import.meta.url), "utf8")
      .replaceAll("{table}", "interleaved");
    await claimer.query("BEGIN");
    const taken = await claimer.query(claimSql, ["msg_s", "tok_b", 60_000]);
    assert.equal(taken.rows[0].claimed, true);
    const swept = store.sweep(1000);
    // The sweep read the row as expired; its delete now waits for tok_b's row lock.
    for (let i = 0; ; i++) {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM interleaved%'",
      );
      if (rows[0].n === 1) break;
      assert.ok(i < 500, "the sweep never waited for the claim's row");
      await sleep(20);
    }
    await claimer.query("COMMIT");
    assert.equal(await swept, 0, "the sweep deleted tok_b's live claim");
    assert.equal((await store.claim("msg_s", "tok_c")).state, "busy", "a second copy claimed the id while tok_b held it");
    assert.equal(await store.complete("msg_s", "tok_b"), true);
    assert.deepEqual(await store.claim("msg_kept", "tok_c"), { state: "done" });
  } finally {
    await claimer.end();
    await pool.end();
  }
});

test("redisStore and postgresStore: a handler three leases long keeps its claim (renewed): one run, copies meanwhile 409", async () => {
  const client = createClient({ url: redis.url });
  await client.connect();
  const pool = new pg.Pool(postgres.config);
  try {
    for (const [name, store] of [
      ["redis", redisStore(client, { prefix: "long:", leaseMs: 300 })],
      ["postgres", postgresStore(pool, { table: "long_handler", leaseMs: 300 })],
    ]) {
      const id = `msg_long_${name}`;
      let runs = 0;
      const handler = async () => {
        runs++;
        await sleep(900);
      };
      const quiet = { onError: (e) => assert.fail(`${name}: ${e}`), onClaimLost: () => assert.fail(`${name}: claim lost`) };
      let finished = false;
      const first = processOnce({ id }, handler, store, quiet).finally(() => (finished = true));
      let copies = 0;
      while (!finished) {
        const answer = await processOnce({ id }, handler, store, quiet);
        if (finished && answer.status === 200) break;
        assert.equal(answer.status, 409, `${name}: ${JSON.stringify(answer)}`);
        copies++;
        await sleep(50);
      }
      assert.deepEqual(await first, { status: 204 }, name);
      assert.ok(copies >= 5, `${name}: copies all along (${copies})`);
      assert.equal((await processOnce({ id }, handler, store, quiet)).status, 200, name);
      assert.equal(runs, 1, name);
    }
  } finally {
    await client.quit();
    await pool.end();
  }
});

test("postgresStore: eight processes' first deliveries create the table at once, and each gets an answer", async () => {
  const clients = await Promise.all(Array.from({ length: 8 }, async () => {
    const client = new pg.Client(postgres.config);
    await client.connect();
    return client;
  }));
  try {
    const results = await Promise.all(clients.map((client, i) => postgresStore(client, { table: "raced" }).claim("msg_race", `tok_${i}`)));
    assert.equal(results.filter((r) => r.state === "claimed").length, 1, JSON.stringify(results));
    assert.ok(results.every((r) => r.state === "claimed" || r.state === "busy"), JSON.stringify(results));
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
});

test("d1Store, durableObjectStore and kvStore in workerd (Miniflare) pass the conformance suite", async (t) => {
  const out = npmDir + "build/stores-worker/";
  mkdirSync(out, { recursive: true });
  execFileSync(rootDir + "node_modules/.bin/esbuild", [
    "test/stores/worker.js", "--bundle", "--format=esm", "--platform=neutral", "--conditions=workerd,worker,browser",
    `--outfile=${out}worker.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  const mf = new Miniflare({
    modules: true,
    scriptPath: out + "worker.js",
    compatibilityDate: "2024-09-23",
    d1Databases: ["DB"],
    kvNamespaces: ["KV"],
    durableObjects: { ONCE: "PostwireOnceObject" },
  });
  cleanups.push(() => mf.dispose());
  await mf.ready;
  const remote = (store, times) => {
    const call = async (op, id, token) => {
      const res = await mf.dispatchFetch("http://stores/op", { method: "POST", body: JSON.stringify({ store, times, op, id, token }) });
      const body = await res.json();
      assert.equal(res.status, 200, body.error);
      return body.result;
    };
    return {
      leaseMs: times.leaseMs,
      claim: (id, token) => call("claim", id, token),
      complete: (id, token) => call("complete", id, token),
      release: (id, token) => call("release", id, token),
      renew: (id, token) => call("renew", id, token),
    };
  };
  await conformance(t, "d1", (times) => remote("d1", times));
  await conformance(t, "durable-object", (times) => remote("do", times));
  await conformance(t, "kv", (times) => remote("kv", times), { atomic: false });
});
