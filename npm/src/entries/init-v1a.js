// init.js for the `postwire/v1a` entry points: the module built with postwire-wasm's
// `ed25519` feature, which adds `publicKey` and `verifyWithPublicKeys` (`whpk_` keys, v1a).
// A module of its own, so the default entry points' module keeps its size: only who
// imports postwire/v1a loads the curve code.
// It also parses published key sets (`keySet`): RemoteKeySet (../key-set.js) is built here.
import { instantiateFrom } from "./instantiate.js";
import { KEY_SET_PARSER, MAX_TOLERANCE_SECONDS } from "../api.js";
import { remoteKeySetClass } from "../key-set.js";

/** instantiateApi of init.js, over the v1a module, plus RemoteKeySet. */
export function instantiateApi(source, native, nativeMinBytes) {
  const api = instantiateFrom(source, native, nativeMinBytes, true);
  const RemoteKeySet = remoteKeySetClass(api.Webhook, api[KEY_SET_PARSER], MAX_TOLERANCE_SECONDS);
  Object.defineProperty(RemoteKeySet, "name", { value: "RemoteKeySet", configurable: true });
  return { ...api, RemoteKeySet };
}
