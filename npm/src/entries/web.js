// Entry point for browsers, bundlers, Deno and Bun: no `node:` imports, no Buffer, no
// fetch of a .wasm URL. The module's bytes are inlined (base64) and compiled
// synchronously, so the API is synchronous from the first line and needs no bundler
// configuration for .wasm files.
import { WASM_BASE64 } from "../../build/web/wasm-base64.js";
import { instantiateApi } from "./init.js";

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
} = api;
export default api;
