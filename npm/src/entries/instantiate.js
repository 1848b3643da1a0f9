// Turns one of the package's wasm modules into the package API: the module is compiled
// and instantiated (synchronously) on the first call that needs it, not at import, so
// loading the package costs no compile. init.js is the default (`v1`-only) module's,
// init-v1a.js the `postwire/v1a` module's, which adds `publicKey` and `verifyWithPublicKeys`.
//
// Only numbers cross the boundary: the module imports nothing, and each export takes and
// returns plain numbers, the signatures V8 calls through its generic wrapper. (A string
// return is two results, and each such export, and each import, costs an optimized wrapper
// compiled with the module: about 1.5 ms of a cold start on Node 20.) The few strings the
// module gives back (a code's name, an error message, a signature, a generated secret)
// are written at the start of the scratch buffer and read here. So the module's exports
// are called directly, without wasm-bindgen's JavaScript glue (a wrapper per export, which
// only turned results into unsigned numbers, as `>>> 0` does here).
import { createApi } from "../api.js";
import { WebhookVerificationError } from "../errors.js";

/** What the module's string calls return on failure (`u32::MAX`). */
const FAILED = 0xffffffff;
/** The scratch buffer's least size in the wrapper (api.js), which string results fit in. */
const STRING_ROOM = 4096;
/** Bytes of a generated secret. */
const SECRET_BYTES = 32;

/**
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 * @param {() => object} [native] node:crypto's `createHmac` and `createSecretKey`, asked for on the first large body
 *   (and its `randomFillSync`, if there, by `generateSecret`)
 * @param {number} [nativeMinBytes] the body size from which node:crypto hashes (default 1536, measured on Node)
 * @param {boolean} [v1a] whether the module is postwire/v1a's (`publicKey`, `verifyWithPublicKeys`)
 */
// In parentheses: compiled eagerly by V8, since it runs at load (see createApi in api.js).
export const instantiateFrom = (function instantiateFrom(source, native, nativeMinBytes, v1a = false) {
  /** The module's exports, once instantiated. */
  let wasm = null;
  let decoder = null;
  const load = () => {
    let module = source();
    // A module compiled in another realm (Next.js hands its edge sandbox `?module` imports
    // compiled outside it) fails `instanceof` though it is one: its tag says so.
    if (!(module instanceof WebAssembly.Module) && Object.prototype.toString.call(module) !== "[object WebAssembly.Module]") {
      module = new WebAssembly.Module(module);
    }
    wasm = new WebAssembly.Instance(module, {}).exports;
    // wasm-bindgen's start function (empty here: see npm/build.sh), should it ever do work.
    wasm.__wbindgen_start?.();
  };
  /** The module's exports, instantiated on first use. */
  const w = () => {
    if (wasm === null) load();
    return wasm;
  };
  // One function per export, each calling it by name with its own arity: a shared wrapper
  // (`(...args) => wasm[name](...args)`) would leave V8 one polymorphic call site for all.
  // `>>> 0`: the results are `u32`s (statuses, lengths, addresses).
  const scratchReserve = (len) => w().scratchReserve(len) >>> 0;

  /** The scratch buffer's address, made at least STRING_ROOM bytes (it does not move once it is). */
  const room = () => scratchReserve(STRING_ROOM);
  /** The string of `len` bytes a call just wrote at the start of the scratch buffer; undefined for FAILED. */
  function scratchString(len) {
    if (len === FAILED) return undefined;
    decoder ??= new TextDecoder();
    return decoder.decode(new Uint8Array(wasm.memory.buffer, scratchReserve(0), len));
  }

  /** A JavaScript handle on a replay guard in the module, freed by `free()` or with the object. */
  const guards =
    typeof FinalizationRegistry === "undefined" ? null : new FinalizationRegistry((h) => wasm.replayGuardFree(h));
  class GuardHandle {
    #h;
    constructor(capacity, ttl) {
      this.#h = wasm.replayGuardNew(capacity, ttl) >>> 0;
      guards?.register(this, this.#h, this);
    }
    checkAndRecord(len, now) {
      return wasm.replayGuardCheckAndRecord(this.#h, len, now) === 1;
    }
    forget(len) {
      wasm.replayGuardForget(this.#h, len);
    }
    get size() {
      return wasm.replayGuardSize(this.#h) >>> 0;
    }
    free() {
      guards?.unregister(this);
      wasm.replayGuardFree(this.#h);
      this.#h = 0;
    }
  }

  return createApi(
    {
      codeName: (status) => {
        room();
        return scratchString(wasm.codeName(status) >>> 0);
      },
      wasmMemory: () => w().memory,
      scratchReserve,
      scratchShrink: (keep) => w().scratchShrink(keep) >>> 0,
      scratchLen: () => w().scratchLen() >>> 0,
      lastErrorMessage: () => {
        room();
        return scratchString(wasm.lastErrorMessage() >>> 0);
      },
      lastErrorStatus: () => w().lastErrorStatus() >>> 0,
      generateSecret: () => {
        // node:crypto where the build has it: on Node, reading globalThis.crypto loads
        // WebCrypto (about 0.7 ms the first time), randomFillSync does not.
        const fill = native?.().randomFillSync;
        const random = fill ? { getRandomValues: (bytes) => fill(bytes) } : globalThis.crypto;
        if (typeof random?.getRandomValues !== "function") {
          throw new WebhookVerificationError(
            "invalid signing secret: no secure random source is available (crypto.getRandomValues)",
            "invalid_secret",
          );
        }
        const at = room();
        const key = new Uint8Array(wasm.memory.buffer, at, SECRET_BYTES);
        random.getRandomValues(key);
        const text = scratchString(wasm.generateSecret(SECRET_BYTES) >>> 0);
        // The key's bytes are overwritten by the text in the module; its text is cleared here.
        new Uint8Array(wasm.memory.buffer, at, STRING_ROOM).fill(0, 0, text === undefined ? SECRET_BYTES : text.length);
        return text;
      },
      keySchedule: (len, raw) => w().keySchedule(len, raw) >>> 0,
      verify: (secrets, id, ts, sig, body, present, now, tolerance) =>
        w().verify(secrets, id, ts, sig, body, present, now, tolerance) >>> 0,
      verifyMacs: (id, ts, sig, macs, present, now, tolerance) =>
        w().verifyMacs(id, ts, sig, macs, present, now, tolerance) >>> 0,
      sign: (secrets, id, body, ts) => scratchString(w().sign(secrets, id, body, ts) >>> 0),
      newReplayGuard: (capacity, ttl) => {
        w();
        return new GuardHandle(capacity, ttl);
      },
      publicKey: v1a ? (len) => w().publicKey(len) >>> 0 : undefined,
      keySet: v1a ? (len) => w().keySet(len) >>> 0 : undefined,
      verifyWithPublicKeys: v1a
        ? (secrets, keys, id, ts, sig, body, present, now, tolerance) =>
            w().verifyWithPublicKeys(secrets, keys, id, ts, sig, body, present, now, tolerance) >>> 0
        : undefined,
    },
    native,
    nativeMinBytes,
  );
});
