// Inbox mode against forward mode, in workerd through Miniflare, in one run:
//
// 1. The sender-facing answer time of a first delivery (1 KiB postwire event, an origin on
//    loopback that answers 200 at once): forward mode (KV, wrangler.toml; Durable Object,
//    wrangler.durable-object.toml), where the answer waits for the origin, and inbox mode
//    (wrangler.inbox.toml), where it waits for the object's SQL insert only. Wall time and
//    the on-CPU time of the whole workerd process (all threads, /proc schedstat: the Worker,
//    the object, Miniflare's entry worker, the storage simulators, HTTP), p50 and p99, N
//    sequential requests per mode after 50 warm-up. Delivery to the origin runs meanwhile
//    in inbox mode (it is part of what the process does).
// 2. Deliveries per second through the inbox to an instant origin: the inbox paused, M
//    deliveries accepted, resumed; the time until the origin has all of them. With no caps
//    (ORIGIN_MAX_IN_FLIGHT = 1000, ORIGIN_MAX_PER_SECOND = 0) and with the defaults (10, 0).
// 3. What one poll of the delivery loop costs with a backlog of R retrying deliveries (an
//    origin that answers 503 with retry-after: 3600, so after one attempt each waits an
//    hour): the rows one run of each poll query reads (`cursor.rowsRead`, through
//    GET /_postwire/poll-cost) and its time: the wall and workerd CPU time of a request
//    running it 10 times, less those of one running it 0 times, over 10 (the runtime's
//    clock stands still inside the object, so it is timed from outside).
//
// Usage: node worker/bench/inbox.mjs [N, default 500] [M, default 2000] [R, default 10000]
//        node worker/bench/inbox.mjs --poll-only [R]   (part 3 only)
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import { startWorker, delivery, newSecret, newId, sampleBody } from "../test/support/worker.mjs";

const POLL_ONLY = process.argv.includes("--poll-only");
const numbers = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
const [N = 500, M = 2000, R = 10_000] = POLL_ONLY ? [0, 0, numbers[0]] : numbers;
const REPEAT = 10;
const TOKEN = "bench-admin-token-0123456789abcdef";

/** The workerd process Miniflare started last (a descendant of this process). */
function findWorkerd() {
  const parents = new Map();
  const names = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      names.set(Number(d), stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")));
      parents.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const descends = (pid) => {
    for (let p = parents.get(pid), i = 0; p && i < 10; p = parents.get(p), i++) if (p === process.pid) return true;
    return false;
  };
  const found = [...names].filter(([pid, comm]) => comm.startsWith("workerd") && descends(pid)).map(([pid]) => pid);
  if (found.length !== 1) throw new Error(`expected one workerd child, found ${found.length}`);
  return found[0];
}

function cpuNs(pid) {
  let sum = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {}
  }
  return sum;
}

const pct = (values, p) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

/** An origin that answers `status` at once (with `headers`), counting the requests. */
async function startInstantOrigin(status = 200, headers = {}) {
  let count = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      count += 1;
      res.writeHead(status, { "content-type": "text/plain", ...headers });
      res.end("ok");
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks`,
    count: () => count,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

async function answerTimes(file, bindings, expectCode) {
  const worker = await startWorker(bindings, { file });
  try {
    const pid = findWorkerd();
    const cpu = [];
    const wall = [];
    const secret = bindings.WEBHOOK_SECRETS;
    for (let i = 0; i < 50 + N; i++) {
      const id = newId("bench");
      const d = delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
      const c0 = cpuNs(pid);
      const t0 = process.hrtime.bigint();
      const res = await worker.send({ headers: d.headers, body: d.body });
      const t1 = process.hrtime.bigint();
      const c1 = cpuNs(pid);
      if (res.json?.code !== expectCode) throw new Error(`${file}: expected ${expectCode}, got ${res.status} ${res.text}`);
      if (i >= 50) {
        cpu.push((c1 - c0) / 1e6);
        wall.push(Number(t1 - t0) / 1e6);
      }
    }
    return { wall: [pct(wall, 0.5), pct(wall, 0.99)], cpu: [pct(cpu, 0.5), pct(cpu, 0.99)] };
  } finally {
    await worker.dispose();
  }
}

async function throughput(origin, secret, inFlight, perSecond) {
  const worker = await startWorker(
    { WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ADMIN_TOKEN: TOKEN, ORIGIN_MAX_IN_FLIGHT: inFlight, ORIGIN_MAX_PER_SECOND: perSecond },
    { file: "wrangler.inbox.toml" },
  );
  const admin = (p) => fetch(new URL(p, worker.url()), { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
  try {
    await admin("/_postwire/pause");
    const ds = Array.from({ length: M }, () => {
      const id = newId("tp");
      return delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
    });
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < ds.length) {
          const d = ds[next++];
          const res = await worker.send({ headers: d.headers, body: d.body });
          if (res.status !== 202) throw new Error(`not accepted: ${res.text}`);
        }
      }),
    );
    const start = origin.count();
    const t0 = Date.now();
    await admin("/_postwire/resume");
    while (origin.count() - start < M) await new Promise((r) => setTimeout(r, 10));
    return (M * 1000) / (Date.now() - t0);
  } finally {
    await worker.dispose();
  }
}

/** Part 3: the poll queries' rows read and time with R retrying deliveries. */
async function pollCost(secret) {
  const origin = await startInstantOrigin(503, { "retry-after": "3600" });
  const worker = await startWorker(
    { WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ADMIN_TOKEN: TOKEN, ORIGIN_MAX_IN_FLIGHT: "1000" },
    { file: "wrangler.inbox.toml" },
  );
  const admin = async (p, method = "GET") => {
    const res = await fetch(new URL(p, worker.url()), { method, headers: { authorization: `Bearer ${TOKEN}` } });
    if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  try {
    const pid = findWorkerd();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < R) {
          next++;
          const id = newId("poll");
          const d = delivery({ secrets: [secret], id, body: sampleBody(id, 1024) });
          const res = await worker.send({ headers: d.headers, body: d.body });
          if (res.status !== 202) throw new Error(`not accepted: ${res.text}`);
        }
      }),
    );
    while ((await admin("/_postwire/counts")).counts.retrying < R) await new Promise((r) => setTimeout(r, 500));
    const timed = async (repeat) => {
      const c0 = cpuNs(pid);
      const t0 = process.hrtime.bigint();
      const answer = await admin(`/_postwire/poll-cost?repeat=${repeat}`);
      return { answer, wall: Number(process.hrtime.bigint() - t0) / 1e6, cpu: (cpuNs(pid) - c0) / 1e6 };
    };
    const rounds = [];
    for (let i = 0; i < 5; i++) rounds.push({ zero: await timed(0), many: await timed(REPEAT) });
    const per = (f) => pct(rounds.map((r) => (f(r.many) - f(r.zero)) / REPEAT), 0.5);
    return {
      polls: rounds[0].many.answer.polls,
      wallMs: per((x) => x.wall),
      cpuMs: per((x) => x.cpu),
    };
  } finally {
    await worker.dispose();
    await origin.close();
  }
}

async function main() {
  if (POLL_ONLY) {
    const cost = await pollCost(newSecret());
    printPollCost(cost);
    return;
  }
  const secret = newSecret();
  const origin = await startInstantOrigin();
  const common = { WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, VALIDATE_EVENTS: "postwire" };
  const rows = [
    ["forward, KV (wrangler.toml)", await answerTimes("wrangler.toml", common, "delivered")],
    ["forward, Durable Object (wrangler.durable-object.toml)", await answerTimes("wrangler.durable-object.toml", common, "delivered")],
    ["inbox (wrangler.inbox.toml)", await answerTimes("wrangler.inbox.toml", { ...common, ADMIN_TOKEN: TOKEN }, "accepted")],
  ];
  console.log(`## Sender-facing answer time of a first delivery (${N} sequential, 1 KiB, instant origin), ms\n`);
  console.log("| mode | wall p50 | wall p99 | workerd CPU p50 | workerd CPU p99 |\n| --- | ---: | ---: | ---: | ---: |");
  for (const [name, r] of rows) console.log(`| ${name} | ${r.wall[0].toFixed(2)} | ${r.wall[1].toFixed(2)} | ${r.cpu[0].toFixed(2)} | ${r.cpu[1].toFixed(2)} |`);
  console.log(`\n## Deliveries per second through the inbox (${M} accepted while paused, then resumed), instant origin\n`);
  console.log("| caps | deliveries/s |\n| --- | ---: |");
  for (const [inFlight, perSecond, label] of [["1000", "0", "none (ORIGIN_MAX_IN_FLIGHT = 1000, ORIGIN_MAX_PER_SECOND = 0)"], ["10", "0", "defaults (10 in flight, no rate cap)"]]) {
    console.log(`| ${label} | ${Math.round(await throughput(origin, secret, inFlight, perSecond))} |`);
  }
  await origin.close();
  printPollCost(await pollCost(secret));
  console.log(`\nMachine: ${process.platform} ${process.arch}, Node ${process.version}, ${(await import("node:os")).cpus().length} cores (shared).`);
}

function printPollCost({ polls, wallMs, cpuMs }) {
  console.log(`\n## One poll of the delivery loop with ${R} retrying deliveries (none due)\n`);
  console.log("| query | rows read | rows returned | plan |\n| --- | ---: | ---: | --- |");
  for (const p of polls) console.log(`| ${p.name} | ${p.rows_read} | ${p.rows_returned} | ${p.plan.join("; ")} |`);
  console.log(`\nBoth queries once (one poll and the next-due read): ${wallMs.toFixed(3)} ms wall, ${cpuMs.toFixed(3)} ms workerd CPU (median of 5 rounds of ${REPEAT}).`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
