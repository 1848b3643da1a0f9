// Listen mode's cost, in workerd through Miniflare, in one run: the sender-facing answer
// time of a first delivery (1 KiB event, KV mode's wrangler.toml) forwarded to an instant
// origin on loopback, against the same delivery relayed through the ListenObject and
// `postwire listen` (POSTWIRE_CLI) to an instant local endpoint; p50 and p99 of N
// sequential requests after 50 warm-up; then deliveries per second through the relay with
// 20 senders at once (M deliveries).
//
// Usage: POSTWIRE_CLI=target/debug/postwire node worker/bench/listen.mjs [N, default 300] [M, default 1000]
import http from "node:http";
import { spawn } from "node:child_process";
import { startWorker, delivery, newId, newSecret, sampleBody } from "../test/support/worker.mjs";

const [N = 300, M = 1000] = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
const CLI = process.env.POSTWIRE_CLI;
if (!CLI) throw new Error("set POSTWIRE_CLI to the postwire binary");
const TOKEN = "bench-listen-token-0123456789";
const secret = newSecret();

async function instantServer() {
  let count = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      count += 1;
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/webhooks`, count: () => count, close: () => server.close() };
}

const oneKiB = (id) => sampleBody(id, 1024);
const pct = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

async function timed(worker, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const id = newId("bench");
    const d = delivery({ secrets: [secret], id, body: oneKiB(id) });
    const t = performance.now();
    const res = await worker.send({ headers: d.headers, body: d.body });
    times.push(performance.now() - t);
    if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
  }
  return times;
}

const origin = await instantServer();
const local = await instantServer();

const forward = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url });
await timed(forward, 50);
const direct = await timed(forward, N);
await forward.dispose();

const relayed = await startWorker({ WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, LISTEN_TOKEN: TOKEN });
const cli = spawn(CLI, ["listen", "--worker", relayed.url().toString(), "--forward", local.url, "--json"], {
  env: { ...process.env, POSTWIRE_LISTEN_TOKEN: TOKEN },
  stdio: ["ignore", "ignore", "pipe"],
});
await new Promise((resolve) => {
  let err = "";
  cli.stderr.on("data", (d) => {
    err += d;
    if (err.includes("connected to")) resolve();
  });
});
await timed(relayed, 50);
const viaListener = await timed(relayed, N);

const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 20 }, async () => {
    while (next < M) {
      next += 1;
      const d = delivery({ secrets: [secret] });
      const res = await relayed.send({ headers: d.headers, body: d.body });
      if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
cli.kill("SIGKILL");
await relayed.dispose();
origin.close();
local.close();

const row = (name, xs) => `| ${name} | ${pct(xs, 50).toFixed(2)} ms | ${pct(xs, 99).toFixed(2)} ms |`;
console.log(`| path (${N} sequential, 1 KiB) | p50 | p99 |\n| --- | ---: | ---: |`);
console.log(row("forward mode → origin", direct));
console.log(row("listen mode → ListenObject → postwire listen → local endpoint", viaListener));
console.log(`\nthrough the relay, 20 senders at once: ${M} deliveries in ${seconds.toFixed(2)} s = ${(M / seconds).toFixed(0)} deliveries/s`);
