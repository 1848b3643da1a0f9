// The npm package's stores (npm/src/stores/*.js) acting on the store a Rust test uses:
// `node npm_interop.mjs <redis|postgres> <redis URL | pg config JSON> <claim|complete|release|renew> <id> <token>`
// prints the store's answer as JSON. Run by tests/npm_interop.rs; needs the root node_modules (npm ci).
import { register } from "node:module";
import { createClient } from "redis";
import pg from "pg";

register("./npm_protocol_loader.mjs", import.meta.url); // the shared .lua/.sql files as text
const { redisStore } = await import("../../../npm/src/stores/redis.js");
const { postgresStore } = await import("../../../npm/src/stores/postgres.js");

const [kind, target, op, id, token] = process.argv.slice(2);
let store;
let close;
if (kind === "redis") {
  const client = createClient({ url: target });
  await client.connect();
  store = redisStore(client);
  close = () => client.quit();
} else {
  const pool = new pg.Pool(JSON.parse(target));
  store = postgresStore(pool);
  close = () => pool.end();
}
const answer = await store[op](id, token);
console.log(JSON.stringify(answer));
await close();
