// `postwire/providers` for every runtime but Node, workerd and edge-light (browsers, Deno,
// Bun): the providers module inlined as base64 and compiled synchronously on the first
// verify; no `node:` imports.
import { WASM_BASE64 } from "../../build/web-providers/wasm-base64.js";
import { createProvidersApi } from "../providers/api.js";

function decodeBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const api = createProvidersApi(() => decodeBase64(WASM_BASE64));

export const { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES } = api;
export default api;
