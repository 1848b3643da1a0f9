// postwire/hono: a Hono handler that verifies, de-duplicates and dispatches deliveries.
import type { DeliveryStore, EventHandlers, HandlerOptions, ReplayGuardOptions } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions };

/** The default store: handled ids in memory (a `ReplayGuard`: 100 000 ids, 25 h each). */
export declare function memoryStore(options?: ReplayGuardOptions): DeliveryStore;

/** The parts of Hono's `Context` the handler uses. */
export interface ContextLike {
  req: { arrayBuffer(): Promise<ArrayBuffer>; raw: { headers: Headers } };
  json(object: any, status?: any): Response;
  body(data: null, status?: any): Response;
}

/**
 * `app.post("/webhooks", createHandler({ "post.published": (event) => ... }, { secret }))`.
 * Answers as `postwire/express` does (400, 202, 200 duplicate, 204, 500).
 */
export declare function createHandler(handlers: EventHandlers, options: HandlerOptions): (c: ContextLike) => Promise<Response>;
