// Entry point for Cloudflare Workers (workerd): Workers may not compile wasm from bytes
// at run time, so the .wasm file is imported as a module (wrangler and Miniflare turn
// it into a WebAssembly.Module) and instantiated synchronously.
import wasmModule from "./postwire_wasm_bg.wasm";
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
