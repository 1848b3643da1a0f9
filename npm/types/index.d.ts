// Types of the `postwire` package: postwire-core's Standard Webhooks verifier in
// WebAssembly, a drop-in for the `standardwebhooks` package, plus the typed events of the
// postwire webhooks API. The same file serves `import` (index.d.ts) and `require`
// (index.d.cts).

/** The stable error codes, equal to postwire-core's. */
export type ErrorCode =
  | "missing_header"
  | "invalid_header"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "invalid_signature"
  | "invalid_secret"
  | "invalid_payload"
  | "invalid_public_key"
  | "invalid_key_set"
  | "key_set_unavailable"
  | "invalid_provider_settings";

/** Every stable error code. */
export declare const ERROR_CODES: readonly ErrorCode[];

/**
 * Thrown by every failed verification, signing or secret parse. A real `Error`
 * subclass with a stable `code`; the message says how to fix the cause and never
 * contains secrets or signatures.
 */
export declare class WebhookVerificationError extends Error {
  constructor(message: string, code?: ErrorCode, options?: { cause?: unknown });
  readonly name: "WebhookVerificationError";
  readonly code: ErrorCode;
}

/**
 * A secret: `whsec_<base64>` (prefix and `=` padding optional), or the key bytes. With the
 * `postwire/v1a` entry point also a `whpk_<base64>` ed25519 public key (v1a, the opt-in
 * asymmetric extension); the default entry points throw `invalid_public_key` for one.
 */
export type WebhookSecret = string | Uint8Array | ArrayBuffer;

/** The raw body, exactly as received. Node's `Buffer` is a `Uint8Array`. */
export type WebhookPayload = string | Uint8Array | ArrayBuffer | ArrayBufferView;

/** The required headers, as `standardwebhooks` names them. */
export interface WebhookUnbrandedRequiredHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** The required headers under `svix`'s names, as `svix` types them (read when `webhook-*` are absent). */
export interface WebhookRequiredHeaders {
  "svix-id": string;
  "svix-timestamp": string;
  "svix-signature": string;
}

/** Anything with a `get(name)` that returns the value or null, e.g. a Fetch `Headers`. */
export interface HeaderGetter {
  get(name: string): string | null | undefined;
}

/**
 * The request headers: a Fetch `Headers` (or anything with `get`), or a plain object
 * whose keys may be in any case (Node's `req.headers` fits). `svix-*` names are read
 * when the `webhook-*` one is absent.
 */
export type WebhookHeaders =
  | WebhookUnbrandedRequiredHeaders
  | WebhookRequiredHeaders
  | HeaderGetter
  | Record<string, string | string[] | number | undefined>;

export interface WebhookOptions {
  /** `"raw"`: a string secret is the key itself (each character one byte), as in `standardwebhooks`. */
  format?: "raw";
  /** How far `webhook-timestamp` may be from now, each way. Default 300 (five minutes). */
  toleranceInSeconds?: number;
  /**
   * Where the HMAC-SHA256 is computed. `"auto"` (default): in wasm, except that the Node,
   * Bun and Deno builds hash bodies from 1.5 KiB with node:crypto (native SHA code),
   * while every decision stays in postwire-core. `"wasm"`: always in wasm. `"native"`:
   * always node:crypto (Node, Bun and Deno builds; a TypeError in browsers and workerd).
   */
  hmac?: "auto" | "wasm" | "native";
}

export interface VerifyOptions {
  /** `false`: return `undefined` instead of the parsed body (as in `standardwebhooks`). */
  jsonParse?: boolean;
  /** The current time (a Date or milliseconds since the epoch); default `Date.now()`. */
  now?: Date | number;
}

export interface VerifyRequestOptions {
  /** `"event"` (default): resolve to the typed event. `"json"`: to the parsed JSON of any sender. */
  parse?: "event" | "json";
  /** The current time (a Date or milliseconds since the epoch); default `Date.now()`. */
  now?: Date | number;
}

/** A minimal Fetch `Request`: its headers and a body readable once. */
export interface RequestLike {
  readonly headers: HeaderGetter;
  readonly bodyUsed?: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Verifies (and signs) Standard Webhooks deliveries with postwire-core, in WebAssembly. */
export declare class Webhook {
  /**
   * @param secret one secret, or several during a rotation (any may match; `sign` signs with all).
   */
  constructor(secret: WebhookSecret | readonly WebhookSecret[], options?: WebhookOptions);
  /**
   * Verifies a delivery: the headers, the timestamp window and the signature over the raw
   * body. Returns the parsed JSON body, or `undefined` for an empty body.
   * @throws {WebhookVerificationError}
   */
  verify(payload: WebhookPayload, headers: WebhookHeaders, options?: VerifyOptions): unknown;
  /**
   * Verifies a delivery, then checks the body is an event of the postwire webhooks API
   * whose `id` equals `webhook-id`, and returns it typed.
   * @throws {WebhookVerificationError}
   */
  verifyEvent(payload: WebhookPayload, headers: WebhookHeaders, options?: Omit<VerifyOptions, "jsonParse">): WebhookEvent;
  /**
   * `verify`, asynchronously. Where the runtime has no node:crypto (browsers, workerd),
   * bodies from 4 KiB are hashed by WebCrypto (`crypto.subtle`: native code, several times
   * faster than wasm on large bodies), every check still made by postwire-core; elsewhere,
   * and for small bodies, it does what `verify` does. `verifyRequest` uses it.
   * @throws {WebhookVerificationError} (as a rejection)
   */
  verifyAsync(payload: WebhookPayload, headers: WebhookHeaders, options?: VerifyOptions): Promise<unknown>;
  /** `verifyEvent`, asynchronously, with the HMAC of `verifyAsync`. The framework adapters use it. */
  verifyEventAsync(payload: WebhookPayload, headers: WebhookHeaders, options?: Omit<VerifyOptions, "jsonParse">): Promise<WebhookEvent>;
  /** For Fetch-style handlers: reads the raw body once, then as `verifyEvent` (with the HMAC of `verifyAsync`). */
  verifyRequest(request: RequestLike, options?: VerifyRequestOptions & { parse?: "event" }): Promise<WebhookEvent>;
  /** For Fetch-style handlers: reads the raw body once, then as `verify`. */
  verifyRequest(request: RequestLike, options: VerifyRequestOptions & { parse: "json" }): Promise<unknown>;
  /**
   * The `webhook-signature` value for a delivery: `v1,<base64>`, one space-separated
   * entry per secret. `msgId` must be a valid `webhook-id` (1 to 256 visible ASCII characters).
   * @throws {WebhookVerificationError}
   */
  sign(msgId: string, timestamp: Date, payload: WebhookPayload): string;
  /**
   * Zeroes this object's key schedules; any later call throws a `TypeError`. Optional: an
   * object holds nothing in wasm memory, so one that is simply dropped is freed by the
   * garbage collector, with or without `FinalizationRegistry`.
   */
  dispose(): void;
  /** `using webhook = new Webhook(secret)`: calls `dispose()` at the end of the block. */
  [Symbol.dispose](): void;
}

/** A new `whsec_…` secret of 32 random bytes, from the runtime's secure random source. */
export declare function generateSecret(): string;

export interface ReplayGuardOptions {
  /**
   * The most ids held. Default 100 000. To make room the oldest done mark is dropped, never
   * a live claim: full of live claims, a claim throws `StoreFullError` (the delivery is a 503).
   */
  capacity?: number;
  /** How long an id is remembered. Default 25 hours (the sender retries for about 23). */
  ttlSeconds?: number;
}

/**
 * Remembers processed `webhook-id`s so a redelivered event is handled once. In memory,
 * per process or Worker isolate. Call `forget(id)` if handling the event failed.
 */
export declare class ReplayGuard {
  constructor(options?: ReplayGuardOptions);
  /** `"fresh"` the first time (handle the event), `"duplicate"` within the TTL. */
  checkAndRecord(id: string, now?: Date | number): "fresh" | "duplicate";
  /** Forgets `id`, so the sender's retry is fresh again. */
  forget(id: string): void;
  /** How many ids are held. */
  readonly size: number;
  /**
   * Frees the ids held in wasm memory now rather than when the guard is garbage
   * collected (never, in runtimes without `FinalizationRegistry`, such as workerd with a
   * compatibility date before 2025-05-05). Any later call throws a `TypeError`.
   */
  dispose(): void;
  /** `using guard = new ReplayGuard()`: calls `dispose()` at the end of the block. */
  [Symbol.dispose](): void;
}

/** Whether a string can be a `webhook-id` (1 to 256 visible ASCII characters). */
export declare function isWebhookId(id: unknown): id is string;

/** The nine event types, in the order of the spec. */
export declare const EVENT_TYPES: readonly EventType[];

/**
 * The spec's matching rule: a subscription receives an event when its `events` are
 * empty or hold the type, and its `integrationIds` are empty or hold the account
 * concerned (`null`: the event concerns no account).
 * @throws {WebhookVerificationError} `invalid_payload` for an unknown event type.
 */
export declare function matchesSubscription(
  subscription: { events?: readonly string[]; integrationIds?: readonly string[] },
  eventType: EventType,
  accountId: string | null,
): boolean;

// ---- events -----------------------------------------------------------------------------

export type EventType =
  | "post.scheduled"
  | "post.unscheduled"
  | "post.publishing"
  | "post.published"
  | "post.failed"
  | "post.deleted"
  | "integration.disconnected"
  | "integration.reconnected"
  | "webhook.test";

/** An ISO 8601 / RFC 3339 timestamp string, e.g. `2026-11-22T09:00:00.000Z`. */
export type IsoTimestamp = string;

/** A connected social account. */
export interface Integration {
  id: string;
  name: string;
  providerIdentifier: string;
  picture?: string | null;
}

/** The post summary carried by post events. It never contains the post content. */
export interface PostSummary {
  id: string;
  externalId: string;
  group: string;
  /** Only `ERROR` is named by the spec (a failed post); others are kept as sent. */
  state: "QUEUE" | "PUBLISHING" | "PUBLISHED" | "ERROR" | (string & {});
  publishDate: IsoTimestamp;
  integration: Integration;
  releaseURL?: string | null;
  releaseId?: string | null;
  /** Human-readable failure text on a failed post. */
  error?: string | null;
}

/** A `post.published` post: the release fields are set. */
export interface PublishedPostSummary extends PostSummary {
  releaseURL: string;
  releaseId: string;
}

export type FailureCode =
  | "quota_exceeded"
  | "integration_disconnected"
  | "content_rejected"
  | "media_invalid"
  | "rate_limited"
  | "provider_error"
  | "unknown";

/** Why a post failed. `unknown` is never retryable. */
export type EventError =
  | { code: Exclude<FailureCode, "unknown">; message: string; retryable: boolean }
  | { code: "unknown"; message: string; retryable: false };

export type DisconnectReason = "reconnect_required" | "disabled" | "deleted";

/** The kind of an {@link Actor}. */
export type ActorKind = "dashboard" | "api_token" | "oauth_client" | "system";

/** Who deleted a post. */
export interface Actor {
  kind: ActorKind;
  id?: string | null;
}

interface Envelope<T extends EventType, D> {
  /** Equals `webhook-id`; the same across retries: de-duplicate by it. */
  id: string;
  type: T;
  createdAt: IsoTimestamp;
  workspaceId: string;
  data: D;
}

export type PostScheduledEvent = Envelope<"post.scheduled", { post: PostSummary }>;
export type PostUnscheduledEvent = Envelope<"post.unscheduled", { post: PostSummary }>;
export type PostPublishingEvent = Envelope<"post.publishing", { post: PostSummary }>;
export type PostPublishedEvent = Envelope<"post.published", { post: PublishedPostSummary }>;
export type PostFailedEvent = Envelope<"post.failed", { post: PostSummary; error: EventError }>;
export type PostDeletedEvent = Envelope<"post.deleted", { post: PostSummary; deletedBy: Actor }>;
export type IntegrationDisconnectedEvent = Envelope<
  "integration.disconnected",
  { integration: Integration; reason: DisconnectReason }
>;
export type IntegrationReconnectedEvent = Envelope<"integration.reconnected", { integration: Integration }>;
export type WebhookTestEvent = Envelope<"webhook.test", { message: string }>;

/** Any event of the postwire webhooks API: switch on `type` to narrow `data`. */
export type WebhookEvent =
  | PostScheduledEvent
  | PostUnscheduledEvent
  | PostPublishingEvent
  | PostPublishedEvent
  | PostFailedEvent
  | PostDeletedEvent
  | IntegrationDisconnectedEvent
  | IntegrationReconnectedEvent
  | WebhookTestEvent;

// ---- framework adapters (postwire/express, postwire/hono, postwire/next) ----------------

/**
 * The handlers of `createHandler`, by event type: each receives the event of its key,
 * narrowed (`"post.published"` gets a `PostPublishedEvent`). Types without a handler are
 * answered 202 and ignored; a handler that throws (or rejects) makes the answer a 500,
 * so the sender retries, and releases the id in the store so the retry is handled.
 */
export type EventHandlers = {
  [T in EventType]?: (event: Extract<WebhookEvent, { type: T }>) => unknown;
};

/**
 * A store's answer to a claim: `"claimed"` (this copy holds the id now: run the handler),
 * `"done"` (already handled: 200 duplicate), `"busy"` (another copy holds a live claim: 409,
 * retry after `retryAfterMs`).
 */
export type ClaimResult = { state: "claimed" } | { state: "done" } | { state: "busy"; retryAfterMs: number };

/**
 * Where once-processing records `webhook-id`s (see the README's "Process each delivery
 * once"). Each method may return a value or a promise; a store that throws or rejects
 * makes the delivery a 503 (the handler does not run). `token` is a fresh random string
 * per copy of a delivery.
 */
export interface OnceStore {
  /**
   * Atomically: when `id` is unknown, or its claim or done mark has expired, record
   * `{token, a lease of leaseMs}` and answer `"claimed"`; when it is done, `"done"`; when
   * another token's lease is live, `"busy"` with the lease's time left.
   */
  claim(id: string, token: string): ClaimResult | Promise<ClaimResult>;
  /**
   * The handler returned: mark `id` done for keepMs, unless another token holds a live
   * claim on it or it is done already (then change nothing and answer `false`).
   */
  complete(id: string, token: string): boolean | Promise<boolean>;
  /** The handler threw: forget `id` if `token` still holds it (`true`), else change nothing. */
  release(id: string, token: string): boolean | Promise<boolean>;
  /**
   * Optional, with `leaseMs`: while the handler runs, called every third of `leaseMs` to
   * extend `token`'s claim of `id` to `leaseMs` from now, if `token` still holds it (`true`);
   * `false` when the claim is gone or another token's (reported to `onClaimLost`). Every
   * store of this package has it; a store without it keeps its claim for one lease only.
   */
  renew?(id: string, token: string): boolean | Promise<boolean>;
  /** The store's lease in ms: how often `renew` is called (every third of it). */
  readonly leaseMs?: number;
}

/** Where a claim was found lost while its handler ran; another copy may run the handler too. */
export interface ClaimLost {
  /**
   * `"renew"`: a renewal found the claim gone (its lease ran out before a renewal reached
   * the store); `"complete"`: the handler returned, but another copy had taken the id over.
   */
  stage: "renew" | "complete";
}

/** The times every store factory takes. */
export interface StoreTimes {
  /** How long a claim holds an id before another copy may take it over, in ms. Default 30 000: above the handler's longest run. */
  leaseMs?: number;
  /** How long a done id is remembered, in ms. Default 90 000 000 (25 h): above the sender's retry span. */
  keepMs?: number;
}

/** The in-memory store's options. */
export interface MemoryStoreOptions extends StoreTimes {
  /**
   * The most ids held. Default 100 000. To make room the oldest done mark is dropped, never
   * a live claim: full of live claims, a claim throws `StoreFullError` (the delivery is a 503).
   */
  capacity?: number;
  /** The former name of `keepMs`, in seconds. */
  ttlSeconds?: number;
  /** The clock, in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** The in-memory store: one process (or isolate) only, with its `size` (ids held). */
export interface MemoryStore extends OnceStore {
  readonly size: number;
}

/**
 * The former store interface: `claim(id)` true when the id was not taken, `release(id)`
 * after a failed handler. Still accepted; a `false` claim is then answered 200 duplicate
 * even while the other copy is still being handled, so implement `OnceStore` instead.
 */
export interface DeliveryStore {
  /** Records `id` as taken; `false` if it already was (handled, or being handled). */
  claim(id: string): boolean | Promise<boolean>;
  /** Forgets `id` after its handler failed, so the sender's retry is handled. */
  release(id: string): void | Promise<void>;
}

/** An answer of `processOnce` (and of the adapters): the HTTP status, its JSON body and headers. */
export interface OnceAnswer {
  status: 200 | 204 | 409 | 500 | 503;
  json?: { duplicate: true } | { code: "in_progress" | "handler_failed" | "store_unavailable"; message: string };
  headers?: { "retry-after": string };
}

/** The options of `processOnce`. */
export interface ProcessOnceOptions {
  /** How long one store call may take before the answer is 503, in ms. Default 5000. */
  storeTimeoutMs?: number;
  /** Called with a handler's or the store's error; default `console.error`. */
  onError?: (error: unknown, event: { id: string; type?: string | null }) => void;
  /** Called when the claim was lost while the handler ran (it may run twice); default `console.warn`. */
  onClaimLost?: (event: { id: string; type?: string | null }, info: ClaimLost) => void;
}

/**
 * The options of the adapters' `createHandler`: `secret`, or (`postwire/v1a`) `keySet`,
 * and the common ones.
 */
export type HandlerOptions = HandlerCommonOptions & (HandlerSecretOption | HandlerKeySetOption);

/** `createHandler` verifying with the endpoint's secret(s). */
export interface HandlerSecretOption {
  /**
   * The endpoint's secret(s): `whsec_…`, or several during a rotation; or a function that
   * returns them per request (a Worker's `env`). `undefined` when the handler is created
   * (Next.js evaluates routes at build time, without the runtime's environment) is read
   * again at each request; a request without a secret is answered 500 `missing_secret`.
   */
  secret: WebhookSecret | readonly WebhookSecret[] | undefined | (() => WebhookSecret | readonly WebhookSecret[] | undefined);
  keySet?: undefined;
}

/** `createHandler` verifying `v1a` signatures with a sender's published key set. */
export interface HandlerKeySetOption {
  /**
   * The sender's published key set (`new RemoteKeySet(url)` of `postwire/v1a`). With no
   * key cached and the set unavailable, a delivery is answered 503 `key_set_unavailable`
   * or `invalid_key_set` with `retry-after: 60`.
   */
  keySet: RemoteKeySet;
  secret?: undefined;
}

/** The options every adapter's `createHandler` takes beside `secret` or `keySet`. */
export interface HandlerCommonOptions {
  /** Where ids are claimed and marked done; default `memoryStore()` (this process only). */
  store?: OnceStore | DeliveryStore;
  /** How long one store call may take before the answer is 503, in ms. Default 5000. */
  storeTimeoutMs?: number;
  /** How far `webhook-timestamp` may be from now, each way. Default 300. */
  toleranceInSeconds?: number;
  /** Called with a handler's error before the 500, or the store's before the 503; default `console.error`. */
  onError?: (error: unknown, event: WebhookEvent) => void;
  /**
   * Called when a delivery's claim was lost while its handler ran (a store too slow to
   * renew it, so another copy may run the handler too); default `console.warn`. Count it.
   */
  onClaimLost?: (event: WebhookEvent, info: ClaimLost) => void;
}

/** The options of `new RemoteKeySet(url, options)`. */
export interface RemoteKeySetOptions {
  /** The least time between two fetches of the set, in ms (forged deliveries cannot make it fetch more often). Default 60 000. */
  minRefreshIntervalMs?: number;
  /** How long one fetch may take, headers and body, in ms. Default 5000. */
  timeoutMs?: number;
  /** How far `webhook-timestamp` may be from now, each way, in seconds. Default 300. */
  toleranceInSeconds?: number;
  /** The `fetch` to use. Default the runtime's global `fetch`. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** A clock in ms, for tests. Default `Date.now`. */
  now?: () => number;
}

/**
 * **`postwire/v1a` only.** `v1a` verification against the public keys a sender publishes
 * as a JSON Web Key Set at `url` (`content-type: application/jwk-set+json`). The set is
 * fetched on first use and kept for its response's `Cache-Control: max-age` (5 minutes
 * without one, at most a day); a delivery no cached key verifies fetches it again, in case
 * the sender rotated; the URL is fetched at most once per `minRefreshIntervalMs`, and
 * concurrent deliveries share one fetch. Each fetch has a deadline (`timeoutMs`) and a
 * 64 KiB cap, and follows no redirect to another origin. A failed fetch keeps the cached
 * keys (see `lastError`); with none cached, verification rejects with `key_set_unavailable`
 * or `invalid_key_set`.
 */
export declare class RemoteKeySet {
  constructor(url: string | URL, options?: RemoteKeySetOptions);
  /** The key set's URL. */
  readonly url: string;
  /** The cached keys as `whpk_` texts, current first; empty before the first fetch. */
  readonly publicKeys: string[];
  /** Why the last fetch failed, or null after a success. */
  readonly lastError: WebhookVerificationError | null;
  /** How many fetches this object has started. */
  readonly fetchCount: number;
  /** `Webhook.verify` with the set's keys: resolves to the parsed JSON body. */
  verify(payload: WebhookPayload, headers: WebhookHeaders, options?: VerifyOptions): Promise<unknown>;
  /** `Webhook.verifyEvent` with the set's keys: resolves to the typed event. */
  verifyEvent(payload: WebhookPayload, headers: WebhookHeaders, options?: Omit<VerifyOptions, "jsonParse">): Promise<WebhookEvent>;
  /** Reads a Fetch API Request's raw body once and verifies it: the typed event, or with `{ parse: "json" }` the parsed JSON. */
  verifyRequest(request: Request, options?: { now?: Date | number }): Promise<WebhookEvent>;
  verifyRequest(request: Request, options: { parse: "json"; now?: Date | number }): Promise<unknown>;
  /** Fetches the set now unless it was fetched less than `minRefreshIntervalMs` ago; resolves to whether the keys changed. Never rejects. */
  refresh(): Promise<boolean>;
}

/**
 * The package as one object, as the ESM builds' default export (and `require("postwire").default`):
 * `import postwire from "postwire"; new postwire.Webhook(secret)`.
 */
declare const postwire: {
  Webhook: typeof Webhook;
  WebhookVerificationError: typeof WebhookVerificationError;
  ReplayGuard: typeof ReplayGuard;
  generateSecret: typeof generateSecret;
  matchesSubscription: typeof matchesSubscription;
  isWebhookId: typeof isWebhookId;
  EVENT_TYPES: typeof EVENT_TYPES;
  ERROR_CODES: typeof ERROR_CODES;
};
export default postwire;

declare global {
  interface SymbolConstructor {
    /** The `using` declaration's key (as in TypeScript's lib.esnext.disposable and @types/node), for older `lib` settings. */
    readonly dispose: unique symbol;
  }
}
