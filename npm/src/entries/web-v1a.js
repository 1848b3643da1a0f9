// `postwire/v1a` for every runtime but Node: web.js over the module built with `ed25519`
// (inlined base64, compiled synchronously; no `node:` imports), so `new Webhook("whpk_…")`
// verifies v1a signatures synchronously in browsers, Deno and Bun.
import { WASM_BASE64 } from "../../build/web-v1a/wasm-base64.js";
import { instantiateApi } from "./init-v1a.js";

function decodeBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const api = instantiateApi(() => decodeBase64(WASM_BASE64));

export const {
  Webhook,
  WebhookVerificationError,
  ReplayGuard,
  generateSecret,
  matchesSubscription,
  isWebhookId,
  EVENT_TYPES,
  ERROR_CODES,
  RemoteKeySet,
} = api;
export default api;
