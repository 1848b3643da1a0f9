// postwire/stores/cloudflare: once-processing over a Worker's D1, Durable Object or KV binding.
import type { OnceStore, StoreTimes } from "postwire";

export type { OnceStore, StoreTimes };

/** The parts of a D1 database binding the store uses. */
export interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): any };
  batch(statements: any[]): Promise<any[]>;
}

/** The parts of a Durable Object namespace binding the store uses. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: any): { fetch(input: string, init?: RequestInit): Promise<Response> };
}

/** The parts of a KV namespace binding the store uses. */
export interface KVLike {
  get(key: string, type: "json"): Promise<unknown>;
  put(key: string, value: string, options?: { expirationTtl?: number }): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface D1StoreOptions extends StoreTimes {
  /** The table (created on first use). Default `"postwire_once"`. */
  table?: string;
  /** Every this many claims of this store object, expired rows are deleted. Default 1000. */
  sweepEvery?: number;
  /** The most expired rows one sweep deletes. Default 1000. */
  sweepLimit?: number;
}

export interface PrefixOptions extends StoreTimes {
  /** Put before each id (a Durable Object's name, a KV key). */
  prefix?: string;
}

/** The SQL that creates the D1 table and its index. */
export declare function d1Schema(table: string): string[];

/** Strong: one D1 row per id, claimed in one batch (a transaction). */
export declare function d1Store(db: D1Like, options?: D1StoreOptions): OnceStore;

/** Strict: one `PostwireOnceObject` per id (requests to it run one at a time). */
export declare function durableObjectStore(namespace: DurableObjectNamespaceLike, options?: PrefixOptions): OnceStore;

/**
 * Best effort: KV has no compare-and-set and shows a write elsewhere only within about
 * 60 s, so two copies at different locations within that window can both run.
 */
export declare function kvStore(kv: KVLike, options?: PrefixOptions): OnceStore;

/** The Durable Object class of `durableObjectStore`: export it from the Worker and bind it. */
export declare class PostwireOnceObject {
  constructor(state: { storage: any }, env?: unknown);
  fetch(request: Request): Promise<Response>;
  alarm(): Promise<void>;
}
