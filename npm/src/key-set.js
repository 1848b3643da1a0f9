// postwire/v1a's RemoteKeySet: `v1a` verification with the public keys a sender publishes
// as a JSON Web Key Set at a URL (postwire-core's `key_set`, parsed in wasm), so a
// receiver follows the sender's key rotations with no `whpk_` key copied by hand.
//
// The rules, in order:
//   - the set is fetched on first use, and kept for the response's `Cache-Control: max-age`
//     (5 minutes without one; at most a day); when that has passed, the next delivery
//     fetches it again (`If-None-Match` with the `ETag`, so an unchanged set costs a 304);
//   - a delivery that no cached key verifies fetches it again, in case the sender rotated;
//   - either way the URL is fetched at most once per `minRefreshIntervalMs` (default 60 s),
//     and concurrent deliveries share one fetch: forged deliveries cannot make a receiver
//     hammer the sender;
//   - each fetch has a deadline (`timeoutMs`, default 5 s, the body included), a size cap
//     (64 KiB, postwire-core's), follows no redirect to another origin (and at most 3 in
//     all), and a failed fetch keeps the keys already cached (`lastError` says why);
//   - with no keys cached at all, a delivery is refused with the fetch's error:
//     `key_set_unavailable` (network, timeout, HTTP status, redirect) or `invalid_key_set`
//     (the document: not JSON, no usable Ed25519 key, a key without `kid`, too large).
// A cache hit verifies with the same `Webhook` as a fixed `whpk_` key: same speed.
// Only the global `fetch` (or `options.fetch`): Node 18+, Bun, Deno, workerd, browsers.
import { WebhookVerificationError } from "./errors.js";

/** The least time between two fetches of the key set (ms): 60 s. */
export const DEFAULT_MIN_REFRESH_INTERVAL_MS = 60_000;
/** How long one fetch may take, headers and body (ms): 5 s. */
export const DEFAULT_KEY_SET_TIMEOUT_MS = 5_000;
/** How long a set is kept when its response has no `max-age` (ms): 5 minutes. */
export const DEFAULT_KEY_SET_MAX_AGE_MS = 300_000;
/** The largest key set read (bytes): postwire-core's `MAX_KEY_SET_BYTES`. */
export const MAX_KEY_SET_BYTES = 65_536;
/** The longest a set is kept, whatever its `max-age` says (ms): a day. */
const MAX_CACHE_MS = 86_400_000;
/** Redirects followed, each within the URL's origin. */
const MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * A URL object. Written `globalThis.URL`: build.sh refuses `new URL` in the non-Node
 * bundles, the pattern of a wasm file fetched by `new URL(…, import.meta.url)`.
 */
const parseUrl = (text, base) => new globalThis.URL(text, base);

const unavailable = (message, cause) =>
  new WebhookVerificationError(`key set unavailable: ${message}`, "key_set_unavailable", cause === undefined ? undefined : { cause });
const invalid = (message) => new WebhookVerificationError(`invalid key set: ${message}`, "invalid_key_set");

/** The freshness a response grants, in ms: its `max-age` (0 for `no-store`/`no-cache`), else the default. */
function maxAgeMs(headers) {
  const value = headers.get("cache-control");
  if (value === null) return DEFAULT_KEY_SET_MAX_AGE_MS;
  let age = null;
  for (const part of value.toLowerCase().split(",")) {
    const [name, arg] = part.trim().split("=", 2);
    if (name === "no-store" || name === "no-cache") return 0;
    if (name === "max-age" && /^\d{1,10}$/.test(arg ?? "")) age = Number(arg) * 1000;
  }
  return age === null ? DEFAULT_KEY_SET_MAX_AGE_MS : Math.min(age, MAX_CACHE_MS);
}

function positiveMs(value, fallback, name) {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 0) throw new TypeError(`RemoteKeySet: options.${name} must be a whole number of milliseconds, 0 or more`);
  return v;
}

function base64(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/**
 * The RemoteKeySet class over one build's `Webhook` and its wasm key-set parser
 * (`parseKeySet(bytes) → Uint8Array[]`, throwing `invalid_key_set`); `maxToleranceSeconds`
 * is `Webhook`'s bound, checked when the object is made.
 */
export function remoteKeySetClass(Webhook, parseKeySet, maxToleranceSeconds) {
  class RemoteKeySet {
    #url;
    #fetch;
    #minRefreshMs;
    #timeoutMs;
    #now;
    #webhookOptions;
    /** A Webhook over the cached keys; null until a fetch succeeds. */
    #webhook = null;
    /** The cached keys, as `whpk_` texts in the published order. */
    #keys = [];
    #etag = null;
    /** Until when (ms) the cached set is fresh. */
    #freshUntil = 0;
    /** When the last fetch started (ms); fetches are at least minRefreshMs apart. */
    #lastFetchAt = -Infinity;
    #inFlight = null;
    #lastError = null;
    #fetchCount = 0;

    /**
     * @param url the key set's URL (`https:`; `http:` for loopback and tests)
     * @param options `minRefreshIntervalMs` (60 000), `timeoutMs` (5 000),
     *   `toleranceInSeconds` (300, as `Webhook`), `fetch` (default the global `fetch`),
     *   `now` (a clock in ms, default `Date.now`)
     */
    constructor(url, options = {}) {
      let parsed;
      try {
        parsed = parseUrl(String(url));
      } catch {
        throw new TypeError("RemoteKeySet: the key set URL is not an absolute URL");
      }
      if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
        throw new TypeError("RemoteKeySet: the key set URL must be https: (or http: for a local test)");
      }
      this.#url = parsed;
      const fetchFn = options.fetch ?? globalThis.fetch;
      if (typeof fetchFn !== "function") throw new TypeError("RemoteKeySet: no fetch in this runtime; pass options.fetch");
      // Called on the global object: browsers and workerd throw "Illegal invocation" for a
      // `fetch` called as a method of anything else.
      this.#fetch = (url, init) => fetchFn.call(globalThis, url, init);
      this.#minRefreshMs = positiveMs(options.minRefreshIntervalMs, DEFAULT_MIN_REFRESH_INTERVAL_MS, "minRefreshIntervalMs");
      this.#timeoutMs = positiveMs(options.timeoutMs, DEFAULT_KEY_SET_TIMEOUT_MS, "timeoutMs");
      if (this.#timeoutMs === 0) throw new TypeError("RemoteKeySet: options.timeoutMs must be at least 1");
      this.#now = options.now ?? Date.now;
      const tolerance = options.toleranceInSeconds;
      if (tolerance !== undefined && (typeof tolerance !== "number" || !(tolerance >= 0 && tolerance <= maxToleranceSeconds))) {
        throw new RangeError(`toleranceInSeconds must be a number from 0 to ${maxToleranceSeconds}`);
      }
      this.#webhookOptions = tolerance === undefined ? {} : { toleranceInSeconds: tolerance };
    }

    /** The key set's URL. */
    get url() {
      return this.#url.href;
    }

    /** The cached keys as `whpk_` texts, current first (empty before the first fetch). */
    get publicKeys() {
      return [...this.#keys];
    }

    /** Why the last fetch failed (a WebhookVerificationError), or null after a success. */
    get lastError() {
      return this.#lastError;
    }

    /** How many fetches this object has started. */
    get fetchCount() {
      return this.#fetchCount;
    }

    /** Verifies a delivery (see `Webhook.verify`); resolves to its parsed JSON body. */
    async verify(payload, headers, options) {
      return this.#withKeys((wh) => wh.verify(payload, headers, options));
    }

    /** Verifies a delivery (see `Webhook.verifyEvent`); resolves to the typed event. */
    async verifyEvent(payload, headers, options) {
      return this.#withKeys((wh) => wh.verifyEvent(payload, headers, options));
    }

    /** Reads a Fetch API Request's raw body once and verifies it (see `Webhook.verifyRequest`). */
    async verifyRequest(request, options) {
      if (!request || typeof request.arrayBuffer !== "function" || !request.headers) {
        throw new TypeError("verifyRequest expects a Fetch API Request");
      }
      if (request.bodyUsed) {
        throw new WebhookVerificationError("the request body was already read; verifyRequest must read the raw body itself", "invalid_payload");
      }
      const body = new Uint8Array(await request.arrayBuffer());
      if (options?.parse === "json") return this.verify(body, request.headers, options);
      return this.verifyEvent(body, request.headers, options);
    }

    /**
     * Fetches the set now unless one was fetched less than `minRefreshIntervalMs` ago (or
     * is being fetched: that one is awaited). Resolves to whether the keys changed; never
     * rejects (a failure is kept in `lastError`, and the cached keys stay).
     */
    refresh() {
      if (this.#inFlight !== null) return this.#inFlight;
      if (this.#now() - this.#lastFetchAt < this.#minRefreshMs) return Promise.resolve(false);
      this.#inFlight = this.#fetchSet().then(
        (changed) => {
          this.#lastError = null;
          return changed;
        },
        (err) => {
          this.#lastError = err instanceof WebhookVerificationError ? err : unavailable(String(err?.message ?? err), err);
          return false;
        },
      );
      this.#inFlight.finally(() => {
        this.#inFlight = null;
      });
      return this.#inFlight;
    }

    /** Runs `check(webhook)` with the cached keys; on `invalid_signature`, once more after a refresh that changed them. */
    async #withKeys(check) {
      if (this.#webhook === null || this.#now() >= this.#freshUntil) await this.refresh();
      const webhook = this.#webhook;
      if (webhook === null) throw this.#lastError ?? unavailable(`fetched less than ${this.#minRefreshMs} ms ago without success`);
      try {
        return check(webhook);
      } catch (e) {
        if (!(e instanceof WebhookVerificationError) || e.code !== "invalid_signature") throw e;
        // The sender may have rotated: fetch again, at most once per interval.
        if (!(await this.refresh()) || this.#webhook === webhook) throw e;
        return check(this.#webhook);
      }
    }

    /** One fetch of the set, within the deadline; resolves to whether the keys changed. */
    async #fetchSet() {
      this.#lastFetchAt = this.#now();
      this.#fetchCount++;
      const controller = new AbortController();
      let timer;
      const deadline = new Promise((_, reject) => {
        timer = setTimeout(() => {
          const err = unavailable(`no complete answer within ${this.#timeoutMs} ms (options.timeoutMs)`);
          reject(err);
          controller.abort(err);
        }, this.#timeoutMs);
      });
      deadline.catch(() => {});
      const within = (promise) => Promise.race([promise, deadline]);
      try {
        const response = await within(this.#get(controller.signal));
        if (response.status === 304 && this.#webhook !== null) {
          response.body?.cancel().catch(() => {});
          this.#freshUntil = this.#now() + maxAgeMs(response.headers);
          return false;
        }
        if (response.status !== 200) {
          response.body?.cancel().catch(() => {});
          throw unavailable(`the server answered HTTP ${response.status}`);
        }
        const bytes = await within(readCapped(response));
        const keys = parseKeySet(bytes).map((k) => `whpk_${base64(k)}`);
        const changed = keys.join(" ") !== this.#keys.join(" ");
        if (changed) {
          this.#webhook = new Webhook(keys, this.#webhookOptions);
          this.#keys = keys;
        }
        this.#etag = response.headers.get("etag");
        this.#freshUntil = this.#now() + maxAgeMs(response.headers);
        return changed;
      } catch (e) {
        if (e instanceof WebhookVerificationError) throw e;
        throw unavailable(e?.name === "AbortError" ? "the fetch was aborted" : `the fetch failed (${e?.message ?? e})`, e);
      } finally {
        clearTimeout(timer);
      }
    }

    /** GET the URL, following redirects only within its origin. */
    async #get(signal) {
      let url = this.#url;
      for (let hops = 0; ; hops++) {
        const headers = { accept: "application/jwk-set+json, application/json" };
        if (this.#etag !== null && this.#webhook !== null) headers["if-none-match"] = this.#etag;
        const response = await this.#fetch(url.href, { method: "GET", headers, redirect: "manual", signal });
        if (response.type === "opaqueredirect") {
          throw unavailable("the URL redirects, which this runtime does not let a script inspect: give the final URL");
        }
        if (!REDIRECTS.has(response.status)) return response;
        response.body?.cancel().catch(() => {});
        const location = response.headers.get("location");
        let next;
        try {
          next = parseUrl(location ?? "", url);
        } catch {
          throw unavailable(`a redirect (HTTP ${response.status}) with an unusable location`);
        }
        if (location === null) throw unavailable(`a redirect (HTTP ${response.status}) without a location`);
        if (next.origin !== this.#url.origin) {
          throw unavailable(`a redirect to another origin (${next.origin}) was refused: the key set must be served from ${this.#url.origin}`);
        }
        if (hops >= MAX_REDIRECTS) throw unavailable(`more than ${MAX_REDIRECTS} redirects`);
        url = next;
      }
    }
  }
  return RemoteKeySet;
}

/** The response's body, refused (`invalid_key_set`) once it passes MAX_KEY_SET_BYTES. */
async function readCapped(response) {
  const tooLarge = () => invalid(`larger than ${MAX_KEY_SET_BYTES} bytes`);
  const declared = Number(response.headers.get("content-length"));
  if (declared > MAX_KEY_SET_BYTES) {
    response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_KEY_SET_BYTES) {
      reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
