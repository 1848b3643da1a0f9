// The once-processing types: postwire/once, each store's factory against the real clients'
// own types (node-redis, ioredis), and a user's own store written to the OnceStore interface.
import { createClient } from "redis";
import { Redis } from "ioredis";
import { processOnce, memoryStore, type OnceStore, type ClaimResult, type OnceAnswer } from "postwire/once";
import { redisStore } from "postwire/stores/redis";
import { postgresStore, type PgQueryable } from "postwire/stores/postgres";
import { d1Store, durableObjectStore, kvStore, PostwireOnceObject } from "postwire/stores/cloudflare";
import { createHandler } from "postwire/next";

const nodeRedis = createClient({ url: "redis://127.0.0.1:6379" });
const io = new Redis();
const stores: OnceStore[] = [
  redisStore(nodeRedis, { leaseMs: 30_000, keepMs: 90_000_000, prefix: "app:" }),
  redisStore(io),
  memoryStore({ capacity: 10, now: () => 0 }),
];
// @ts-expect-error: not a Redis client
redisStore({ get() {} });
declare const pool: PgQueryable;
const pgStore = postgresStore(pool, { table: "once", sweepEvery: 100 });
const swept: Promise<number> = pgStore.sweep();
// @ts-expect-error: the table is a string
postgresStore(pool, { table: 1 });

// A store of one's own.
const taken = new Map<string, string | null>();
const mine: OnceStore = {
  claim(id, token): ClaimResult {
    const holder = taken.get(id);
    if (holder === undefined) return taken.set(id, token), { state: "claimed" };
    return holder === null ? { state: "done" } : { state: "busy", retryAfterMs: 1000 };
  },
  complete: async (id, token) => taken.get(id) === token && (taken.set(id, null), true),
  release: (id, token) => taken.get(id) === token && taken.delete(id),
};
// @ts-expect-error: "busy" needs its retryAfterMs
const wrong: ClaimResult = { state: "busy" };

const answer: Promise<OnceAnswer> = processOnce({ id: "msg_1", type: "webhook.test" }, async (event) => event.id.length, mine, { storeTimeoutMs: 1000 });
export const POST = createHandler({ "webhook.test": () => {} }, { secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", store: mine, storeTimeoutMs: 2000 });

declare const env: { DB: any; ONCE: any; KV: any };
const cloudflare: OnceStore[] = [d1Store(env.DB, { table: "once" }), durableObjectStore(env.ONCE, { prefix: "a:" }), kvStore(env.KV)];
export { PostwireOnceObject, stores, swept, wrong, answer, cloudflare };
