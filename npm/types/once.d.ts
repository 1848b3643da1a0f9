// postwire/once: process each delivery once (the protocol the adapters use), framework-free.
import type { ClaimLost, ClaimResult, MemoryStore, MemoryStoreOptions, OnceAnswer, OnceStore, DeliveryStore, ProcessOnceOptions, StoreTimes } from "postwire";

export type { ClaimLost, ClaimResult, MemoryStore, MemoryStoreOptions, OnceAnswer, OnceStore, DeliveryStore, ProcessOnceOptions, StoreTimes };

/** A claim refused by a memory store whose room is all taken by live claims (a 503). */
export declare class StoreFullError extends Error {
  readonly name: "StoreFullError";
  /** `"store_full"`. */
  readonly code: "store_full";
}

/** The default `onClaimLost`: a `console.warn` naming the delivery's id and the stage. */
export declare function defaultOnClaimLost(event: { id: string; type?: string | null }, info: ClaimLost): void;

/** The default lease, in ms (30 s). */
export declare const DEFAULT_LEASE_MS: number;
/** The default time a done id is kept, in ms (25 h). */
export declare const DEFAULT_KEEP_MS: number;
/** The default time one store call may take before a 503, in ms (5 s). */
export declare const DEFAULT_STORE_TIMEOUT_MS: number;

/**
 * The in-memory store: ids in this process's (or isolate's) memory only. Two processes or
 * serverless instances each have their own, and both run a delivery's handler: use a
 * shared store (`postwire/stores/*`) there.
 */
export declare function memoryStore(options?: MemoryStoreOptions): MemoryStore;

/**
 * Runs `handler(event)` once per `event.id` through `store`, and returns the HTTP answer:
 * 204 (handled; the id is done for keepMs), 200 `{duplicate: true}` (done before; not run),
 * 409 `in_progress` with `retry-after` (another copy holds a live claim; not run),
 * 500 `handler_failed` (it threw; the claim is released so the retry runs it),
 * 503 `store_unavailable` with `retry-after` (the store threw or timed out; not run).
 * `event` is a verified event (`webhook.verifyEvent(...)`), or anything with its `id`.
 */
export declare function processOnce<E extends { id: string; type?: string | null }>(
  event: E,
  handler: (event: E) => unknown,
  store: OnceStore | DeliveryStore,
  options?: ProcessOnceOptions,
): Promise<OnceAnswer>;
