// postwire/hono: `app.post("/webhooks", createHandler({ "post.published": (event) => ... }, { secret }))`.
// On every runtime Hono runs on (Node, Bun, Deno, Workers): the raw body comes from
// `c.req.arrayBuffer()`, which Hono caches, so a middleware that read the body before
// does not break the signature.
import { createDispatcher, memoryStore } from "./core.js";

export { memoryStore };
export { processOnce } from "../once.js";

/** A Hono handler that verifies, de-duplicates and dispatches a delivery (answers: see core.js). */
export function createHandler(handlers, options) {
  const dispatch = createDispatcher(handlers, options);
  return async function postwireWebhooks(c) {
    const body = new Uint8Array(await c.req.arrayBuffer());
    const { status, json, headers } = await dispatch(body, c.req.raw.headers);
    return json === undefined ? c.body(null, status, headers) : c.json(json, status, headers);
  };
}
