// @ts-check
// A webhook receiver in Express, with the `postwire` npm package.
//
// The three things that matter, in order:
//   1. Verify the RAW body. `express.json()` parses and throws away the bytes that were
//      signed; re-serializing the parsed object does not give them back. So the webhook
//      route uses `express.raw()` (for every content type: the signature, not the
//      content-type header, says what the body is), and `req.body` is a Buffer.
//   2. De-duplicate by `webhook-id`. Delivery is at least once: the sender retries until
//      it gets a 2xx, so the same event can arrive again. Answer 200 to a duplicate (or it
//      is retried for a day), but do not handle it twice.
//   3. Answer quickly: 2xx within 10 seconds. If your handling fails, answer 5xx and
//      forget the id, so the sender's retry is handled.
import express from "express";
import { Webhook, WebhookVerificationError, ReplayGuard } from "postwire";
import { describe } from "../shared/describe-event.js";

/** @typedef {import("postwire").WebhookEvent} WebhookEvent */

/**
 * @param {object} options
 * @param {string} options.secret the subscription's `whsec_…` secret (from the environment, never from code)
 * @param {(event: WebhookEvent) => Promise<void> | void} options.onEvent your handling of a verified, first-time event
 * @param {(line: string) => void} [options.log]
 * @param {string} [options.path]
 */
export function createApp({ secret, onEvent, log = console.log, path = "/webhooks/postwire" }) {
  const webhook = new Webhook(secret); // throws `invalid_secret` at startup, not per request
  // In memory: right for one process. With several instances, de-duplicate in a shared
  // store instead (e.g. a unique key on the event id in your database).
  const seen = new ReplayGuard();
  const app = express();
  app.disable("x-powered-by");

  app.post(path, express.raw({ type: () => true, limit: "1mb" }), async (req, res) => {
    // With no body at all, express.raw() leaves req.body undefined.
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    /** @type {WebhookEvent} */
    let event;
    try {
      // Headers, timestamp (5 minutes either way), signature, then the event's shape.
      event = webhook.verifyEvent(body, req.headers);
    } catch (err) {
      if (err instanceof WebhookVerificationError) {
        // The code is stable; the message explains, and never contains the secret.
        log(`webhook refused: ${err.code}`);
        return void res.status(400).json({ statusCode: 400, code: err.code, message: err.message });
      }
      throw err;
    }

    if (seen.checkAndRecord(event.id) === "duplicate") {
      log(`webhook ${event.id}: duplicate, acknowledged`);
      return void res.status(200).json({ received: true, duplicate: true });
    }
    try {
      await onEvent(event);
    } catch (err) {
      seen.forget(event.id); // so the sender's retry is handled
      log(`webhook ${event.id}: handler failed: ${err instanceof Error ? err.message : err}`);
      return void res.status(500).json({ statusCode: 500, code: "handler_failed", message: "handling the event failed; it will be retried" });
    }
    log(`webhook ${event.id}: ${describe(event)}`);
    res.status(200).json({ received: true, duplicate: false });
  });

  // Anything else: a JSON 404, and JSON for errors (e.g. 413 from express.raw's limit).
  app.use((req, res) => {
    res.status(404).json({ statusCode: 404, code: "not_found", message: `no route for ${req.method} ${req.path}` });
  });
  /**
   * Four parameters: Express recognizes an error handler by its arity.
   * @param {any} err @param {express.Request} _req @param {express.Response} res @param {express.NextFunction} _next
   */
  function onError(err, _req, res, _next) {
    const status = err?.type === "entity.too.large" ? 413 : typeof err?.status === "number" && err.status < 500 ? err.status : 500;
    const code = status === 413 ? "payload_too_large" : status < 500 ? "invalid_request" : "internal_error";
    if (status >= 500) log(`webhook route error: ${err instanceof Error ? err.message : err}`);
    res.status(status).json({ statusCode: status, code, message: status === 413 ? "the body is larger than 1 MiB" : "the request could not be processed" });
  }
  app.use(onError);
  return app;
}
