// `postwire/v1a` for Vercel's Edge runtime (the `edge-light` condition): edge-light.js over
// the module built with `ed25519`, imported precompiled with the `?module` suffix.
import wasmModule from "./postwire_wasm_v1a_bg.wasm?module";
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
