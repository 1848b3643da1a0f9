// The adapters' dispatcher for other providers' webhooks (`createHandler(handlers,
// { provider, secret })` of postwire/express, postwire/hono and postwire/next): verify with
// the provider's entry (`import * as stripe from "postwire/providers/stripe"`), answer the
// handshakes a provider expects synchronously, then hand the verified delivery to the same
// once-processing as Standard Webhooks deliveries (../once.js), keyed by the delivery's id.
//
// The provider is given as its entry module, not by name, so an application that never
// uses another provider never bundles the providers wasm module (a Worker would upload it).
//
// Answers, as core.js's, plus:
//   200 {challenge}  Slack's url_verification (after its signature verified), not processed
//   200 {type: 1}    Discord's PING (after its signature verified), not processed
//   202 {ignored: type}  no handler for the type, and no "*" handler
//   500 {code}       the settings cannot work (invalid_secret, invalid_public_key,
//                    invalid_provider_settings, missing_secret): a deployment mistake, logged
import { onceStore, runOnce, memoryStore, defaultOnClaimLost, DEFAULT_STORE_TIMEOUT_MS } from "../once.js";

/** Codes that mean the endpoint's settings are wrong, not the delivery: answered 500. */
const SETTINGS_CODES = new Set(["invalid_secret", "invalid_public_key", "invalid_provider_settings"]);

/**
 * Checks the options and returns `(body, headers) => Promise<{ status, json?, headers? }>`.
 * `handlers`: functions by the provider's event type (`"invoice.paid"`, `"pull_request"`),
 * and `"*"` for any delivery whose type has no handler (or that has no type: SendGrid, Twilio).
 */
export function createProviderDispatcher(handlers, options) {
  const { provider, secret, onError = defaultOnError, onClaimLost = defaultOnClaimLost, storeTimeoutMs = DEFAULT_STORE_TIMEOUT_MS } = options;
  if (provider === null || typeof provider !== "object" || typeof provider.verify !== "function") {
    throw new TypeError('createHandler: options.provider must be a provider\'s entry, e.g. import * as stripe from "postwire/providers/stripe"; { provider: stripe, secret }');
  }
  if (handlers === null || typeof handlers !== "object") {
    throw new TypeError('createHandler expects an object of handlers by event type, e.g. { "invoice.paid": (delivery) => {} }');
  }
  for (const [type, fn] of Object.entries(handlers)) {
    if (typeof fn !== "function") throw new TypeError(`createHandler: the handler of "${type}" is not a function`);
  }
  if (options.keySet !== undefined) throw new TypeError("createHandler: options.keySet is for Standard Webhooks deliveries, not with options.provider");
  if (typeof onClaimLost !== "function") throw new TypeError("createHandler: options.onClaimLost must be a function");
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1) {
    throw new TypeError("createHandler: options.storeTimeoutMs must be a positive whole number of milliseconds");
  }
  const store = onceStore(options.store ?? memoryStore(), "createHandler: options.store");
  const name = typeof provider.provider === "string" ? provider.provider : "provider";
  const settings = {};
  for (const key of ["toleranceInSeconds", "publicUrl", "recipe"]) if (options[key] !== undefined) settings[key] = options[key];

  return async function dispatch(body, headers) {
    // A function (a Worker's env) or a value missing at build time is read per request.
    const value = typeof secret === "function" ? secret() : secret;
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && value.length === 0)) {
      console.error(`postwire: createHandler (${name}) has no secret (options.secret is empty): every delivery is answered 500`);
      return { status: 500, json: { code: "missing_secret", message: "the webhook endpoint has no secret configured" } };
    }
    let delivery;
    try {
      delivery = provider.verify(body, headers, { ...settings, secret: value });
    } catch (e) {
      if (e?.name !== "WebhookVerificationError" || typeof e.code !== "string") throw e;
      if (SETTINGS_CODES.has(e.code)) {
        console.error(`postwire: createHandler (${name}) cannot verify with its settings (${e.code}): ${e.message}`);
        return { status: 500, json: { code: e.code, message: "the webhook endpoint's settings are invalid" } };
      }
      return { status: 400, json: { code: e.code, message: e.message } };
    }
    // Handshakes answered at once, after the signature, as the provider expects.
    if (name === "slack" && delivery.type === "url_verification") {
      return { status: 200, json: { challenge: delivery.payload?.challenge } };
    }
    if (name === "discord" && delivery.type === "PING") return { status: 200, json: { type: 1 } };
    const event = { ...delivery, provider: name };
    const handler = (event.type !== null && Object.hasOwn(handlers, event.type) ? handlers[event.type] : undefined) ?? handlers["*"];
    if (handler === undefined) return { status: 202, json: { ignored: event.type } };
    return runOnce(event, handler, store, storeTimeoutMs, onError, onClaimLost);
  };
}

function defaultOnError(err, event) {
  console.error(`postwire: processing ${event.provider} ${event.type ?? "delivery"} (${event.id}) failed:`, err);
}
