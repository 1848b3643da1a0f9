// Turns one build of the wasm glue into the package API: the module is compiled and
// instantiated (synchronously) on the first call that needs it, not at import, so loading
// the package costs no compile. init.js passes the default (`v1`-only) module's glue,
// init-v1a.js the `postwire/v1a` module's, which adds `publicKey` and `verifyWithPublicKeys`.
//
// Only numbers cross the boundary: the module imports nothing, and each export takes and
// returns plain numbers, the signatures V8 calls through its generic wrapper. (A string
// return is two results, and each such export, and each import, costs an optimized wrapper
// compiled with the module: about 1.5 ms of a cold start on Node 20.) The few strings the
// module gives back (a code's name, an error message, a signature, a generated secret)
// are written at the start of the scratch buffer and read here.
import { createApi } from "../api.js";
import { WebhookVerificationError } from "../errors.js";

/** What the module's string calls return on failure (`u32::MAX`). */
const FAILED = 0xffffffff;
/** The scratch buffer's least size in the wrapper (api.js), which string results fit in. */
const STRING_ROOM = 4096;
/** Bytes of a generated secret. */
const SECRET_BYTES = 32;

/**
 * @param {object} glue the glue's functions (`initSync`, `codeName`, …, `replayGuardNew`)
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 */
export function instantiateFrom(glue, source, native, nativeMinBytes) {
  let memory = null;
  let decoder = null;
  const load = () => {
    if (memory === null) memory = glue.initSync({ module: source() }).memory;
  };
  const lazy =
    (fn) =>
    (...args) => {
      if (memory === null) load();
      return fn(...args);
    };

  /** The scratch buffer's address, made at least STRING_ROOM bytes (it does not move once it is). */
  const room = () => glue.scratchReserve(STRING_ROOM);
  /** The string of `len` bytes a call just wrote at the start of the scratch buffer; undefined for FAILED. */
  function scratchString(len) {
    if (len === FAILED) return undefined;
    decoder ??= new TextDecoder();
    return decoder.decode(new Uint8Array(memory.buffer, glue.scratchReserve(0), len));
  }

  /** A JavaScript handle on a replay guard in the module, freed by `free()` or with the object. */
  const guards =
    typeof FinalizationRegistry === "undefined" ? null : new FinalizationRegistry((h) => glue.replayGuardFree(h));
  class GuardHandle {
    #h;
    constructor(capacity, ttl) {
      this.#h = glue.replayGuardNew(capacity, ttl);
      guards?.register(this, this.#h, this);
    }
    checkAndRecord(len, now) {
      return glue.replayGuardCheckAndRecord(this.#h, len, now) === 1;
    }
    forget(len) {
      glue.replayGuardForget(this.#h, len);
    }
    get size() {
      return glue.replayGuardSize(this.#h);
    }
    free() {
      guards?.unregister(this);
      glue.replayGuardFree(this.#h);
      this.#h = 0;
    }
  }

  return createApi(
    {
      codeName: lazy((status) => {
        room();
        return scratchString(glue.codeName(status));
      }),
      wasmMemory: lazy(() => memory),
      scratchReserve: lazy(glue.scratchReserve),
      scratchShrink: lazy(glue.scratchShrink),
      scratchLen: lazy(glue.scratchLen),
      lastErrorMessage: lazy(() => {
        room();
        return scratchString(glue.lastErrorMessage());
      }),
      lastErrorStatus: lazy(glue.lastErrorStatus),
      generateSecret: lazy(() => {
        const random = globalThis.crypto;
        if (typeof random?.getRandomValues !== "function") {
          throw new WebhookVerificationError(
            "invalid signing secret: no secure random source is available (crypto.getRandomValues)",
            "invalid_secret",
          );
        }
        const at = room();
        const key = new Uint8Array(memory.buffer, at, SECRET_BYTES);
        random.getRandomValues(key);
        const text = scratchString(glue.generateSecret(SECRET_BYTES));
        // The key's bytes are overwritten by the text in the module; its text is cleared here.
        new Uint8Array(memory.buffer, at, STRING_ROOM).fill(0, 0, text === undefined ? SECRET_BYTES : text.length);
        return text;
      }),
      keySchedule: lazy(glue.keySchedule),
      verify: lazy(glue.verify),
      verifyMacs: lazy(glue.verifyMacs),
      sign: lazy((...args) => scratchString(glue.sign(...args))),
      newReplayGuard: lazy((capacity, ttl) => new GuardHandle(capacity, ttl)),
      publicKey: glue.publicKey === undefined ? undefined : lazy(glue.publicKey),
      verifyWithPublicKeys: glue.verifyWithPublicKeys === undefined ? undefined : lazy(glue.verifyWithPublicKeys),
    },
    native,
    nativeMinBytes,
  );
}
