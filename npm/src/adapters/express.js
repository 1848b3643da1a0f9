// postwire/express: `app.post("/webhooks", createHandler({ "post.published": (event) => ... }, { secret }))`.
//
// The middleware reads the raw body itself, so nothing needs configuring: it works with no
// body parser, after `express.raw()` (a Buffer) or `express.text()` (a string) on the
// route. After `express.json()` the raw bytes are gone (the signature covers them), so it
// answers 500 with a message saying what to change, rather than failing every delivery
// as a bad signature.
import { createDispatcher, memoryStore } from "./core.js";

export { memoryStore };
export { processOnce } from "../once.js";

/** Bodies larger than this are refused (413) before they are read in full. */
const DEFAULT_LIMIT = 1024 * 1024;

/**
 * An Express middleware (Express 4 and 5) that verifies the delivery, de-duplicates it by
 * `webhook-id` in `options.store` (in memory by default) and calls the handler of its type.
 * See core.js for the answers.
 */
export function createHandler(handlers, options) {
  const dispatch = createDispatcher(handlers, options);
  const limit = options?.limit ?? DEFAULT_LIMIT;
  return function postwireWebhooks(req, res, next) {
    rawBody(req, limit).then(
      async (body) => {
        if (body === null) {
          return send(res, 413, { code: "payload_too_large", message: `the body is over ${limit} bytes (options.limit)` });
        }
        const { status, json, headers } = await dispatch(body, req.headers);
        send(res, status, json, headers);
      },
      (err) => {
        if (err instanceof RawBodyGone) {
          console.error(err.message);
          return send(res, 500, { code: "raw_body_unavailable", message: err.message });
        }
        if (typeof next === "function") return next(err);
        send(res, 500, { code: "internal_error", message: "reading the request failed" });
      },
    );
  };
}

function send(res, status, json, headers) {
  for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
  if (json === undefined) {
    res.statusCode = status;
    res.end();
    return;
  }
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(json));
}

/** A body parser consumed the raw body before the middleware: a setup mistake, explained. */
class RawBodyGone extends Error {}

/** The request's raw body: from express.raw/express.text if they ran, else read here; null past `limit`. */
async function rawBody(req, limit) {
  const parsed = req.body;
  if (parsed instanceof Uint8Array) return parsed.length > limit ? null : parsed;
  if (typeof parsed === "string") return parsed;
  if (parsed !== undefined && parsed !== null && (req._body === true || req.readableEnded)) {
    throw new RawBodyGone(
      "postwire/express: a body parser (express.json() or express.urlencoded()) already consumed the raw body, " +
        "which the signature covers. Mount the webhook route before app.use(express.json()), or give it " +
        "express.raw({ type: '*/*' }) instead: app.post('/webhooks', express.raw({ type: '*/*' }), createHandler(...))",
    );
  }
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
