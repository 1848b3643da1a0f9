// postwire/providers: other providers' webhooks (Stripe, GitHub, Shopify, Slack, Twilio,
// Paddle, Linear, SendGrid, Discord, Standard Webhooks, or a generic HMAC recipe), verified
// by postwire-core's `providers` module in the package's third wasm module (built with
// postwire-wasm's `providers` feature, so the default and v1a modules keep their size).
//
// One call into wasm per delivery (crates/postwire-wasm/src/providers.rs has the layout):
// the scratch buffer receives the provider, the keys one per line, every header as
// alternate name/value lines, and the raw body; the module answers `id\ntype\ntimestamp`
// or a status whose code is postwire-core's. Every decision (headers, timestamp window,
// signature, constant-time comparison, the id and type) is the core's; JavaScript only
// moves bytes and parses the verified body.

import { WebhookVerificationError, ERROR_CODES } from "../errors.js";

/** The providers `verify` knows by name (`twilio` needs `publicUrl`, `generic` a `recipe`). */
export const PROVIDERS = Object.freeze([
  "standard-webhooks",
  "stripe",
  "github",
  "shopify",
  "slack",
  "twilio",
  "paddle",
  "linear",
  "sendgrid",
  "discord",
  "generic",
]);
const KNOWN = new Set(PROVIDERS);

/** The scratch buffer's least size, which the module's answers (id, type, a message) fit in. */
const STRING_ROOM = 4096;
/** The scratch buffer's size at rest; a call that needed more than `SCRATCH_KEEP` gives it back. */
const SCRATCH_REST = 64 * 1024;
const SCRATCH_KEEP = 1024 * 1024;
/** The longest tolerance taken, in seconds (as `Webhook`'s `toleranceInSeconds`). */
const MAX_TOLERANCE_SECONDS = 10 * 365 * 24 * 3600;

const encoder = new TextEncoder();
let decoder = null;
const toString = Object.prototype.toString;

const RAW_BODY_HINT =
  "pass the raw request body exactly as received (a string, Uint8Array, ArrayBuffer or Buffer): " +
  "in Express use express.raw({ type: '*/*' }), in a Fetch handler await request.text()";

const fail = (message, code) => new WebhookVerificationError(message, code);

/** The raw body as a string or a Uint8Array, or a thrown `invalid_payload`. */
function rawBody(payload) {
  if (typeof payload === "string" || payload instanceof Uint8Array) return payload;
  if (payload instanceof ArrayBuffer || toString.call(payload) === "[object ArrayBuffer]") return new Uint8Array(payload);
  if (ArrayBuffer.isView(payload)) return new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
  if (payload !== null && typeof payload === "object") {
    throw fail("the body is an already-parsed object, but the signature covers the raw bytes; " + RAW_BODY_HINT, "invalid_payload");
  }
  throw fail(`the body is ${payload === null ? "null" : typeof payload}: ${RAW_BODY_HINT}`, "invalid_payload");
}

/** One header value as text: a string, a number, or an array (Node's repeated headers, joined with ", "). */
function headerValue(name, value) {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(", ");
  throw fail(`invalid \`${name}\` header: must be a string`, "invalid_header");
}

/**
 * Every header as alternate name/value lines, from a Fetch `Headers` (anything with
 * `forEach`), a plain object or Node's `IncomingHttpHeaders` (names in any case; the core
 * matches them case-insensitively). `undefined` values are skipped, as absent.
 */
function headerLines(headers) {
  if (headers === null || typeof headers !== "object") {
    throw fail("headers must be the request's headers: a plain object, Node's req.headers or a Fetch Headers", "missing_header");
  }
  const out = [];
  const add = (value, name) => {
    if (value === undefined || value === null || typeof name !== "string" || name.length === 0) return;
    const v = headerValue(name, value);
    if (/[\r\n]/.test(name) || /[\r\n]/.test(v)) {
      throw fail(`invalid \`${name.replace(/[\r\n]/g, " ")}\` header: a header holds no line break`, "invalid_header");
    }
    out.push(name, v);
  };
  if (typeof headers.get === "function" && typeof headers.forEach === "function") {
    headers.forEach(add);
  } else {
    for (const name of Object.keys(headers)) add(headers[name], name);
  }
  return out.join("\n");
}

/** Text that goes into one line (a key) or one tab-separated field (a recipe's): none of `\n`, `\t`. */
function field(value, what, code, allowEmpty = false) {
  if (typeof value !== "string" || (!allowEmpty && value.length === 0) || /[\n\r\t]/.test(value)) {
    throw fail(`${what} must be ${allowEmpty ? "a string" : "a non-empty string"} without tabs or line breaks`, code);
  }
  return value;
}

/** The provider spec of the module's layout: a preset's name, `twilio <url>` or `generic\t…`. */
function providerSpec(provider, options) {
  if (typeof provider !== "string" || !KNOWN.has(provider)) {
    throw fail(`options.provider must be one of ${PROVIDERS.join(", ")}`, "invalid_provider_settings");
  }
  if (provider === "twilio") {
    return "twilio " + field(options?.publicUrl, "options.publicUrl (the URL Twilio calls, as set in its console)", "invalid_provider_settings");
  }
  if (provider !== "generic") return provider;
  const r = options?.recipe;
  if (r === null || typeof r !== "object") {
    throw fail("options.recipe is required for the generic provider", "invalid_provider_settings");
  }
  const code = "invalid_provider_settings";
  const optional = (key) => (r[key] === undefined ? "" : field(r[key], `recipe.${key}`, code));
  const timestampHeader = optional("timestampHeader");
  const tolerance = r.toleranceInSeconds ?? 300;
  if (!Number.isSafeInteger(tolerance) || tolerance < 0 || tolerance > MAX_TOLERANCE_SECONDS) {
    throw fail(`recipe.toleranceInSeconds must be a whole number from 0 to ${MAX_TOLERANCE_SECONDS}`, code);
  }
  return [
    "generic",
    field(r.signatureHeader, "recipe.signatureHeader", code),
    field(r.algorithm ?? "sha256", "recipe.algorithm", code),
    field(r.encoding ?? "hex", "recipe.encoding", code),
    r.prefix === undefined ? "" : field(r.prefix, "recipe.prefix", code, true),
    timestampHeader,
    r.separator === undefined ? "." : field(r.separator, "recipe.separator", code, true),
    String(tolerance),
    optional("idHeader"),
    optional("typeHeader"),
  ].join("\t");
}

/** The keys, one per line. */
function keyLines(secret) {
  const all = Array.isArray(secret) ? secret : [secret];
  if (all.length === 0 || all[0] === undefined) {
    throw fail("options.secret is required: the provider's signing secret, or its public key (SendGrid, Discord)", "invalid_secret");
  }
  for (const s of all) field(s, "every secret", "invalid_secret");
  return all.join("\n");
}

/** The current Unix time in seconds, from `now` (a Date or milliseconds) or the clock. */
function nowSeconds(now) {
  const ms = now === undefined ? Date.now() : now instanceof Date ? now.getTime() : now;
  if (typeof ms !== "number" || !Number.isFinite(ms)) throw new TypeError("options.now must be a Date or a number of milliseconds");
  return Math.floor(ms / 1000);
}

/**
 * The verified body as a value: JSON when its first non-blank character is `{` or `[`,
 * else a form (`application/x-www-form-urlencoded`: Twilio, Slack's commands) as an object
 * of strings, a repeated name giving an array of its values.
 */
function parsePayload(text) {
  const first = /\S/.exec(text)?.[0];
  if (first === "{" || first === "[") {
    try {
      return JSON.parse(text);
    } catch {
      throw fail("the body verified but is not valid JSON", "invalid_payload");
    }
  }
  const form = {};
  for (const [k, v] of new URLSearchParams(text)) {
    if (!Object.hasOwn(form, k)) form[k] = v;
    else if (Array.isArray(form[k])) form[k].push(v);
    else form[k] = [form[k], v];
  }
  return form;
}

/**
 * The module's exports from `source()` (its bytes, or a compiled module, also one compiled
 * in another realm, as Next.js's edge sandbox hands them over). It imports nothing.
 * @param {() => BufferSource | WebAssembly.Module} source
 */
function instantiate(source) {
  let module = source();
  if (!(module instanceof WebAssembly.Module) && toString.call(module) !== "[object WebAssembly.Module]") {
    module = new WebAssembly.Module(module);
  }
  const exports = new WebAssembly.Instance(module, {}).exports;
  exports.__wbindgen_start?.();
  return exports;
}

/**
 * The providers API over the providers wasm module, compiled and instantiated on the first
 * `verify` (importing compiles nothing).
 * @param {() => BufferSource | WebAssembly.Module} source the module's bytes or compiled module, asked for once
 */
export function createProvidersApi(source) {
  const exports = () => instantiate(source);
  let wasm = null;
  let codeOf = null;
  let scratchAt = 0;
  let scratchLen = 0;
  const mem = () => new Uint8Array(wasm.memory.buffer);

  function reserve(len) {
    if (len > scratchLen) {
      const want = Math.max(len, Math.min(scratchLen * 2, 1 << 30), STRING_ROOM);
      const at = wasm.scratchReserve(want) >>> 0;
      if (at === 0) throw fail(`input of ${len} bytes is too large for this runtime's memory`, "invalid_payload");
      scratchAt = at;
      scratchLen = want;
    }
    return scratchAt;
  }
  function readScratch(len) {
    decoder ??= new TextDecoder();
    return decoder.decode(new Uint8Array(wasm.memory.buffer, scratchAt, len));
  }
  function failure() {
    const status = wasm.lastErrorStatus() >>> 0;
    if (codeOf === null) {
      codeOf = [];
      for (let s = 1; s <= ERROR_CODES.length; s++) codeOf[s] = readScratch(wasm.codeName(s) >>> 0);
    }
    return fail(readScratch(wasm.lastErrorMessage() >>> 0), codeOf[status] ?? "invalid_payload");
  }

  /**
   * Verifies one delivery of `provider` (what each subpath export calls with its own).
   * @returns {{ id: string, type: string | null, timestamp: number | null, payload: unknown }}
   */
  function verifyWith(provider, body, headers, options) {
    const spec = providerSpec(provider, options);
    const keys = keyLines(options?.secret);
    const tolerance = options?.toleranceInSeconds;
    if (tolerance !== undefined && !(typeof tolerance === "number" && tolerance >= 0 && tolerance <= MAX_TOLERANCE_SECONDS)) {
      throw new RangeError(`toleranceInSeconds must be a number from 0 to ${MAX_TOLERANCE_SECONDS}`);
    }
    const raw = rawBody(body);
    const lines = headerLines(headers);
    const now = nowSeconds(options?.now);
    wasm ??= exports();

    // provider, keys, headers, then the body, each encoded straight into the module's memory.
    const head = [spec, keys, lines];
    let need = 0;
    for (const s of head) need += 3 * s.length;
    reserve(need + raw.length + STRING_ROOM);
    let m = mem();
    let off = 0;
    const lens = [];
    for (const s of head) {
      const n = encoder.encodeInto(s, m.subarray(scratchAt + off, scratchAt + scratchLen)).written;
      lens.push(n);
      off += n;
    }
    let bodyLen;
    if (typeof raw === "string") {
      let { read, written } = encoder.encodeInto(raw, m.subarray(scratchAt + off, scratchAt + scratchLen));
      if (read < raw.length) {
        reserve(off + written + 3 * (raw.length - read));
        m = mem();
        written += encoder.encodeInto(raw.slice(read), m.subarray(scratchAt + off + written, scratchAt + scratchLen)).written;
      }
      bodyLen = written;
    } else {
      m.set(raw, scratchAt + off);
      bodyLen = raw.length;
    }
    const n = wasm.verifyProvider(lens[0], lens[1], lens[2], bodyLen, now, tolerance === undefined ? -1 : Math.floor(tolerance)) >>> 0;
    let result;
    try {
      if (n === 0) throw failure();
      result = readScratch(n);
    } finally {
      // The keys do not stay in the module's memory (the body and headers are not secret).
      mem().fill(0, scratchAt + lens[0], scratchAt + lens[0] + lens[1]);
      if (scratchLen > SCRATCH_KEEP) {
        scratchAt = wasm.scratchShrink(SCRATCH_REST) >>> 0;
        scratchLen = SCRATCH_REST;
      }
    }
    const [id, type, timestamp] = result.split("\n");
    const text = typeof raw === "string" ? raw : (decoder ??= new TextDecoder()).decode(raw);
    return {
      id,
      type: type === "" ? null : type,
      timestamp: timestamp === "" || timestamp === undefined ? null : Number(timestamp),
      payload: parsePayload(text),
    };
  }

  /** Verifies one delivery of `options.provider`. */
  function verify(body, headers, options) {
    return verifyWith(options?.provider, body, headers, options);
  }

  return { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES };
}
