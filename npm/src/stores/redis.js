// postwire/stores/redis: the once-processing store over the application's own Redis client
// (node-redis v4 or later, or ioredis), shared by every process and instance that uses
// the same Redis. One key per `webhook-id`, `<prefix><id>`:
//   "c:<token>" with a PX of leaseMs while a copy holds the claim, "d" with a PX of keepMs once done.
// claim is one `SET key c:<token> NX PX leaseMs` (atomic); only when the key exists, a
// read-only script says whether it is done or claimed and for how long. complete and
// release are Lua scripts that act only while the key holds the caller's token, so a
// copy whose lease ran out cannot release or complete the claim another copy took over.
// Redis expires every key itself: memory holds only the ids of the last keepMs.
import { storeTimes } from "../once.js";

/** The key's state and time left: {1, ms} claimed, {2, ms} done, {0} gone. */
const PEEK = `local v = redis.call('GET', KEYS[1])
if not v then return {0, 0} end
local ms = redis.call('PTTL', KEYS[1])
if v == 'd' then return {2, ms} end
return {1, ms}`;
/** Done for ARGV[2] ms, unless another copy's claim or a done mark holds the key. */
const COMPLETE = `local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], 'd', 'PX', ARGV[2])
return 1`;
/** Deletes the key only while it holds the caller's claim. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Redis's command names and arguments as strings, through either client's raw-command call. */
function rawCommand(client) {
  if (typeof client?.call === "function") return (args) => client.call(...args); // ioredis
  if (typeof client?.sendCommand === "function") return (args) => client.sendCommand(args); // node-redis
  throw new TypeError("redisStore: the client must be a node-redis (v4+) or ioredis client");
}

/** A script run by its SHA1 (EVALSHA), loaded again (EVAL) after a NOSCRIPT (a restarted or flushed Redis). */
function script(command, source) {
  let sha = null;
  return async (key, ...args) => {
    if (sha !== null) {
      try {
        return await command(["EVALSHA", sha, "1", key, ...args]);
      } catch (err) {
        if (!String(err?.message).startsWith("NOSCRIPT")) throw err;
      }
    }
    const result = await command(["EVAL", source, "1", key, ...args]);
    sha ??= await command(["SCRIPT", "LOAD", source]);
    return result;
  };
}

/**
 * The store over `client` (connected by the application; this store never opens or closes
 * it). Options: `leaseMs` (30 s), `keepMs` (25 h), `prefix` (`"postwire:once:"`).
 */
export function redisStore(client, options) {
  const command = rawCommand(client);
  const { leaseMs, keepMs } = storeTimes(options, "redisStore");
  const prefix = options?.prefix ?? "postwire:once:";
  if (typeof prefix !== "string") throw new TypeError("redisStore: options.prefix must be a string");
  const lease = String(leaseMs);
  const keep = String(keepMs);
  const peek = script(command, PEEK);
  const complete = script(command, COMPLETE);
  const release = script(command, RELEASE);
  return {
    async claim(id, token) {
      const key = prefix + id;
      // A key that expires between the SET and the peek is claimed again; twice at most.
      for (let attempt = 0; attempt < 3; attempt++) {
        if ((await command(["SET", key, "c:" + token, "NX", "PX", lease])) === "OK") return { state: "claimed" };
        const [state, ms] = (await peek(key)).map(Number);
        if (state === 2) return { state: "done" };
        if (state === 1) return { state: "busy", retryAfterMs: ms > 0 ? ms : leaseMs };
      }
      return { state: "busy", retryAfterMs: 1000 };
    },
    async complete(id, token) {
      return Number(await complete(prefix + id, "c:" + token, keep)) === 1;
    },
    async release(id, token) {
      return Number(await release(prefix + id, "c:" + token)) === 1;
    },
  };
}
