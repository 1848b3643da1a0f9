// Entry point for Cloudflare Workers (workerd): Workers may not compile wasm from bytes
// at run time, so the .wasm file is imported as a module (wrangler and Miniflare turn
// it into a WebAssembly.Module) and instantiated synchronously.
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
import wasmModule from "./postwire_wasm_bg.wasm";
import { createApi } from "../api.js";

initSync({ module: wasmModule });
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
