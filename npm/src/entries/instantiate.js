// Turns one build of the wasm glue into the package API: the module is compiled and
// instantiated (synchronously) on the first call that needs it, not at import, so loading
// the package costs no compile. init.js passes the default (`v1`-only) module's glue,
// init-v1a.js the `postwire/v1a` module's, which adds `publicKey` and `verifyWithPublicKeys`.
import { createApi } from "../api.js";

/**
 * @param {object} glue the glue's functions (`initSync`, `codeName`, …, `WasmReplayGuard`)
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 */
export function instantiateFrom(glue, source, native, nativeMinBytes) {
  let loaded = false;
  const load = () => {
    if (!loaded) {
      glue.initSync({ module: source() });
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
      codeName: lazy(glue.codeName),
      wasmMemory: lazy(glue.wasmMemory),
      scratchReserve: lazy(glue.scratchReserve),
      scratchShrink: lazy(glue.scratchShrink),
      scratchLen: lazy(glue.scratchLen),
      lastErrorMessage: lazy(glue.lastErrorMessage),
      lastErrorStatus: lazy(glue.lastErrorStatus),
      generateSecret: lazy(glue.generateSecret),
      keySchedule: lazy(glue.keySchedule),
      verify: lazy(glue.verify),
      verifyMacs: lazy(glue.verifyMacs),
      sign: lazy(glue.sign),
      newReplayGuard: lazy((capacity, ttl) => new glue.WasmReplayGuard(capacity, ttl)),
      publicKey: glue.publicKey === undefined ? undefined : lazy(glue.publicKey),
      verifyWithPublicKeys: glue.verifyWithPublicKeys === undefined ? undefined : lazy(glue.verifyWithPublicKeys),
    },
    native,
    nativeMinBytes,
  );
}
