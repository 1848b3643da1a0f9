// The default (`v1`-only) wasm module turned into the package API (instantiate.js). Each
// entry point only says where the module's bytes come from (a file, inlined base64, or a
// module that wrangler compiled) and, on Node, which native HMAC to use.
import { instantiateFrom } from "./instantiate.js";

/**
 * Builds the API over the default wasm module (see instantiate.js).
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 */
export function instantiateApi(source, native, nativeMinBytes) {
  return instantiateFrom(source, native, nativeMinBytes);
}
