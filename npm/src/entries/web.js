// Entry point for browsers, bundlers, Deno and Bun: no `node:` imports, no Buffer, no
// fetch of a .wasm URL. The module's bytes are inlined (base64) and compiled
// synchronously, so the API is synchronous from the first line and needs no bundler
// configuration for .wasm files.
// Named imports only, so the glue's async default loader (which fetches a .wasm URL from
// import.meta.url) is tree-shaken away.
import {
  initSync,
  codeName,
  wasmMemory,
  scratchReserve,
  lastErrorMessage,
  lastErrorStatus,
  generateSecret as wasmGenerateSecret,
  WasmVerifier,
  WasmReplayGuard,
} from "../../build/web/postwire_wasm.js";
import { WASM_BASE64 } from "../../build/web/wasm-base64.js";
import { createApi } from "../api.js";

function decodeBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

initSync({ module: decodeBase64(WASM_BASE64) });
const api = createApi({
  codeName,
  wasmMemory,
  scratchReserve,
  lastErrorMessage,
  lastErrorStatus,
  generateSecret: wasmGenerateSecret,
  WasmVerifier,
  WasmReplayGuard,
});

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
