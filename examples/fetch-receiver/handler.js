// @ts-check
// A webhook receiver as a Fetch-API handler, `(request: Request) => Promise<Response>`,
// with the `postwire` npm package. This one shape runs unchanged in:
//   Next.js (App Router)  app/api/webhooks/route.js:  export const POST = createWebhookHandler({...})
//   Hono                  app.post("/webhooks", (c) => handler(c.req.raw))
//   Bun                   Bun.serve({ fetch: handler })
//   Deno                  Deno.serve(handler)
//   Cloudflare Workers    export default { fetch: handler }
//   Node                  through @hono/node-server (server.js)
//
// As in every receiver: verify the raw bytes (read the body once, as bytes, never via
// request.json()), de-duplicate by `webhook-id`, answer 2xx within 10 seconds, and answer
// 5xx (forgetting the id) when your handling fails so the sender retries.
import { Webhook, WebhookVerificationError, ReplayGuard } from "postwire";

/** @typedef {import("postwire").WebhookEvent} WebhookEvent */

const MAX_BODY_BYTES = 1024 * 1024;

/** @param {number} status @param {object} body */
const json = (status, body) => Response.json(body, { status });
/** @param {number} status @param {string} code @param {string} message */
const error = (status, code, message) => json(status, { statusCode: status, code, message });

/**
 * @param {object} options
 * @param {string} options.secret the subscription's `whsec_…` secret (from the environment)
 * @param {(event: WebhookEvent) => Promise<void> | void} options.onEvent your handling of a verified, first-time event
 * @param {(line: string) => void} [options.log]
 * @returns {(request: Request) => Promise<Response>}
 */
export function createWebhookHandler({ secret, onEvent, log = console.log }) {
  const webhook = new Webhook(secret); // a bad secret fails here, at startup
  // Per process (or per isolate on the edge). Several instances need a shared store,
  // e.g. a unique key on the event id in your database, or the postwire Worker's KV.
  const seen = new ReplayGuard();

  return async function handleWebhook(request) {
    if (request.method !== "POST") {
      return error(405, "method_not_allowed", "webhooks are delivered with POST");
    }
    // Refuse an announced oversized body before reading it, then check what was read.
    if (Number(request.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
      return error(413, "payload_too_large", "the body is larger than 1 MiB");
    }
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.byteLength > MAX_BODY_BYTES) {
      return error(413, "payload_too_large", "the body is larger than 1 MiB");
    }

    /** @type {WebhookEvent} */
    let event;
    try {
      event = webhook.verifyEvent(body, request.headers);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      log(`webhook refused: ${err.code}`);
      return error(400, err.code, err.message);
    }

    if (seen.checkAndRecord(event.id) === "duplicate") {
      log(`webhook ${event.id}: duplicate, acknowledged`);
      return json(200, { received: true, duplicate: true });
    }
    try {
      await onEvent(event);
    } catch (err) {
      seen.forget(event.id);
      log(`webhook ${event.id}: handler failed: ${err instanceof Error ? err.message : err}`);
      return error(500, "handler_failed", "handling the event failed; it will be retried");
    }
    log(`webhook ${event.id}: ${event.type} handled`);
    return json(200, { received: true, duplicate: false });
  };
}
