// The once-processing types through `require` (the .d.cts files of postwire/once and postwire/stores/*).
import once = require("postwire/once");
import redis = require("postwire/stores/redis");
import postgres = require("postwire/stores/postgres");
import cloudflare = require("postwire/stores/cloudflare");

const memory: once.OnceStore = once.memoryStore({ leaseMs: 1000 });
declare const client: redis.NodeRedisLike;
declare const pool: postgres.PgQueryable;
declare const db: cloudflare.D1Like;
const all: once.OnceStore[] = [memory, redis.redisStore(client), postgres.postgresStore(pool), cloudflare.d1Store(db)];
// @ts-expect-error: leaseMs is a number of milliseconds
once.memoryStore({ leaseMs: "30s" });
export = all;
