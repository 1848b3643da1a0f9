// postwire/hono: a Hono handler that verifies, de-duplicates and dispatches deliveries.
import type { DeliveryStore, EventHandlers, HandlerOptions, MemoryStore, MemoryStoreOptions, OnceStore } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions, OnceStore };
export { processOnce } from "postwire/once";

/** The default store: ids in this process's memory only (100 000 ids; claims 30 s, done ids 25 h). */
export declare function memoryStore(options?: MemoryStoreOptions): MemoryStore;

/** The parts of Hono's `Context` the handler uses. */
export interface ContextLike {
  req: { arrayBuffer(): Promise<ArrayBuffer>; raw: { headers: Headers } };
  json(object: any, status?: any, headers?: Record<string, string>): Response;
  body(data: null, status?: any, headers?: Record<string, string>): Response;
}

/**
 * `app.post("/webhooks", createHandler({ "post.published": (event) => ... }, { secret }))`.
 * Answers as `postwire/express` does (400, 202, 200 duplicate, 204, 409, 500, 503).
 */
export declare function createHandler(handlers: EventHandlers, options: HandlerOptions): (c: ContextLike) => Promise<Response>;

/**
 * Another provider's webhooks: `createHandler({ "invoice.paid": (event) => ... }, { provider: stripe, secret })`
 * with `import * as stripe from "postwire/providers/stripe"`. Slack's `url_verification` and
 * Discord's `PING` are answered at once; each delivery is processed once by its id.
 */
export declare function createHandler(
  handlers: import("postwire/providers").ProviderHandlers,
  options: import("postwire/providers").ProviderHandlerOptions,
): (c: ContextLike) => Promise<Response>;
