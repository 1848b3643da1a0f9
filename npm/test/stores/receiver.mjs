// One receiving process for the multi-process store tests: postwire/express's handler
// (served by Node's own HTTP server) over a shared store given by the environment:
//   STORE=redis-node | redis-io  REDIS_URL   (node-redis or ioredis; each process its own client)
//   STORE=postgres               PG_CONFIG   (JSON for a pg Pool)
//   RUNS                         a file: each handler run appends "<pid> <id>"
//   LEASE_MS                     the store's lease
// The handler of webhook.test acts on the event's message: "sleep:<ms>" sleeps then
// returns; "gated" waits until the test answers POST /gate/<id>?outcome=ok|throw. Prints
// {"url": ...} once listening.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { createHandler } from "postwire/express";

const require = createRequire(new URL("../../../package.json", import.meta.url));
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const leaseMs = Number(process.env.LEASE_MS);

async function makeStore() {
  const kind = process.env.STORE;
  if (kind === "redis-node") {
    const { redisStore } = await import("postwire/stores/redis");
    const client = require("redis").createClient({ url: process.env.REDIS_URL });
    client.on("error", () => {}); // reconnects by itself; the store's calls fail meanwhile (503)
    await client.connect();
    return redisStore(client, { leaseMs });
  }
  if (kind === "redis-io") {
    const { redisStore } = await import("postwire/stores/redis");
    const IoRedis = require("ioredis");
    const client = new IoRedis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 });
    client.on("error", () => {});
    return redisStore(client, { leaseMs });
  }
  if (kind === "postgres") {
    const { postgresStore } = await import("postwire/stores/postgres");
    const pool = new (require("pg").Pool)({ ...JSON.parse(process.env.PG_CONFIG), max: 20 });
    pool.on("error", () => {}); // an idle connection cut by a restart; the next query reconnects
    return postgresStore(pool, { leaseMs });
  }
  throw new Error(`STORE=${kind}?`);
}

const gates = new Map(); // id → resolve(outcome)
const handler = createHandler(
  {
    "webhook.test": async (event) => {
      appendFileSync(process.env.RUNS, `${process.pid} ${event.id}\n`);
      const message = event.data.message;
      if (message.startsWith("sleep:")) return sleep(Number(message.slice(6)));
      if (message === "gated") {
        const outcome = await new Promise((resolve) => gates.set(event.id, resolve));
        gates.delete(event.id);
        if (outcome === "throw") throw new Error("the handler failed");
      }
    },
  },
  { secret: SECRET, store: await makeStore(), storeTimeoutMs: 1_000, onError: () => {} },
);

const server = createServer((req, res) => {
  const gate = /^\/gate\/([^?]+)\?outcome=(ok|throw)$/.exec(req.url);
  if (gate) {
    const open = gates.get(decodeURIComponent(gate[1]));
    res.statusCode = open ? 204 : 404;
    open?.(gate[2]);
    return res.end();
  }
  handler(req, res);
});
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }));
});
