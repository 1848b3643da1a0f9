// postwire/stores/redis: once-processing over the application's node-redis (v4+) or ioredis client.
import type { OnceStore, StoreTimes } from "postwire";

export type { OnceStore, StoreTimes };

/** A node-redis client (v4 or later): its raw-command call. */
export interface NodeRedisLike {
  sendCommand(args: string[]): Promise<unknown>;
}

/** An ioredis client: its raw-command call. */
export interface IoRedisLike {
  call(command: string, ...args: string[]): Promise<unknown>;
}

export interface RedisStoreOptions extends StoreTimes {
  /** Put before each id to make its key. Default `"postwire:once:"`. */
  prefix?: string;
}

/**
 * The store over `client`, connected by the application (never opened or closed here):
 * `SET key NX PX leaseMs` to claim, Lua scripts that check the claim's token to complete
 * (`PX keepMs`) and release. Strong across every process on the same Redis primary.
 */
export declare function redisStore(client: NodeRedisLike | IoRedisLike, options?: RedisStoreOptions): OnceStore;
