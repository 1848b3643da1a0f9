// The one error class of the package, and the stable codes it carries.

/**
 * Every failure of verification, signing or secret parsing. A real `Error` subclass
 * (`instanceof Error` holds), with a stable `code` equal to postwire-core's:
 * `missing_header`, `invalid_header`, `timestamp_too_old`, `timestamp_too_new`,
 * `invalid_signature`, `invalid_secret`, `invalid_payload`, `invalid_public_key` (a bad
 * `whpk_` key, or one given to the default entry point instead of `postwire/v1a`), and
 * postwire/v1a's RemoteKeySet's `invalid_key_set` and `key_set_unavailable`, and
 * postwire/providers' `invalid_provider_settings` (an unknown provider, a Twilio URL or a
 * generic recipe that cannot work).
 * Messages say how to fix the cause and never contain secrets or signatures.
 */
export class WebhookVerificationError extends Error {
  /**
   * @param {string} message
   * @param {string} [code] one of the stable codes (default `invalid_signature`)
   * @param {{cause?: unknown}} [options]
   */
  constructor(message, code = "invalid_signature", options) {
    super(message, options);
    this.name = "WebhookVerificationError";
    this.code = code;
  }
}

/** The stable error codes, as postwire-core's `ErrorCode::ALL`. */
export const ERROR_CODES = Object.freeze([
  "missing_header",
  "invalid_header",
  "timestamp_too_old",
  "timestamp_too_new",
  "invalid_signature",
  "invalid_secret",
  "invalid_payload",
  "invalid_public_key",
  "invalid_key_set",
  "key_set_unavailable",
  "invalid_provider_settings",
]);
