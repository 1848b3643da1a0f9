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
 * Builds the API over the wasm module, which is compiled and instantiated (synchronously)
 * on the first call that needs it, not at import: loading the package costs no compile.
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 */
export function instantiateApi(source, native, nativeMinBytes) {
  let loaded = false;
  const load = () => {
    if (!loaded) {
      initSync({ module: source() });
      loaded = true;
    }
  };
  const lazy =
    (fn) =>
    (...args) => {
      if (!loaded) load();
      return fn(...args);
    };
  return createApi(
    {
      codeName: lazy(codeName),
      wasmMemory: lazy(wasmMemory),
      scratchReserve: lazy(scratchReserve),
      scratchShrink: lazy(scratchShrink),
      scratchLen: lazy(scratchLen),
      lastErrorMessage: lazy(lastErrorMessage),
      lastErrorStatus: lazy(lastErrorStatus),
      generateSecret: lazy(wasmGenerateSecret),
      keySchedule: lazy(keySchedule),
      verify: lazy(verify),
      verifyMacs: lazy(verifyMacs),
      sign: lazy(sign),
      newReplayGuard: lazy((capacity, ttl) => new WasmReplayGuard(capacity, ttl)),
    },
    native,
    nativeMinBytes,
  );
}
