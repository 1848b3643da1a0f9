// postwire/express: an Express (4 or 5) middleware that verifies, de-duplicates and dispatches deliveries.
import type { DeliveryStore, EventHandlers, HandlerOptions, MemoryStore, MemoryStoreOptions, OnceStore } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions, OnceStore };
export { processOnce } from "postwire/once";

/** The default store: ids in this process's memory only (100 000 ids; claims 30 s, done ids 25 h). */
export declare function memoryStore(options?: MemoryStoreOptions): MemoryStore;

export type ExpressHandlerOptions = HandlerOptions & {
  /** The largest body read, in bytes (413 beyond). Default 1 MiB. */
  limit?: number;
};

/** The parts of Express's request the middleware uses (a Node `IncomingMessage`). */
export interface RequestLike extends AsyncIterable<Uint8Array | string> {
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/** The parts of Express's response the middleware uses (a Node `ServerResponse`). */
export interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(chunk?: string): unknown;
}

/**
 * `app.post("/webhooks", createHandler({ "post.published": (event) => ... }, { secret }))`.
 * Reads the raw body itself (no body parser needed; after `express.raw()` or
 * `express.text()` it uses theirs). Answers: 400 `{code, message}` when the delivery does
 * not verify, 202 for a type without a handler, 200 `{duplicate: true}` for an id already
 * handled, 409 `in_progress` (with `retry-after`) while another copy is being handled, 204
 * when the handler returned, 500 when it threw (the sender retries), 503
 * `store_unavailable` (with `retry-after`) when the store could not be asked, and 500
 * `raw_body_unavailable` (with the fix) when `express.json()` consumed the body first.
 */
export declare function createHandler(
  handlers: EventHandlers,
  options: ExpressHandlerOptions,
): (req: RequestLike, res: ResponseLike, next?: (error?: unknown) => void) => void;

/**
 * Another provider's webhooks: `createHandler({ "invoice.paid": (event) => ... }, { provider: stripe, secret })`
 * with `import * as stripe from "postwire/providers/stripe"`. Slack's `url_verification` and
 * Discord's `PING` are answered at once; each delivery is processed once by its id.
 */
export declare function createHandler(
  handlers: import("postwire/providers").ProviderHandlers,
  options: import("postwire/providers").ProviderHandlerOptions & { limit?: number },
): (req: RequestLike, res: ResponseLike, next?: (error?: unknown) => void) => void;
