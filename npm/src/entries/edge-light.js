// Entry point for Vercel's Edge runtime (the `edge-light` condition, as Next.js's edge
// compiler resolves it): it may not compile wasm from bytes at run time, so the module is
// imported precompiled, with the `?module` suffix that bundler turns into a
// WebAssembly.Module, and instantiated synchronously on first use.
import wasmModule from "./postwire_wasm_bg.wasm?module";
import { instantiateApi } from "./init.js";

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
} = api;
export default api;
