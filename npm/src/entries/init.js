// The one place the wasm glue is instantiated and turned into the package API. Each entry
// point only says where the module's bytes come from (inlined base64, or a module that
// wrangler compiled) and, on Node, which native HMAC to use.
// Named imports only, so the glue's async default loader (which fetches a .wasm URL from
// import.meta.url) is tree-shaken away.
import {
  initSync,
  codeName,
  wasmMemory,
  scratchReserve,
  scratchShrink,
  scratchLen,
  lastErrorMessage,
  lastErrorStatus,
  generateSecret as wasmGenerateSecret,
  keySchedule,
  verify,
  verifyMacs,
  sign,
  WasmReplayGuard,
} from "../../build/web/postwire_wasm.js";
import { createApi } from "../api.js";

/**
 * Instantiates the wasm module synchronously and builds the API over it.
 * @param {BufferSource | WebAssembly.Module} module the module's bytes or compiled module
 * @param {object} [native] node:crypto's `createHmac` and `createSecretKey`, on Node only
 */
export function instantiateApi(module, native) {
  initSync({ module });
  return createApi(
    {
      codeName,
      wasmMemory,
      scratchReserve,
      scratchShrink,
      scratchLen,
      lastErrorMessage,
      lastErrorStatus,
      generateSecret: wasmGenerateSecret,
      keySchedule,
      verify,
      verifyMacs,
      sign,
      WasmReplayGuard,
    },
    native,
  );
}
