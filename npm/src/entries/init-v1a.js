// init.js for the `postwire/v1a` entry points: the glue of the module built with
// postwire-wasm's `ed25519` feature, which adds `publicKey` and `verifyWithPublicKeys`
// (`whpk_` keys, v1a). A module of its own, so the default entry points' module keeps its
// size: only who imports postwire/v1a loads the curve code.
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
  publicKey,
  verifyWithPublicKeys,
} from "../../build/web-v1a/postwire_wasm.js";
import { instantiateFrom } from "./instantiate.js";

/** instantiateApi of init.js, over the v1a module. */
export function instantiateApi(source, native, nativeMinBytes) {
  const glue = { initSync, codeName, scratchReserve, scratchShrink, scratchLen, lastErrorMessage };
  Object.assign(glue, { lastErrorStatus, generateSecret, keySchedule, verify, verifyMacs, sign });
  Object.assign(glue, { replayGuardNew, replayGuardCheckAndRecord, replayGuardForget, replayGuardSize, replayGuardFree });
  Object.assign(glue, { publicKey, verifyWithPublicKeys });
  return instantiateFrom(glue, source, native, nativeMinBytes);
}
