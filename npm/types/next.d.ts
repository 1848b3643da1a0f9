// postwire/next: a Next.js App Router route handler (any Fetch `Request` → `Response` server).
import type { DeliveryStore, EventHandlers, HandlerOptions, MemoryStore, MemoryStoreOptions, OnceStore } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions, OnceStore };
export { processOnce } from "postwire/once";

/** The default store: ids in this process's memory only (100 000 ids; claims 30 s, done ids 25 h). */
export declare function memoryStore(options?: MemoryStoreOptions): MemoryStore;

/**
 * In app/webhooks/route.ts: `export const POST = createHandler({ "post.published": async (event) => ... }, { secret: process.env.WEBHOOK_SECRET! })`.
 * Also a `Bun.serve({ fetch })`, `Deno.serve()` or Worker `fetch` handler. Answers as
 * `postwire/express` does (400, 202, 200 duplicate, 204, 409, 500, 503).
 */
export declare function createHandler(handlers: EventHandlers, options: HandlerOptions): (request: Request) => Promise<Response>;

/**
 * Another provider's webhooks: `createHandler({ "invoice.paid": (event) => ... }, { provider: stripe, secret })`
 * with `import * as stripe from "postwire/providers/stripe"`. Slack's `url_verification` and
 * Discord's `PING` are answered at once; each delivery is processed once by its id.
 */
export declare function createHandler(
  handlers: import("postwire/providers").ProviderHandlers,
  options: import("postwire/providers").ProviderHandlerOptions,
): (request: Request) => Promise<Response>;
