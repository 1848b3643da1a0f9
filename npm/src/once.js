// postwire/once: process each delivery once, across processes and serverless instances.
//
// The protocol every adapter (postwire/express, postwire/hono, postwire/next) and
// `processOnce` share, over a store of `webhook-id`s (memoryStore here; Redis, PostgreSQL
// and Cloudflare stores under postwire/stores/*). Each copy of a delivery:
//   1. claims its id with a random token and a lease (`leaseMs`, default 30 s);
//   2. the store answers "claimed" (run the handler), "done" (already handled: 200
//      {duplicate: true}) or "busy" (another copy holds a live lease: 409 with
//      retry-after, never 2xx: that copy's handler may still fail);
//   3. while the handler runs, the claim is renewed every third of the lease (stores with
//      `renew` and `leaseMs`: every store of this package), so a slow handler keeps it;
//   4. the handler returns: the id is marked done for `keepMs` (default 25 h, above the
//      sender's retry span), 204; it throws: the claim is released, 500, and the sender's
//      retry runs it again;
//   a store that throws or does not answer within `storeTimeoutMs`: 503 with retry-after,
//   and the handler is not run (never process without the claim).
// A process that dies mid-handler renews nothing: its claim's lease expires and the next
// retry after it runs the handler again: at least once across a crash, once otherwise. A
// claim lost all the same (renewals that did not reach the store in time, so another copy
// took the id over) is reported to `onClaimLost(event, {stage})`, by default console.warn.
// Pure JavaScript, no imports: it runs wherever the adapters do (Node, Bun, Deno, workerd).

/** How long a claim holds an id before another copy may take it over (ms). */
export const DEFAULT_LEASE_MS = 30_000;
/** How long a done id is remembered (ms): 25 h, above the postwire sender's ~23 h of retries. */
export const DEFAULT_KEEP_MS = 25 * 3600 * 1000;
/** How long one store call may take before the delivery is answered 503 (ms). */
export const DEFAULT_STORE_TIMEOUT_MS = 5_000;
/** The retry-after of a 503 (store unavailable), in seconds. */
const STORE_DOWN_RETRY_AFTER_SECONDS = 5;
/** The most ids the memory store holds; the oldest done mark is dropped beyond it, never a live claim. */
const DEFAULT_MEMORY_CAPACITY = 100_000;

/** A random claim token: 128 bits, hex. Unique per claim; it is not a secret. */
export function newToken() {
  const bytes = new Uint8Array(16);
  const crypto = globalThis.crypto;
  if (crypto && typeof crypto.getRandomValues === "function") crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/**
 * The `{ leaseMs, keepMs }` every store factory takes, checked, with the defaults.
 * `name` is the factory's, for the error message.
 */
export function storeTimes(options, name) {
  const leaseMs = options?.leaseMs ?? DEFAULT_LEASE_MS;
  const keepMs = options?.keepMs ?? DEFAULT_KEEP_MS;
  for (const [key, value] of [["leaseMs", leaseMs], ["keepMs", keepMs]]) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new TypeError(`${name}: options.${key} must be a positive whole number of milliseconds (got ${String(value)})`);
    }
  }
  return { leaseMs, keepMs };
}

/** A claim refused by a store whose room is all taken by live claims: answered 503, the sender retries. */
export class StoreFullError extends Error {
  constructor(capacity) {
    super(`the idempotency store is full: its ${capacity} ids are all live claims`);
    this.name = "StoreFullError";
    this.code = "store_full";
  }
}

/**
 * The default store: ids in this process's (or isolate's) memory. Two processes, two
 * serverless instances or two Worker isolates each have their own, so each would run the
 * handler of the same delivery: use a shared store (postwire/stores/*) there.
 * Options: `leaseMs`, `keepMs` (or the former `ttlSeconds`), `capacity` (100 000 ids: to
 * make room the oldest done mark is dropped, never a live claim, whose copy would then run
 * twice; a store full of live claims throws StoreFullError, a 503), `now` (a clock in ms, for tests).
 */
export function memoryStore(options) {
  const { leaseMs, keepMs } = storeTimes(
    { ...options, keepMs: options?.keepMs ?? (options?.ttlSeconds === undefined ? undefined : options.ttlSeconds * 1000) },
    "memoryStore",
  );
  const capacity = options?.capacity ?? DEFAULT_MEMORY_CAPACITY;
  if (!Number.isSafeInteger(capacity) || capacity < 1) throw new TypeError("memoryStore: options.capacity must be a positive whole number");
  const now = options?.now ?? Date.now;
  // Claims (id → {token, until}) and done marks (id → until), each in insertion order:
  // every claim has the same lease and every mark the same keep, so that is expiry order.
  const claims = new Map();
  const done = new Map();
  /** Room for one more id: the oldest done mark goes; only live claims left, the store is full. */
  const makeRoom = () => {
    if (claims.size + done.size < capacity) return;
    if (done.size === 0) throw new StoreFullError(capacity);
    done.delete(done.keys().next().value);
  };
  const sweep = (t) => {
    for (const [id, entry] of claims) {
      if (entry.until > t) break;
      claims.delete(id);
    }
    for (const [id, until] of done) {
      if (until > t) break;
      done.delete(id);
    }
  };
  return {
    leaseMs,
    claim(id, token) {
      const t = now();
      sweep(t);
      const until = done.get(id);
      if (until !== undefined) return { state: "done" };
      const entry = claims.get(id);
      if (entry !== undefined) return { state: "busy", retryAfterMs: entry.until - t };
      makeRoom();
      claims.set(id, { token, until: t + leaseMs });
      return { state: "claimed" };
    },
    complete(id, token) {
      const t = now();
      if (done.has(id) && done.get(id) > t) return false;
      const entry = claims.get(id);
      if (entry !== undefined && entry.until > t && entry.token !== token) return false;
      if (entry !== undefined) claims.delete(id); // its room becomes the mark's
      else if (!done.delete(id)) makeRoom();
      done.set(id, t + keepMs);
      return true;
    },
    release(id, token) {
      const entry = claims.get(id);
      if (entry === undefined || entry.token !== token) return false;
      claims.delete(id);
      return true;
    },
    /** Extends `token`'s claim of `id` to leaseMs from now; `false` when it is not (or no longer) that token's. */
    renew(id, token) {
      const entry = claims.get(id);
      if (entry === undefined || entry.token !== token) return false;
      claims.delete(id); // to the end: the latest to expire
      claims.set(id, { token, until: now() + leaseMs });
      return true;
    },
    /** How many ids are held (claimed or done, expired ones not yet swept included). */
    get size() {
      return claims.size + done.size;
    },
  };
}

/**
 * The store as the protocol calls it. A store of the former two-method interface
 * (`claim(id) → boolean`, `release(id)`) still works: `false` reads as done, so a copy
 * arriving while another is handled is answered 200 duplicate, as before.
 */
export function onceStore(store, name = "processOnce") {
  if (store === null || typeof store !== "object" || typeof store.claim !== "function" || typeof store.release !== "function") {
    throw new TypeError(`${name}: the store must have claim(id, token), complete(id, token) and release(id, token)`);
  }
  if (typeof store.complete === "function") return store;
  return {
    claim: async (id) => ((await store.claim(id)) ? { state: "claimed" } : { state: "done" }),
    complete: () => true,
    release: async (id) => {
      await store.release(id);
      return true;
    },
  };
}

/** A store call that did not answer within `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  constructor(ms) {
    super(`the idempotency store did not answer within ${ms} ms`);
    this.name = "StoreTimeoutError";
  }
}

function withTimeout(value, ms) {
  if (!(value instanceof Promise) && typeof value?.then !== "function") return value;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(ms)), ms);
  });
  return Promise.race([value, timeout]).finally(() => clearTimeout(timer));
}

const seconds = (ms) => String(Math.max(1, Math.ceil(ms / 1000)));

/** The answer when the store could not be asked: the handler did not run, the sender retries. */
function storeDown() {
  return {
    status: 503,
    headers: { "retry-after": String(STORE_DOWN_RETRY_AFTER_SECONDS) },
    json: { code: "store_unavailable", message: "the idempotency store is unavailable; the handler did not run, retry later" },
  };
}

function defaultOnError(err, event) {
  console.error(`postwire: processing ${event?.id} failed:`, err);
}

/** The default `onClaimLost`: a warning, since the delivery's handler may have run twice. */
export function defaultOnClaimLost(event, info) {
  const when =
    info.stage === "complete"
      ? "the handler returned after its lease ran out and another copy took the id over"
      : "a renewal found the claim gone while the handler ran (its lease ran out first)";
  console.warn(`postwire: the claim of ${event?.id} was lost: ${when}; another copy may run its handler too`);
}

/**
 * Runs `handler(event)` at most once at a time per `event.id`, and once in all unless a
 * process dies mid-handler, through `store`; returns the HTTP answer as
 * `{ status, json?, headers? }`:
 *   204 the handler returned (the id is done for keepMs);
 *   200 {duplicate: true} the id is done, the handler was not run;
 *   409 {code: "in_progress"} + retry-after: another copy holds a live claim;
 *   500 {code: "handler_failed"} the handler threw (the claim is released);
 *   503 {code: "store_unavailable"} + retry-after: the store threw or timed out.
 * Options: `storeTimeoutMs` (default 5000), `onError(error, event)` (handler and store
 * errors; default console.error), `onClaimLost(event, {stage: "renew" | "complete"})` (the
 * claim was lost while the handler ran, so another copy may run it too; default console.warn).
 */
export async function processOnce(event, handler, store, options) {
  if (typeof event?.id !== "string" || event.id === "") throw new TypeError("processOnce: the event must have a string id (a verified event)");
  if (typeof handler !== "function") throw new TypeError("processOnce: the handler must be a function");
  return runOnce(event, handler, onceStore(store), options?.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, options?.onError ?? defaultOnError, options?.onClaimLost ?? defaultOnClaimLost);
}

/**
 * Renews `token`'s claim of the event's id every third of the store's lease until the
 * returned function is called. A renewal that throws is tried again at the next tick (the
 * claim holds until its lease ends); one that answers false reports the lost claim and stops.
 * Stores without `renew` and `leaseMs` are not renewed.
 */
function keepClaim(event, token, store, storeTimeoutMs, onError, onClaimLost) {
  if (typeof store.renew !== "function" || !Number.isSafeInteger(store.leaseMs) || store.leaseMs < 1) return () => {};
  let stopped = false;
  let timer;
  const tick = async () => {
    let renewed;
    try {
      renewed = await withTimeout(store.renew(event.id, token), storeTimeoutMs);
    } catch (err) {
      if (!stopped) onError(err, event);
      renewed = true; // unknown: try again next time
    }
    if (stopped) return;
    if (renewed === false) {
      onClaimLost(event, { stage: "renew" });
      return;
    }
    timer = setTimeout(tick, every);
  };
  const every = Math.max(1, Math.floor(store.leaseMs / 3));
  timer = setTimeout(tick, every);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** processOnce with its arguments checked once (the adapters check theirs at creation). */
export async function runOnce(event, handler, store, storeTimeoutMs, onError, onClaimLost = defaultOnClaimLost) {
  const token = newToken();
  let claimed;
  try {
    claimed = await withTimeout(store.claim(event.id, token), storeTimeoutMs);
  } catch (err) {
    onError(err, event);
    return storeDown();
  }
  switch (claimed?.state) {
    case "claimed":
      break;
    case "done":
      return { status: 200, json: { duplicate: true } };
    case "busy":
      return {
        status: 409,
        headers: { "retry-after": seconds(claimed.retryAfterMs ?? 1000) },
        json: { code: "in_progress", message: "another copy of this delivery is being handled; retry later" },
      };
    default:
      onError(new TypeError(`the store's claim answered ${JSON.stringify(claimed)}, not {state: "claimed" | "done" | "busy"}`), event);
      return storeDown();
  }
  const stopRenewing = keepClaim(event, token, store, storeTimeoutMs, onError, onClaimLost);
  try {
    await handler(event);
  } catch (err) {
    stopRenewing();
    onError(err, event);
    try {
      await withTimeout(store.release(event.id, token), storeTimeoutMs);
    } catch (releaseErr) {
      onError(releaseErr, event); // the lease expires instead: the retry after it runs the handler
    }
    return { status: 500, json: { code: "handler_failed", message: `the handler of ${event.type ?? "the event"} failed; the sender will retry` } };
  }
  stopRenewing();
  try {
    const completed = await withTimeout(store.complete(event.id, token), storeTimeoutMs);
    if (completed === false) onClaimLost(event, { stage: "complete" });
  } catch (err) {
    // The work is done: answering an error would make the sender retry it after the lease.
    onError(err, event);
  }
  return { status: 204 };
}
