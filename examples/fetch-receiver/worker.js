// @ts-check
// The same Fetch handler as a Cloudflare Worker: `wrangler deploy` bundles this file (the
// `postwire` package's `workerd` build, with its .wasm imported as a module). The secret
// is a Worker secret: `wrangler secret put POSTWIRE_WEBHOOK_SECRET`.
//
// The ReplayGuard inside lives per isolate; for de-duplication across isolates and
// locations use KV or a Durable Object (the postwire edge Worker in worker/ does this).
import { createWebhookHandler } from "./handler.js";

/** @type {((request: Request) => Promise<Response>) | undefined} */
let handler;

export default {
  /** @param {Request} request @param {{ POSTWIRE_WEBHOOK_SECRET: string }} env */
  async fetch(request, env) {
    handler ??= createWebhookHandler({
      secret: env.POSTWIRE_WEBHOOK_SECRET,
      onEvent: (event) => {
        // Your handling goes here (e.g. write to D1, enqueue to a Queue).
        console.log(`${event.type} ${event.id}`);
      },
    });
    return handler(request);
  },
};
