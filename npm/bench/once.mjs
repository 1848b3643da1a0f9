// Benchmark: what once-processing costs per delivery, and what 1M done ids hold.
//
//   bash npm/build.sh                  # once: npm/dist
//   node npm/bench/once.mjs            # about 3 minutes
//   node npm/bench/once.mjs --no-sizes # the overhead table only (about 1 minute)
//   node npm/bench/once.mjs --quick    # smoke run (npm/test.sh): every store answers alike; figures meaningless
//
// 1. Overhead: `processOnce(event, () => {}, store)` for fresh ids, one delivery after the
//    other (a claim and a complete each), timed per delivery: p50 and p99 for memoryStore,
//    redisStore over node-redis and over ioredis, postgresStore over a pg Pool, against a
//    hand-written `SET id 1 NX PX` per delivery (node-redis and ioredis, one round trip:
//    the de-duplication people write by hand) in the same run. The servers are throwaway
//    ones on loopback (Debian's redis-server and PostgreSQL), as in the tests. The stores'
//    turns are interleaved in rounds, so load from elsewhere hits them alike.
// 2. Size: 1M done ids in each store, then again after they expire (keepMs of a few
//    seconds): Redis's used_memory and DBSIZE, the PostgreSQL table's size and rows (the
//    store's sweep deletes expired rows; VACUUM makes their space reusable, and a second
//    million reuses it), memoryStore's heap.
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { memoryStore, processOnce } from "postwire/once";
import { redisStore } from "postwire/stores/redis";
import { postgresStore } from "postwire/stores/postgres";
import { startPostgres, startRedis } from "../test/stores/servers.mjs";

const require = createRequire(new URL("../../package.json", import.meta.url));
const { createClient } = require("redis");
const IoRedis = require("ioredis");
const pg = require("pg");

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 1 : 5;
const PER_ROUND = quick ? 50 : 2_000;
const IDS = quick ? 5_000 : 1_000_000;

const redis = await startRedis({ appendfsync: "everysec" }); // Redis's default, as a deployment runs it
const sizes = !process.argv.includes("--no-sizes");
const postgres = await startPostgres();
const nodeRedis = createClient({ url: redis.url });
await nodeRedis.connect();
const io = new IoRedis(redis.url);
const pool = new pg.Pool({ ...postgres.config, max: 8 });

let serial = 0;
const event = () => ({ id: `msg_bench_${serial++}`, type: "webhook.test" });
const noop = () => {};

/** What each contender does for one delivery; resolves to its answer's status. */
const contenders = {
  memoryStore: (() => {
    const store = memoryStore();
    return async () => (await processOnce(event(), noop, store)).status;
  })(),
  "redisStore (node-redis)": (() => {
    const store = redisStore(nodeRedis, { prefix: "b:nr:" });
    return async () => (await processOnce(event(), noop, store)).status;
  })(),
  "redisStore (ioredis)": (() => {
    const store = redisStore(io, { prefix: "b:io:" });
    return async () => (await processOnce(event(), noop, store)).status;
  })(),
  "postgresStore (pg Pool)": (() => {
    const store = postgresStore(pool, { table: "bench_once" });
    return async () => (await processOnce(event(), noop, store)).status;
  })(),
  "SET NX PX by hand (node-redis)": async () => ((await nodeRedis.set(`b:hand:${event().id}`, "1", { NX: true, PX: 90_000_000 })) === "OK" ? 204 : 200),
  "SET NX PX by hand (ioredis)": async () => ((await io.set(`b:handio:${event().id}`, "1", "PX", 90_000_000, "NX")) === "OK" ? 204 : 200),
};

// Warm up (connections, prepared statements, the scripts' SHA1s), checking every answer.
for (const [name, run] of Object.entries(contenders)) {
  for (let i = 0; i < 200; i++) {
    const status = await run();
    if (status !== 204) throw new Error(`${name} answered ${status} for a fresh id`);
  }
}
// A copy of a done id is a duplicate in every store.
for (const store of [memoryStore(), redisStore(io, { prefix: "b:dup:" }), postgresStore(pool, { table: "bench_dup" })]) {
  const e = event();
  if ((await processOnce(e, noop, store)).status !== 204 || (await processOnce(e, noop, store)).json?.duplicate !== true) {
    throw new Error("a store did not answer the second copy as a duplicate");
  }
}

const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(contenders)) {
    for (let i = 0; i < PER_ROUND; i++) {
      const start = process.hrtime.bigint();
      await run();
      samples[name].push(Number(process.hrtime.bigint() - start) / 1000);
    }
  }
}
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
const fmt = (us) => (us >= 100 ? us.toFixed(0) : us.toFixed(1));
const handP50 = pct([...samples["SET NX PX by hand (node-redis)"]].sort((a, b) => a - b), 50);
console.log(`\nOverhead per delivery (µs; ${ROUNDS * PER_ROUND} deliveries each, ${ROUNDS} interleaved rounds; Node ${process.version})\n`);
console.log("| store | p50 | p99 | p50 ÷ SET NX by hand (node-redis) |");
console.log("| --- | ---: | ---: | ---: |");
for (const [name, list] of Object.entries(samples)) {
  const sorted = [...list].sort((a, b) => a - b);
  console.log(`| ${name} | ${fmt(pct(sorted, 50))} | ${fmt(pct(sorted, 99))} | ${(pct(sorted, 50) / handP50).toFixed(2)}× |`);
}

if (sizes) {
// ---- size with IDS done ids, and after they expire ------------------------------------
const MB = (bytes) => (bytes / 1024 / 1024).toFixed(1) + " MB";
const KEEP_MS = quick ? 1_000 : 5_000;
async function inBatches(count, one) {
  const BATCH = 2_000;
  for (let done = 0; done < count; done += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, count - done) }, (_, i) => one(done + i)));
  }
}
async function waitUntil(check, ms) {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await sleep(250);
}
console.log(`\nSize with ${IDS.toLocaleString("en")} done ids (keepMs ${KEEP_MS} ms), and after they expired\n`);
console.log("| store | before | with the ids | after expiry |");
console.log("| --- | ---: | ---: | ---: |");

{
  // Twice: all the ids held at once (keepMs of an hour), then the same flow with keepMs
  // KEEP_MS, where Redis holds only the ids of the last KEEP_MS while they arrive.
  const used = async () => Number(/used_memory:(\d+)/.exec(await io.info("memory"))[1]);
  const keys = async () => `${(await io.dbsize()).toLocaleString("en")} keys`;
  for (const keepMs of [3_600_000, KEEP_MS]) {
    await io.flushall();
    const before = await used();
    const store = redisStore(io, { prefix: "size:", keepMs });
    const start = Date.now();
    await inBatches(IDS, async (i) => {
      await store.claim(`msg_size_${i}`, "t");
      await store.complete(`msg_size_${i}`, "t");
    });
    const seconds = ((Date.now() - start) / 1000).toFixed(0);
    const withIds = `${MB(await used())} (${await keys()})`;
    let after = "not waited for";
    if (keepMs === KEEP_MS) {
      await waitUntil(async () => (await io.dbsize()) === 0, 120_000);
      after = `${MB(await used())} (${await keys()})`;
    }
    console.log(`| Redis used_memory, keepMs ${keepMs} ms (the ids written in ${seconds} s) | ${MB(before)} | ${withIds} | ${after} |`);
  }
  await io.flushall();
}

{
  const store = postgresStore(pool, { table: "size_once", keepMs: KEEP_MS });
  await store.claim("msg_first", "t"); // creates the table
  const size = async () => {
    const { rows } = await pool.query("SELECT pg_total_relation_size('size_once') AS bytes, (SELECT count(*) FROM size_once) AS n");
    return `${MB(Number(rows[0].bytes))} (${Number(rows[0].n).toLocaleString("en")} rows)`;
  };
  const before = await size();
  // The rows a million completes leave, written in bulk (through the store it takes minutes).
  const fill = () =>
    pool.query(`INSERT INTO size_once (id, token, expires_at)
      SELECT 'msg_' || g || '_' || $2, NULL, clock_timestamp() + $1 * interval '1 millisecond' FROM generate_series(1, $3) g`, [KEEP_MS, serial++, IDS]);
  await fill();
  const withIds = await size();
  await sleep(KEEP_MS + 500);
  let swept = 0;
  for (let n; (n = await store.sweep(50_000)) > 0; ) swept += n;
  await pool.query("VACUUM size_once");
  const after = await size();
  await fill();
  const again = await size();
  console.log(`| PostgreSQL table + index | ${before} | ${withIds} | ${after}: ${swept.toLocaleString("en")} swept; ${IDS.toLocaleString("en")} more then: ${again} |`);
}

{
  const gc = globalThis.gc;
  const heap = () => {
    gc?.();
    return process.memoryUsage().heapUsed;
  };
  let now = Date.now();
  const store = memoryStore({ capacity: IDS * 2, keepMs: KEEP_MS, now: () => now });
  const before = heap();
  for (let i = 0; i < IDS; i++) {
    store.claim(`msg_mem_${i}`, "t");
    store.complete(`msg_mem_${i}`, "t");
  }
  const withIds = heap();
  now += KEEP_MS + 1;
  store.claim("msg_after", "t"); // sweeps what expired
  console.log(`| memoryStore heap${gc ? "" : " (run with --expose-gc for exact figures)"} | ${MB(before)} | ${MB(withIds)} (${IDS.toLocaleString("en")} ids) | ${MB(heap())} (${store.size} ids) |`);
}

}

await nodeRedis.quit();
io.disconnect();
await pool.end();
await redis.close();
await postgres.close();
