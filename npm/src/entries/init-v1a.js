// init.js for the `postwire/v1a` entry points: the module built with postwire-wasm's
// `ed25519` feature, which adds `publicKey` and `verifyWithPublicKeys` (`whpk_` keys, v1a).
// A module of its own, so the default entry points' module keeps its size: only who
// imports postwire/v1a loads the curve code.
import { instantiateFrom } from "./instantiate.js";

/** instantiateApi of init.js, over the v1a module. */
export function instantiateApi(source, native, nativeMinBytes) {
  return instantiateFrom(source, native, nativeMinBytes, true);
}
