// postwire/stores/redis: the once-processing store over the application's own Redis client
// (node-redis v4 or later, or ioredis), shared by every process and instance that uses
// the same Redis. One key per `webhook-id`, `<prefix><id>`:
//   "c:<token>" with a PX of leaseMs while a copy holds the claim, "d" with a PX of keepMs once done.
// claim is one `SET key c:<token> NX PX leaseMs` (atomic); only when the key exists, a
// read-only script says whether it is done or claimed and for how long. complete, release
// and renew are Lua scripts that act only while the key holds the caller's token, so a
// copy whose lease ran out cannot release or complete the claim another copy took over.
// Redis expires every key itself: memory holds only the ids of the last keepMs.
// The scripts are the Rust receiver's too: one file each in
// crates/postwire-receiver/protocol/redis/, inlined into the package by npm/build.sh.
import { storeTimes } from "../once.js";
import PEEK from "../../../crates/postwire-receiver/protocol/redis/peek.lua";
import COMPLETE from "../../../crates/postwire-receiver/protocol/redis/complete.lua";
import RELEASE from "../../../crates/postwire-receiver/protocol/redis/release.lua";
import RENEW from "../../../crates/postwire-receiver/protocol/redis/renew.lua";

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
  const renew = script(command, RENEW);
  return {
    leaseMs,
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
    async renew(id, token) {
      return Number(await renew(prefix + id, "c:" + token, lease)) === 1;
    },
  };
}
