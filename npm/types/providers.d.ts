// Types of `postwire/providers`: other providers' webhooks (Stripe, GitHub, Shopify, Slack,
// Twilio, Paddle, Linear, SendGrid, Discord, Standard Webhooks, or a generic HMAC recipe),
// verified by postwire-core in the package's providers wasm module. The same file serves
// `import` (providers.d.ts) and `require` (providers.d.cts).

import type { ErrorCode } from "postwire";

export type { ErrorCode };

/** Every stable error code. */
export declare const ERROR_CODES: readonly ErrorCode[];

/**
 * Thrown by every failed verification. A real `Error` subclass with a stable `code`, named
 * like the main entry's class (this entry's bundle has its own copy: tell them apart by
 * `name` and `code`, not `instanceof` across entries).
 */
export declare class WebhookVerificationError extends Error {
  constructor(message: string, code?: ErrorCode, options?: { cause?: unknown });
  readonly name: "WebhookVerificationError";
  readonly code: ErrorCode;
}

/** The providers known by name. */
export type ProviderName =
  | "standard-webhooks"
  | "stripe"
  | "github"
  | "shopify"
  | "slack"
  | "twilio"
  | "paddle"
  | "linear"
  | "sendgrid"
  | "discord"
  | "generic";

/** Every provider name, in that order. */
export declare const PROVIDERS: readonly ProviderName[];

/** The raw body, exactly as received (Node's `Buffer` is a `Uint8Array`). */
export type ProviderBody = string | Uint8Array | ArrayBuffer | ArrayBufferView;

/**
 * The request's headers: a plain object with names in any case, Node's
 * `IncomingHttpHeaders` (an array value is joined with ", "), or a Fetch `Headers`.
 */
export type ProviderHeaders =
  | { forEach(callback: (value: string, name: string) => void): void; get(name: string): string | null }
  | Record<string, string | readonly string[] | number | undefined>;

/** What a verified delivery is. */
export interface ProviderDelivery {
  /** The delivery's id (1 to 256 visible ASCII characters): de-duplicate by it. */
  id: string;
  /** The event type where the provider names one, else null (SendGrid, Twilio). */
  type: string | null;
  /** The signed timestamp in Unix seconds, where the scheme has one, else null. */
  timestamp: number | null;
  /**
   * The verified body: parsed JSON when its first non-blank character is `{` or `[`, else
   * the form decoded (Twilio, Slack's commands) as an object of strings, a repeated name
   * giving an array.
   */
  payload: unknown;
}

/** The options every provider takes. */
export interface ProviderOptions {
  /**
   * The key, or several during a rotation (any one verifying is enough): the provider's
   * signing secret as text (Stripe's `whsec_…`, Twilio's auth token, …), SendGrid's base64
   * DER public key, Discord's hex public key, Standard Webhooks' `whsec_`/`whpk_` keys.
   */
  secret: string | readonly string[];
  /** The timestamp tolerance in seconds, both ways (default: the provider's; ignored without a signed timestamp). */
  toleranceInSeconds?: number;
  /** The current time (a Date or milliseconds; default the clock), for tests. */
  now?: Date | number;
}

/** Twilio's options: the public URL Twilio calls is part of what it signs. */
export interface TwilioOptions extends ProviderOptions {
  /** The URL exactly as configured in Twilio's console, query string included. */
  publicUrl: string;
}

/** A provider that signs with an HMAC, described field by field (the generic recipe). */
export interface GenericRecipe {
  /** The header holding the signature. */
  signatureHeader: string;
  /** Default `"sha256"`. */
  algorithm?: "sha1" | "sha256" | "sha512";
  /** Default `"hex"` (either case); `"base64"`: standard alphabet, padded or not. */
  encoding?: "hex" | "base64";
  /** Text before the signature in the header (e.g. `"sha256="`); default none. */
  prefix?: string;
  /** The header with Unix seconds when `{timestamp}{separator}{body}` is signed; default: the body alone is signed. */
  timestampHeader?: string;
  /** Between the timestamp and the body; default `"."`. */
  separator?: string;
  /** The recipe's tolerance in seconds, both ways; default 300. */
  toleranceInSeconds?: number;
  /** The header naming the delivery; default: the id is `generic_` + SHA-256 hex of what is signed. */
  idHeader?: string;
  /** The header naming the event type; default none. */
  typeHeader?: string;
}

/** The generic provider's options. */
export interface GenericOptions extends ProviderOptions {
  recipe: GenericRecipe;
}

/** `verify`'s options: the provider and its settings. */
export type AnyProviderOptions =
  | (ProviderOptions & { provider: Exclude<ProviderName, "twilio" | "generic"> })
  | (TwilioOptions & { provider: "twilio" })
  | (GenericOptions & { provider: "generic" });

/** Verifies one delivery of `options.provider`; throws a WebhookVerificationError with its code. */
export declare function verify(body: ProviderBody, headers: ProviderHeaders, options: AnyProviderOptions): ProviderDelivery;

/** Verifies one delivery of `provider` (what each `postwire/providers/<name>` entry calls). */
export declare function verifyWith(
  provider: ProviderName,
  body: ProviderBody,
  headers: ProviderHeaders,
  options: ProviderOptions | TwilioOptions | GenericOptions,
): ProviderDelivery;

declare const providers: {
  verify: typeof verify;
  verifyWith: typeof verifyWith;
  PROVIDERS: typeof PROVIDERS;
  WebhookVerificationError: typeof WebhookVerificationError;
  ERROR_CODES: typeof ERROR_CODES;
};
export default providers;

/** A provider's entry, as `import * as stripe from "postwire/providers/stripe"` gives it. */
export interface ProviderEntry {
  readonly provider: ProviderName;
  verify(body: ProviderBody, headers: ProviderHeaders, options: any): ProviderDelivery;
}

/** A verified delivery as the adapters hand it to a handler: the delivery and its provider's name. */
export interface ProviderEvent extends ProviderDelivery {
  provider: ProviderName;
}

/**
 * The adapters' handlers for another provider: by the provider's event type
 * (`"invoice.paid"`, `"pull_request"`), and `"*"` for any delivery whose type has no handler
 * of its own or that has no type (SendGrid, Twilio).
 */
export type ProviderHandlers = Record<string, (event: ProviderEvent) => unknown>;

/** `createHandler(handlers, { provider, secret })` of postwire/express, postwire/hono and postwire/next. */
export interface ProviderHandlerOptions {
  /** The provider's entry: `import * as stripe from "postwire/providers/stripe"`. */
  provider: ProviderEntry;
  /** The key(s), as `verify` takes them; or a function returning them per request (a Worker's `env`). */
  secret: string | readonly string[] | undefined | (() => string | readonly string[] | undefined);
  /** The timestamp tolerance in seconds (default the provider's). */
  toleranceInSeconds?: number;
  /** Twilio: the URL Twilio calls. */
  publicUrl?: string;
  /** generic: the recipe. */
  recipe?: GenericRecipe;
  /** Where ids are claimed and marked done; default `memoryStore()` (this process only). */
  store?: import("postwire").OnceStore | import("postwire").DeliveryStore;
  /** How long one store call may take before the answer is 503, in ms. Default 5000. */
  storeTimeoutMs?: number;
  /** Called with a handler's error before the 500, or the store's before the 503; default `console.error`. */
  onError?: (error: unknown, event: ProviderEvent) => void;
  /** Called when a delivery's claim was lost while its handler ran; default `console.warn`. */
  onClaimLost?: (event: ProviderEvent, info: import("postwire").ClaimLost) => void;
  keySet?: undefined;
}
