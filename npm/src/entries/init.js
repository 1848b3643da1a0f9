// The one place the default (`v1`-only) wasm glue is instantiated and turned into the
// package API. Each entry point only says where the module's bytes come from (inlined
// base64, or a module that wrangler compiled) and, on Node, which native HMAC to use.
// Named imports only, so the glue's async default loader (which fetches a .wasm URL from
// import.meta.url) is tree-shaken away.
import {
  initSync,
  codeName,
  scratchReserve,
  scratchShrink,
  scratchLen,
  lastErrorMessage,
  lastErrorStatus,
  generateSecret,
  keySchedule,
  verify,
  verifyMacs,
  sign,
  replayGuardNew,
  replayGuardCheckAndRecord,
  replayGuardForget,
  replayGuardSize,
  replayGuardFree,
} from "../../build/web/postwire_wasm.js";
import { instantiateFrom } from "./instantiate.js";

/**
 * Builds the API over the default wasm module (see instantiate.js).
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 */
export function instantiateApi(source, native, nativeMinBytes) {
  const glue = { initSync, codeName, scratchReserve, scratchShrink, scratchLen, lastErrorMessage };
  Object.assign(glue, { lastErrorStatus, generateSecret, keySchedule, verify, verifyMacs, sign });
  Object.assign(glue, { replayGuardNew, replayGuardCheckAndRecord, replayGuardForget, replayGuardSize, replayGuardFree });
  return instantiateFrom(glue, source, native, nativeMinBytes);
}
