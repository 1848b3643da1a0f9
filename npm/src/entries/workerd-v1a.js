// `postwire/v1a` for Cloudflare Workers (workerd): workerd.js over the module built with
// `ed25519`, imported as a module (Workers may not compile wasm from bytes), so
// `new Webhook("whpk_…")` verifies v1a signatures synchronously at the edge.
import wasmModule from "./postwire_wasm_v1a_bg.wasm";
import { instantiateApi } from "./init-v1a.js";

const api = instantiateApi(() => wasmModule);

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
