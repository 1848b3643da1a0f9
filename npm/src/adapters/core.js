// What every framework adapter shares: verify a delivery's raw body, process it once by
// `webhook-id` through a pluggable store (the protocol: ../once.js), call the handler of
// its event type, and choose the HTTP answer the sender acts on. Each adapter (express.js,
// hono.js, next.js) only reads the raw body and headers its framework's way and writes the
// answer back.
//
// Answers, in order:
//   400 {code, message}    the delivery did not verify (a stable code; the sender's retries will fail alike)
//   202 {ignored: type}    it verified, but its type has no handler here or is unknown to this
//                          version: acknowledged, so the sender does not retry it for a day
//   200 {duplicate: true}  its webhook-id was already handled
//   409 {code: "in_progress"} + retry-after: another copy of it is being handled right now
//   204                    the handler returned
//   500 {code: "handler_failed"}  the handler threw: the id is released so the retry runs it again
//   503 {code: "key_set_unavailable" | "invalid_key_set"} + retry-after: with options.keySet (a
//                          RemoteKeySet of postwire/v1a), no key is cached and the set could not be
//                          fetched or used; the sender retries
//   503 {code: "store_unavailable"} + retry-after: the store could not be asked; the handler did not run
// With options.provider (another provider's webhooks), ../providers/dispatch.js answers instead.
// The package is imported by its own name, so each runtime's export condition picks the build.
import { Webhook, WebhookVerificationError, EVENT_TYPES } from "postwire";
import { memoryStore, onceStore, runOnce, defaultOnClaimLost, DEFAULT_STORE_TIMEOUT_MS } from "../once.js";
import { createProviderDispatcher } from "../providers/dispatch.js";

export { memoryStore };

const KNOWN_TYPES = new Set(EVENT_TYPES);
/** The retry-after of a 503 when no key set could be had, in seconds. */
const KEY_SET_RETRY_AFTER_SECONDS = 60;

/**
 * Checks the options every adapter takes and returns the function that answers one
 * delivery: `(body: Uint8Array | string, headers) => Promise<{ status, json?, headers? }>`.
 */
export function createDispatcher(handlers, options) {
  // Another provider's webhooks (options.provider: its postwire/providers/<name> entry).
  if (options?.provider !== undefined) return createProviderDispatcher(handlers, options);
  if (handlers === null || typeof handlers !== "object") {
    throw new TypeError('createHandler expects an object of handlers by event type, e.g. { "post.published": (event) => {} }');
  }
  for (const [type, fn] of Object.entries(handlers)) {
    if (!KNOWN_TYPES.has(type)) throw new TypeError(`createHandler: "${type}" is not an event type (${EVENT_TYPES.join(", ")})`);
    if (typeof fn !== "function") throw new TypeError(`createHandler: the handler of "${type}" is not a function`);
  }
  const { secret, keySet, onError = defaultOnError, onClaimLost = defaultOnClaimLost, toleranceInSeconds, storeTimeoutMs = DEFAULT_STORE_TIMEOUT_MS } = options ?? {};
  if (typeof onClaimLost !== "function") throw new TypeError("createHandler: options.onClaimLost must be a function");
  const store = onceStore(options?.store ?? memoryStore(), "createHandler: options.store");
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1) {
    throw new TypeError("createHandler: options.storeTimeoutMs must be a positive whole number of milliseconds");
  }
  if (keySet !== undefined) {
    if (typeof keySet?.verifyEvent !== "function") {
      throw new TypeError('createHandler: options.keySet must be a RemoteKeySet (import { RemoteKeySet } from "postwire/v1a")');
    }
    if (secret !== undefined) throw new TypeError("createHandler: give options.secret or options.keySet, not both");
  }
  const webhookOptions = toleranceInSeconds === undefined ? {} : { toleranceInSeconds };
  // The secret may be missing when the module is evaluated (Next.js evaluates routes at
  // build time, without the runtime's environment), or be a function (a Worker's env):
  // it is then read at the first request. A secret given now is checked now.
  let cached = null; // [secret value, Webhook]
  const webhookFor = (value) => {
    if (cached === null || cached[0] !== value) cached = [value, new Webhook(value, webhookOptions)];
    return cached[1];
  };
  if (secret !== undefined && typeof secret !== "function") webhookFor(secret);

  return async function dispatch(body, headers) {
    let verifier = keySet;
    if (verifier === undefined) {
      const value = typeof secret === "function" ? secret() : secret;
      if (value === undefined || value === null || value === "") {
        console.error("postwire: createHandler has no secret (options.secret is empty): every delivery is answered 500");
        return { status: 500, json: { code: "missing_secret", message: "the webhook endpoint has no secret configured" } };
      }
      verifier = webhookFor(value);
    }
    let event;
    try {
      // Async: in workerd and browsers large bodies are then hashed by WebCrypto; a key
      // set may be fetched first.
      event = keySet === undefined ? await verifier.verifyEventAsync(body, headers) : await verifier.verifyEvent(body, headers);
    } catch (e) {
      // postwire/v1a's errors are of its own bundle's class: known by name and code.
      const known = e instanceof WebhookVerificationError || (e?.name === "WebhookVerificationError" && typeof e.code === "string");
      if (!known) throw e;
      if (e.code === "key_set_unavailable" || e.code === "invalid_key_set") {
        console.error(`postwire: no key set to verify with (${e.code}): ${e.message}`);
        return { status: 503, headers: { "retry-after": String(KEY_SET_RETRY_AFTER_SECONDS) }, json: { code: e.code, message: e.message } };
      }
      // invalid_payload comes only after the signature verified: a type this version
      // does not know (a newer sender) is acknowledged and ignored, not retried for a day.
      const unknown = e.code === "invalid_payload" ? unknownType(body) : null;
      if (unknown !== null) return { status: 202, json: { ignored: unknown } };
      return { status: 400, json: { code: e.code, message: e.message } };
    }
    const handler = handlers[event.type];
    if (handler === undefined) return { status: 202, json: { ignored: event.type } };
    return runOnce(event, handler, store, storeTimeoutMs, onError, onClaimLost);
  };
}

function defaultOnError(err, event) {
  // A handler's error, or the store's (the answer was then 503).
  console.error(`postwire: processing ${event.type} (${event.id}) failed:`, err);
}

/** The `type` of a verified JSON body when it is a string that is not a known event type. */
function unknownType(body) {
  try {
    const value = JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body));
    const type = value?.type;
    return typeof type === "string" && !KNOWN_TYPES.has(type) ? type : null;
  } catch {
    return null;
  }
}
