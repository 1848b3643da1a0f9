// postwire/next: a Next.js App Router route handler (any Fetch `Request` → `Response` server).
import type { DeliveryStore, EventHandlers, HandlerOptions, ReplayGuardOptions } from "postwire";

export type { DeliveryStore, EventHandlers, HandlerOptions };

/** The default store: handled ids in memory (a `ReplayGuard`: 100 000 ids, 25 h each). */
export declare function memoryStore(options?: ReplayGuardOptions): DeliveryStore;

/**
 * In app/webhooks/route.ts: `export const POST = createHandler({ "post.published": async (event) => ... }, { secret: process.env.WEBHOOK_SECRET! })`.
 * Also a `Bun.serve({ fetch })`, `Deno.serve()` or Worker `fetch` handler. Answers as
 * `postwire/express` does (400, 202, 200 duplicate, 204, 500).
 */
export declare function createHandler(handlers: EventHandlers, options: HandlerOptions): (request: Request) => Promise<Response>;
