// The package's API over the wasm bindings: the `standardwebhooks`-compatible `Webhook`,
// plus rotation, typed events, Fetch requests, secrets and a replay guard.
//
// Every runtime's entry point (node, web, workerd) instantiates the same wasm module its
// own way and hands the bindings to `createApi`; everything else is shared. The hot path
// of `verify` is: find three header values, encode the object's key schedules, them and
// the body straight into the module's scratch buffer, one wasm call, then JSON.parse.
//
// Memory: a `Webhook` owns nothing inside the wasm module. Each secret becomes a 64-byte
// HMAC key schedule once, kept in a plain Uint8Array of the object, so the garbage
// collector frees an object wholly, in runtimes without FinalizationRegistry too
// (workerd before 2025-05-05), and one object per request costs nothing that lasts.
// The one scratch buffer is given back after an input over 1 MiB.

import { WebhookVerificationError, ERROR_CODES } from "./errors.js";
import { checkEvent, EventShapeError, EVENT_TYPES, matchesSubscription, isWebhookId } from "./events.js";

const DEFAULT_TOLERANCE_SECONDS = 300;
export const MAX_TOLERANCE_SECONDS = 10 * 365 * 24 * 3600;
/** Where createApi leaves postwire/v1a's key-set parser for init-v1a.js (not an API). */
export const KEY_SET_PARSER = Symbol("postwire.keySetParser");

const encoder = new TextEncoder();
/**
 * Made on the first body given as bytes: creating a fatal UTF-8 TextDecoder costs about
 * 0.1 ms on Node (its ICU converter), a twentieth of a cold start's budget.
 */
let decoder = null;
const toString = Object.prototype.toString;

const RAW_BODY_HINT =
  "pass the raw request body exactly as received (a string, Uint8Array, ArrayBuffer or Buffer): " +
  "in Express use express.raw({ type: 'application/json' }) instead of express.json(), and pass req.body; " +
  "in a Fetch handler pass await request.text(), or use webhook.verifyRequest(request)";

/**
 * Bodies from this many bytes up are hashed by the native HMAC when there is one: where
 * node:crypto overtakes one wasm call, measured on Node (each runtime's entry may pass its own).
 */
const NATIVE_HMAC_MIN_BYTES = 1536;
/**
 * In `verifyAsync` and `verifyRequest`, bodies from this many bytes up are hashed by
 * WebCrypto where there is no node:crypto (browsers, workerd): `crypto.subtle.sign` is
 * native code, several times faster than wasm on large bodies, but asynchronous, and its
 * promise costs more than hashing a small body in wasm.
 */
const WEBCRYPTO_HMAC_MIN_BYTES = 4096;
/**
 * WebCrypto, where the runtime has it, looked up when first needed: on Node, reading
 * `globalThis.crypto` loads its WebCrypto implementation (about 2 ms at a cold start), and
 * the Node build never uses it.
 */
let subtleCrypto = null;
const webCrypto = () => (subtleCrypto ??= { subtle: globalThis.crypto?.subtle }).subtle;
/** Bytes in one key schedule (crates/postwire-wasm/src/schedule.rs). */
const SCHEDULE_LEN = 64;
/** Bytes in one `whpk_` public key (v1a, postwire/v1a only). */
const PUBLIC_KEY_LEN = 32;
/** The longest key postwire-core accepts; its bytes follow the schedule after parsing. */
const MAX_KEY_LEN = 1024;
/** The scratch buffer's size at rest; a call that needed more than `SCRATCH_KEEP` gives it back. */
const SCRATCH_REST = 64 * 1024;
const SCRATCH_KEEP = 1024 * 1024;
/**
 * Whether a key given to `new Webhook` is a v1a key text (`whpk_`, or a refused `whsk_`).
 * At module level: a closure made in the constructor costs a function object per
 * construction, and esbuild's --keep-names a defineProperty on it as well (about 7% of
 * `new Webhook` in a profile of 300,000 constructions).
 */
const isKeyText = (s) => {
  if (typeof s !== "string") return false;
  // /^\s*wh[ps]k_/ without a regular expression, whose first use costs a compile (trimStart
  // removes what \s matches).
  const t = s.trimStart();
  return t.startsWith("whpk_") || t.startsWith("whsk_");
};
/** `Symbol.dispose` where the runtime has it, else the key TypeScript's `using` falls back to. */
const DISPOSE = Symbol.dispose ?? Symbol.for("Symbol.dispose");

// In parentheses: V8 compiles a parenthesized function expression while it compiles the
// file, instead of pre-parsing it then parsing it again when it is called, at load (about
// 0.1 ms of a cold start on Node); esbuild keeps the parentheses. The same for instantiateFrom,
// and for the helpers below that every first `new Webhook` + verify calls (`const f =
// (function f() {...})`): together about 0.1 to 0.15 ms less on Node 22, the first
// verify 0.17 ms faster for 0.16 ms more at load, measured A/B with npm/bench/cold.mjs's
// child (61 fresh processes each). Helpers of other paths stay lazy.
/**
 * @param {object} wasm the bindings of crates/postwire-wasm's exports; each function
 *   instantiates the module on its first call (instantiate.js), so importing the package
 *   compiles nothing
 * @param {() => object} [native] Node, Bun, Deno: returns node:crypto (`createHmac`,
 *   `createSecretKey`), called on the first large body. Large bodies are then hashed
 *   natively (several times faster than wasm), while every decision (headers, timestamp
 *   window, signature comparison) stays in postwire-core.
 * @param {number} [nativeMinBytes] the body size from which node:crypto is used
 * @returns the package's exports
 */
export const createApi = (function createApi(wasm, native, nativeMinBytes = NATIVE_HMAC_MIN_BYTES) {
  /** Status → code string, from the module itself so the two sides cannot drift; built on the first failure. */
  let codeOf = null;
  let memory = null;
  let bytes = new Uint8Array(0);
  let scratchAt = 0;
  let scratchLen = 0;
  let nodeCrypto = null;
  const crypto = () => (nodeCrypto ??= native());

  /** The memory view, renewed when the memory grew (which detaches the old buffer). */
  const mem = (function mem() {
    if (bytes.byteLength === 0) {
      memory ??= wasm.wasmMemory();
      bytes = new Uint8Array(memory.buffer);
    }
    return bytes;
  });

  /** Makes the scratch buffer at least `len` bytes; returns its address. */
  const reserve = (function reserve(len) {
    if (len > scratchLen) {
      const want = Math.max(len, Math.min(scratchLen * 2, 1 << 30), 4096, SCHEDULE_LEN + MAX_KEY_LEN);
      const at = wasm.scratchReserve(want);
      if (at === 0) {
        throw new WebhookVerificationError(
          `input of ${len} bytes is too large for this runtime's memory`,
          "invalid_payload",
        );
      }
      scratchAt = at;
      scratchLen = want;
    }
    return scratchAt;
  });

  /** After a call: a buffer grown past SCRATCH_KEEP for a large input goes back to its size at rest. */
  const release = (function release() {
    if (scratchLen > SCRATCH_KEEP) {
      scratchAt = wasm.scratchShrink(SCRATCH_REST);
      scratchLen = SCRATCH_REST;
    }
  });

  /** Encodes `s` at `at` (room for 3 bytes per UTF-16 unit is reserved); returns the byte count. */
  const writeString = (function writeString(m, at, s) {
    const n = s.length;
    if (n <= 128) {
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        m[at + i] = c;
      }
      if (i === n) return n;
    }
    return encoder.encodeInto(s, m.subarray(at, at + 3 * n)).written;
  });

  /** A status from the module as a thrown error, with the module's message. */
  function failure(status) {
    if (codeOf === null) {
      codeOf = [];
      for (let s = 1; s <= ERROR_CODES.length; s++) codeOf[s] = wasm.codeName(s);
    }
    return new WebhookVerificationError(wasm.lastErrorMessage(), codeOf[status] ?? "invalid_payload");
  }

  /** The raw body as a string or a Uint8Array, or a thrown `invalid_payload`. */
  const rawBody = (function rawBody(payload) {
    if (typeof payload === "string" || payload instanceof Uint8Array) return payload;
    if (payload instanceof ArrayBuffer || toString.call(payload) === "[object ArrayBuffer]") {
      return new Uint8Array(payload);
    }
    if (ArrayBuffer.isView(payload)) return new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
    if (payload === undefined || payload === null) {
      throw new WebhookVerificationError(`the payload is ${payload}: ${RAW_BODY_HINT}`, "invalid_payload");
    }
    if (typeof payload === "object") {
      throw new WebhookVerificationError(
        "the payload is an already-parsed object, but the signature covers the raw bytes of the body; " +
          RAW_BODY_HINT,
        "invalid_payload",
      );
    }
    throw new WebhookVerificationError(`the payload is a ${typeof payload}: ${RAW_BODY_HINT}`, "invalid_payload");
  });

  /**
   * Writes `prefix` (key schedules, or null), `strings`, then `body` into the scratch
   * buffer; returns the byte lengths of the strings and the body.
   * A string body gets one byte per UTF-16 unit first (right for ASCII) and more room
   * only if it needs it, so a large body never costs three times its size.
   */
  const stage = (function stage(prefix, strings, body) {
    let off = prefix === null ? 0 : prefix.length;
    let head = off;
    for (const s of strings) head += 3 * s.length;
    reserve(head + body.length);
    let m = mem();
    if (prefix !== null) m.set(prefix, scratchAt);
    const lens = [];
    for (const s of strings) {
      const n = writeString(m, scratchAt + off, s);
      lens.push(n);
      off += n;
    }
    if (typeof body !== "string") {
      m.set(body, scratchAt + off);
      lens.push(body.length);
      return lens;
    }
    let { read, written } = encoder.encodeInto(body, m.subarray(scratchAt + off, scratchAt + scratchLen));
    if (read < body.length) {
      // Not all ASCII: grow to the worst case for the rest (the buffer keeps what is
      // written), then encode the rest, which now always fits.
      reserve(off + written + 3 * (body.length - read));
      m = mem();
      written += encoder.encodeInto(body.slice(read), m.subarray(scratchAt + off + written, scratchAt + scratchLen)).written;
    }
    lens.push(written);
    return lens;
  });

  /** The current Unix time in seconds, from `now` (a Date or milliseconds) or the clock. */
  const nowSeconds = (function nowSeconds(now) {
    const ms = now === undefined ? Date.now() : now instanceof Date ? now.getTime() : now;
    if (typeof ms !== "number" || !Number.isFinite(ms)) {
      throw new TypeError("options.now must be a Date or a number of milliseconds");
    }
    return Math.floor(ms / 1000);
  });

  class Webhook {
    /** The key schedules of the secrets, 64 bytes each, in order; null once disposed. */
    #schedules;
    #count;
    #tolerance;
    /** node:crypto KeyObjects of the secrets, in order, made from `#rawKeys` on the first large body. */
    #keys = null;
    /** Bodies from this many bytes up use `#keys`. */
    #nativeFrom = Infinity;
    /** The key bytes, where large bodies may be hashed natively (node:crypto, or WebCrypto in `verifyAsync`); else null. */
    #rawKeys = null;
    /** Their WebCrypto keys, imported on the first large body. */
    #cryptoKeys = null;
    /** `v1a` public keys (`whpk_`, 32 bytes each, in order), or null when there are none. */
    #publicKeys = null;
    #publicKeyCount = 0;

    /**
     * @param secret one secret or an array of them (new first, during a rotation): a
     *   `whsec_<base64>` string (prefix and padding optional; every secret the
     *   `standardwebhooks` package accepts gives the same key here), or the key bytes.
     *   With the `postwire/v1a` entry point, also `whpk_` public keys (v1a, the opt-in
     *   ed25519 extension), alone or beside secrets: a delivery verifies when a `v1` entry
     *   matches a secret or a `v1a` entry is a valid signature by a public key.
     * @param options `format: "raw"` (a string secret is the key itself, as in
     *   `standardwebhooks`), `toleranceInSeconds` (default 300, both ways), `hmac`:
     *   `"auto"` (default: on Node, Bun and Deno, bodies from 1.5 KiB are hashed by
     *   node:crypto), `"wasm"` (always in wasm) or `"native"` (always node:crypto).
     */
    constructor(secret, options = {}) {
      const tolerance = options?.toleranceInSeconds ?? DEFAULT_TOLERANCE_SECONDS;
      if (typeof tolerance !== "number" || !(tolerance >= 0 && tolerance <= MAX_TOLERANCE_SECONDS)) {
        throw new RangeError(`toleranceInSeconds must be a number from 0 to ${MAX_TOLERANCE_SECONDS}`);
      }
      const hmac = options?.hmac ?? "auto";
      if (hmac !== "auto" && hmac !== "wasm" && hmac !== "native") {
        throw new TypeError('options.hmac must be "auto", "wasm" or "native"');
      }
      if (hmac === "native" && !native) {
        throw new TypeError('options.hmac "native" needs node:crypto, which this build does not use');
      }
      const all = Array.isArray(secret) ? secret : [secret];
      if (all.length === 0) {
        throw new WebhookVerificationError("at least one secret is required", "invalid_secret");
      }
      // `whpk_` (and, refused, `whsk_`) keys are v1a's: parsed apart from the secrets.
      const secrets = all.filter((s) => !isKeyText(s));
      const publicKeyTexts = all.filter(isKeyText);
      const useNative = native !== undefined && hmac !== "wasm";
      const schedules = new Uint8Array(SCHEDULE_LEN * secrets.length);
      const publicKeys = new Uint8Array(PUBLIC_KEY_LEN * publicKeyTexts.length);
      const rawKeys = useNative || (hmac === "auto" && webCrypto() !== undefined) ? [] : null;
      const raw = options?.format === "raw";
      try {
        this.#addSecrets(secrets, raw, schedules, rawKeys);
        if (publicKeyTexts.length > 0) this.#addPublicKeys(publicKeyTexts, publicKeys);
      } catch (e) {
        // Key material of the secrets parsed before the bad one is not left behind.
        schedules.fill(0);
        for (const k of rawKeys ?? []) k.fill(0);
        throw e;
      }
      this.#schedules = schedules;
      this.#count = secrets.length;
      this.#tolerance = Math.floor(tolerance);
      this.#rawKeys = rawKeys;
      if (publicKeyTexts.length > 0) {
        this.#publicKeys = publicKeys;
        this.#publicKeyCount = publicKeyTexts.length;
      }
      if (useNative) this.#nativeFrom = hmac === "native" ? 0 : nativeMinBytes;
    }

    /** Parses each secret in wasm into `schedules` (64 bytes each) and, if not null, its key bytes into `rawKeys`. */
    #addSecrets(secrets, raw, schedules, rawKeys) {
      for (let i = 0; i < secrets.length; i++) {
        const s = secrets[i];
        let key = s;
        let isRaw = true;
        if (typeof s === "string") {
          if (raw) key = Uint8Array.from(s, (c) => c.charCodeAt(0));
          else isRaw = false;
        } else if (s instanceof Uint8Array || s instanceof ArrayBuffer || ArrayBuffer.isView(s)) {
          key = rawBody(s);
        } else {
          throw new WebhookVerificationError(
            `a secret must be a string (whsec_…) or bytes, not ${s === null ? "null" : typeof s}`,
            "invalid_secret",
          );
        }
        const [len] = stage(null, [], key);
        const keyLen = wasm.keySchedule(len, isRaw);
        const m = mem();
        // The secret's text, its schedule and key leave the module's memory at once.
        const used = Math.max(len, SCHEDULE_LEN + keyLen);
        if (keyLen === 0) {
          m.fill(0, scratchAt, scratchAt + used);
          release();
          throw failure(wasm.lastErrorStatus());
        }
        schedules.set(m.subarray(scratchAt, scratchAt + SCHEDULE_LEN), SCHEDULE_LEN * i);
        if (rawKeys !== null) rawKeys.push(m.slice(scratchAt + SCHEDULE_LEN, scratchAt + SCHEDULE_LEN + keyLen));
        m.fill(0, scratchAt, scratchAt + used);
        release();
      }
    }

    /** Parses each `whpk_` key in wasm (postwire/v1a's module only) into `out`, 32 bytes each. */
    #addPublicKeys(texts, out) {
      for (let i = 0; i < texts.length; i++) {
        if (wasm.publicKey === undefined) {
          throw new WebhookVerificationError(
            texts[i].trim().startsWith("whsk_")
              ? "invalid public key: a whsk_ signing key was given to verify with; give its whpk_ public key instead"
              : "invalid public key: whpk_ public keys (v1a, the opt-in ed25519 extension) are verified by the " +
                  'postwire/v1a entry point: import { Webhook } from "postwire/v1a"',
            "invalid_public_key",
          );
        }
        const [len] = stage(null, [], texts[i]);
        const n = wasm.publicKey(len);
        if (n === 0) throw failure(wasm.lastErrorStatus());
        out.set(mem().subarray(scratchAt, scratchAt + PUBLIC_KEY_LEN), PUBLIC_KEY_LEN * i);
        release();
      }
    }

    /**
     * Zeroes this object's key schedules and drops its native keys; any later call throws
     * a TypeError. Optional: an object that is simply dropped holds nothing else, and
     * the garbage collector frees it. Also `using webhook = new Webhook(...)`.
     */
    dispose() {
      this.#schedules?.fill(0);
      this.#schedules = null;
      this.#keys = null;
      for (const k of this.#rawKeys ?? []) k.fill(0);
      this.#rawKeys = null;
      this.#cryptoKeys = null;
      this.#publicKeys = null;
    }

    [DISPOSE]() {
      this.dispose();
    }

    /** The key schedules, or a TypeError after `dispose()`. */
    #live() {
      const schedules = this.#schedules;
      if (schedules === null) throw new TypeError("this Webhook was disposed; create a new one");
      return schedules;
    }

    /**
     * Verifies a delivery and returns its parsed JSON body (`undefined` for an empty
     * body, or with `jsonParse: false`). Throws `WebhookVerificationError`.
     */
    verify(payload, headers, options) {
      const body = rawBody(payload);
      this.#check(body, headers, options?.now);
      if (options?.jsonParse === false) return undefined;
      return parseJson(body);
    }

    /** Verifies a delivery and returns the typed event (one of the nine types). */
    verifyEvent(payload, headers, options) {
      const body = rawBody(payload);
      const id = this.#check(body, headers, options?.now);
      return checkedEvent(parseJson(body), id);
    }

    /**
     * For Fetch-style handlers (Next.js, Hono, Bun, Deno, Workers): reads the request's
     * raw body once and verifies it. Resolves to the typed event, or with
     * `{ parse: "json" }` to the parsed JSON of any Standard Webhooks sender.
     */
    async verifyRequest(request, options) {
      if (!request || typeof request.arrayBuffer !== "function" || !request.headers) {
        throw new TypeError("verifyRequest expects a Fetch API Request");
      }
      if (request.bodyUsed) {
        throw new WebhookVerificationError(
          "the request body was already read (e.g. by request.json()); verifyRequest must read the raw body itself: " +
            "call it before anything else reads the body, or use verify(rawBody, request.headers)",
          "invalid_payload",
        );
      }
      const body = new Uint8Array(await request.arrayBuffer());
      const id = await this.#checkAsync(body, request.headers, options?.now);
      const value = parseJson(body);
      return options?.parse === "json" ? value : checkedEvent(value, id);
    }

    /**
     * `verify`, asynchronously: where the runtime has no node:crypto (browsers, workerd),
     * bodies from 4 KiB are hashed by WebCrypto (`crypto.subtle`, native code) instead of
     * wasm, several times faster on large bodies; every decision still made in wasm.
     * Elsewhere, and for small bodies, the same work as `verify`. `verifyRequest` uses it.
     */
    async verifyAsync(payload, headers, options) {
      const body = rawBody(payload);
      await this.#checkAsync(body, headers, options?.now);
      if (options?.jsonParse === false) return undefined;
      return parseJson(body);
    }

    /** `verifyEvent`, asynchronously: the HMAC of `verifyAsync` (WebCrypto for large bodies where there is no node:crypto). */
    async verifyEventAsync(payload, headers, options) {
      const body = rawBody(payload);
      const id = await this.#checkAsync(body, headers, options?.now);
      return checkedEvent(parseJson(body), id);
    }

    /** `#check`, with WebCrypto's HMAC for large bodies where there is no node:crypto. */
    async #checkAsync(body, headers, now) {
      this.#live();
      if (
        native !== undefined ||
        this.#rawKeys === null ||
        this.#publicKeys !== null ||
        body.length < WEBCRYPTO_HMAC_MIN_BYTES
      ) {
        return this.#check(body, headers, now);
      }
      const [id, timestamp, signature, present] = boundHeaders(readHeaders(headers));
      const nowSecs = nowSeconds(now);
      const rawKeys = this.#rawKeys;
      this.#cryptoKeys ??= Promise.all(
        rawKeys.map((k) => webCrypto().importKey("raw", k, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])),
      );
      const keys = await this.#cryptoKeys;
      const prefix = encoder.encode(`${id}.${timestamp}.`);
      const bytes = typeof body === "string" ? encoder.encode(body) : body;
      const message = new Uint8Array(prefix.length + bytes.length);
      message.set(prefix);
      message.set(bytes, prefix.length);
      const macs = new Uint8Array(32 * keys.length);
      const subtle = webCrypto();
      const signed = await Promise.all(keys.map((k) => subtle.sign("HMAC", k, message)));
      signed.forEach((mac, i) => macs.set(new Uint8Array(mac), 32 * i));
      this.#live(); // disposed while hashing
      const [a, b, c, d] = stage(null, [id, timestamp, signature], macs);
      const status = wasm.verifyMacs(a, b, c, d, present, nowSecs, this.#tolerance);
      if (status !== 0) throw failure(status);
      return id;
    }

    /**
     * The `webhook-signature` value for a delivery: one `v1,<base64>` entry per secret.
     * `timestamp` is the time of sending (whole seconds are signed).
     */
    sign(msgId, timestamp, payload) {
      if (typeof msgId !== "string") {
        throw new WebhookVerificationError("msgId must be a string", "invalid_header");
      }
      const ms = timestamp instanceof Date ? timestamp.getTime() : NaN;
      if (!Number.isFinite(ms)) {
        throw new WebhookVerificationError("timestamp must be a valid Date", "invalid_header");
      }
      const schedules = this.#live();
      const body = rawBody(payload);
      const [idLen, bodyLen] = stage(schedules, [msgId], body);
      const value = wasm.sign(this.#count, idLen, bodyLen, Math.floor(ms / 1000));
      release();
      if (value === undefined) throw failure(wasm.lastErrorStatus());
      return value;
    }

    /** One native HMAC per secret over `<id>.<timestamp>.<body>`, concatenated. */
    #nativeMacs(id, timestamp, body) {
      const prefix = `${id}.${timestamp}.`;
      const { createHmac, createSecretKey } = crypto();
      const keys = (this.#keys ??= this.#rawKeys.map((k) => createSecretKey(k)));
      if (keys.length === 1) return createHmac("sha256", keys[0]).update(prefix).update(body).digest();
      const out = new Uint8Array(32 * keys.length);
      for (let i = 0; i < keys.length; i++) {
        out.set(createHmac("sha256", keys[i]).update(prefix).update(body).digest(), 32 * i);
      }
      return out;
    }

    /** Verifies and returns the `webhook-id` value (trimmed). */
    #check(body, headers, now) {
      const schedules = this.#live();
      const [id, timestamp, signature, present] = boundHeaders(readHeaders(headers));
      const nowSecs = nowSeconds(now);
      let status;
      if (this.#publicKeys !== null) {
        // v1a: everything in wasm, the secrets' HMACs and the ed25519 checks over one copy of the message.
        const keys = new Uint8Array(schedules.length + this.#publicKeys.length);
        keys.set(schedules);
        keys.set(this.#publicKeys, schedules.length);
        const [a, b, c, d] = stage(keys, [id, timestamp, signature], body);
        keys.fill(0);
        status = wasm.verifyWithPublicKeys(this.#count, this.#publicKeyCount, a, b, c, d, present, nowSecs, this.#tolerance);
        release();
      } else if (body.length >= this.#nativeFrom) {
        const [a, b, c, d] = stage(null, [id, timestamp, signature], this.#nativeMacs(id, timestamp, body));
        status = wasm.verifyMacs(a, b, c, d, present, nowSecs, this.#tolerance);
      } else {
        const [a, b, c, d] = stage(schedules, [id, timestamp, signature], body);
        status = wasm.verify(this.#count, a, b, c, d, present, nowSecs, this.#tolerance);
        release();
      }
      if (status !== 0) throw failure(status);
      return id;
    }
  }

  // For this package's own tests and benchmarks, not an API: the wasm memory's size and
  // the scratch buffer's length, in bytes, and whether this build hashes large bodies natively.
  Object.defineProperty(Webhook, Symbol.for("postwire.internals"), {
    value: Object.freeze({
      memoryBytes: () => mem().buffer.byteLength,
      scratchBytes: () => wasm.scratchLen(),
      nativeHmac: native !== undefined,
      webCryptoHmac: native === undefined && webCrypto() !== undefined,
    }),
  });

  /** A verified body's value as a typed event of the nine types, whose `id` is `webhook-id`. */
  function checkedEvent(value, id) {
    try {
      checkEvent(value);
    } catch (e) {
      if (e instanceof EventShapeError) {
        throw new WebhookVerificationError(`invalid event payload: ${e.message}`, "invalid_payload");
      }
      throw e;
    }
    if (value.id !== id) {
      throw new WebhookVerificationError(
        "invalid event payload: the envelope `id` differs from the webhook-id header",
        "invalid_payload",
      );
    }
    return value;
  }

  /** Parses a verified body; `undefined` for an empty one, as `standardwebhooks` does. */
  const parseJson = (function parseJson(body) {
    let text = body;
    if (typeof body !== "string") {
      try {
        decoder ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
        text = decoder.decode(body);
      } catch {
        throw new WebhookVerificationError("the body verified but is not valid UTF-8 JSON", "invalid_payload");
      }
    }
    if (text === "") return undefined;
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new WebhookVerificationError(`the body verified but is not JSON: ${e.message}`, "invalid_payload", {
        cause: e,
      });
    }
  });

  /**
   * Remembers processed `webhook-id`s, so a redelivered event is handled once. In memory:
   * one per process (or Worker isolate). Record an id only once its event was handled.
   */
  class ReplayGuard {
    #inner;

    /** @param options `capacity` (default 100 000 ids), `ttlSeconds` (default 25 h: the sender's retry span). */
    constructor(options = {}) {
      const capacity = options?.capacity ?? 100_000;
      const ttl = options?.ttlSeconds ?? 25 * 3600;
      if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError("capacity must be a positive integer");
      if (typeof ttl !== "number" || !(ttl >= 0 && ttl <= MAX_TOLERANCE_SECONDS)) {
        throw new RangeError(`ttlSeconds must be a number from 0 to ${MAX_TOLERANCE_SECONDS}`);
      }
      this.#inner = wasm.newReplayGuard(capacity, Math.floor(ttl));
    }

    /** Records `id`; `"fresh"` the first time (handle the event), `"duplicate"` within the TTL. */
    checkAndRecord(id, now) {
      const inner = this.#live();
      const [len] = stage(null, [], idString(id));
      const fresh = inner.checkAndRecord(len, nowSeconds(now));
      release();
      return fresh ? "fresh" : "duplicate";
    }

    /** Forgets `id` (when handling it failed), so the sender's retry is fresh again. */
    forget(id) {
      const inner = this.#live();
      const [len] = stage(null, [], idString(id));
      inner.forget(len);
      release();
    }

    /** How many ids are held. */
    get size() {
      return this.#live().size;
    }

    /**
     * Frees the ids held in wasm memory now, rather than when the garbage collector
     * finalizes the guard (never, in runtimes without FinalizationRegistry). Any later
     * call throws a TypeError. Also `using guard = new ReplayGuard()`.
     */
    dispose() {
      this.#inner?.free();
      this.#inner = null;
    }

    [DISPOSE]() {
      this.dispose();
    }

    #live() {
      if (this.#inner === null) throw new TypeError("this ReplayGuard was disposed; create a new one");
      return this.#inner;
    }
  }

  function idString(id) {
    if (typeof id !== "string") throw new TypeError("the id must be a string (the webhook-id)");
    return id;
  }

  /** A new `whsec_…` secret of 32 random bytes, from the runtime's secure random source. */
  function generateSecret() {
    const secret = wasm.generateSecret();
    if (secret === undefined) throw failure(wasm.lastErrorStatus());
    return secret;
  }

  /** Whether a subscription `{events, integrationIds}` receives an event; see the spec. */
  function matches(subscription, eventType, accountId) {
    try {
      return matchesSubscription(subscription, eventType, accountId);
    } catch (e) {
      if (e instanceof EventShapeError) throw new WebhookVerificationError(e.message, "invalid_payload");
      throw e;
    }
  }

  // Their names, whatever a bundler renamed them to: the Node build is bundled without
  // esbuild's --keep-names, whose helper call per function cost about 0.15 ms of its cold start.
  for (const [C, name] of [[Webhook, "Webhook"], [ReplayGuard, "ReplayGuard"]]) {
    Object.defineProperty(C, "name", { value: name, configurable: true });
  }

  const api = {
    Webhook,
    WebhookVerificationError,
    ReplayGuard,
    generateSecret,
    matchesSubscription: matches,
    isWebhookId,
    EVENT_TYPES,
    ERROR_CODES,
  };
  // postwire/v1a's module parses published key sets (postwire-core's key_set): its entry
  // points build RemoteKeySet over this parser (init-v1a.js), so the default ones carry none of it.
  if (wasm.keySet !== undefined) {
    /** The keys of a key set's JSON bytes, 32 bytes each in the published order; throws `invalid_key_set`. */
    const parseKeySet = (bytes) => {
      const [len] = stage(null, [], bytes);
      const n = wasm.keySet(len);
      if (n === 0) {
        release();
        throw failure(wasm.lastErrorStatus());
      }
      const m = mem();
      const keys = [];
      for (let i = 0; i < n; i++) keys.push(m.slice(scratchAt + PUBLIC_KEY_LEN * i, scratchAt + PUBLIC_KEY_LEN * (i + 1)));
      release();
      return keys;
    };
    Object.defineProperty(api, KEY_SET_PARSER, { value: parseKeySet });
  }
  return api;
});

// One more UTF-16 unit than postwire-core accepts in bytes: a longer value fails there with
// the same error whether or not it is cut, so it is cut here, before it is copied.
const HEADER_LIMITS = [257, 20, 8193];

/**
 * Trims the three values as postwire-core does, and cuts any that is longer than it could
 * accept, keeping the outcome: the signature keeps a non-ASCII marker if its cut tail had
 * one (postwire-core rejects non-ASCII before it checks the length).
 */
const boundHeaders = (function boundHeaders(values) {
  for (let i = 0; i < 3; i++) {
    let v = trimOws(values[i]);
    const limit = HEADER_LIMITS[i];
    if (v.length > limit) {
      const nonAscii = i === 2 && /[^\x00-\x7f]/.test(v.slice(limit));
      v = v.slice(0, limit) + (nonAscii ? "\u0080" : "");
    }
    values[i] = v;
  }
  return values;
});

/** Trims spaces and tabs at both ends, as postwire-core does with header values. */
const trimOws = (function trimOws(s) {
  const n = s.length;
  if (n === 0) return s;
  const first = s.charCodeAt(0);
  const last = s.charCodeAt(n - 1);
  if (first !== 32 && first !== 9 && last !== 32 && last !== 9) return s;
  return s.replace(/^[ \t]+|[ \t]+$/g, "");
});

// ---- headers ----------------------------------------------------------------------------

const NAMES = [
  ["webhook-id", "svix-id"],
  ["webhook-timestamp", "svix-timestamp"],
  ["webhook-signature", "svix-signature"],
];

/**
 * The three header values (`""` when absent) and a bit mask of those present, from a
 * Fetch `Headers` (or anything with `get`) or a plain object with keys in any case.
 * `svix-*` names are read when the `webhook-*` one is absent, as the `svix` package does.
 */
const readHeaders = (function readHeaders(headers) {
  if (headers === null || typeof headers !== "object") {
    throw new WebhookVerificationError(
      "headers must be the request's headers: a plain object or a Fetch Headers",
      "missing_header",
    );
  }
  const out = ["", "", "", 0];
  if (typeof headers.get === "function") {
    for (let i = 0; i < 3; i++) {
      const [name, alias] = NAMES[i];
      let v = headers.get(name);
      if (v === null || v === undefined) v = headers.get(alias);
      take(out, i, name, v);
    }
    return out;
  }
  // Fast path: Node's IncomingMessage.headers and most objects use lower case.
  let lower = null;
  for (let i = 0; i < 3; i++) {
    const [name, alias] = NAMES[i];
    let v = headers[name];
    if (v === undefined) {
      lower ??= lowerCased(headers);
      v = lower.get(name) ?? lower.get(alias);
    }
    take(out, i, name, v);
  }
  return out;
});

function lowerCased(headers) {
  const map = new Map();
  for (const key of Object.keys(headers)) {
    const k = key.toLowerCase();
    if (!map.has(k)) map.set(k, headers[key]);
  }
  return map;
}

const take = (function take(out, i, name, value) {
  let v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === null) return;
  if (typeof v === "number" || typeof v === "bigint") v = String(v);
  if (typeof v !== "string") {
    throw new WebhookVerificationError(`invalid \`${name}\` header: must be a string`, "invalid_header");
  }
  out[i] = v;
  out[3] |= 1 << i; // bit i: HAS_ID, HAS_TIMESTAMP, HAS_SIGNATURE of crates/postwire-wasm/src/verifier.rs
});
