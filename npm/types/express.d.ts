// postwire/express: an Express (4 or 5) middleware that verifies, de-duplicates and dispatches deliveries.
import type { DeliveryStore, EventHandlers, HandlerOptions, ReplayGuardOptions } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions };

/** The default store: handled ids in memory (a `ReplayGuard`: 100 000 ids, 25 h each). */
export declare function memoryStore(options?: ReplayGuardOptions): DeliveryStore;

export interface ExpressHandlerOptions extends HandlerOptions {
  /** The largest body read, in bytes (413 beyond). Default 1 MiB. */
  limit?: number;
}

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
 * handled, 204 when the handler returned, 500 when it threw (the sender retries), and 500
 * `raw_body_unavailable` (with the fix) when `express.json()` consumed the body first.
 */
export declare function createHandler(
  handlers: EventHandlers,
  options: ExpressHandlerOptions,
): (req: RequestLike, res: ResponseLike, next?: (error?: unknown) => void) => void;
