// One provider's entry (`postwire/providers/stripe`, …): build.sh bundles this file once per
// provider with POSTWIRE_PROVIDER defined as its name. It imports `postwire/providers` by
// the package's name, so the runtime's export condition picks that build and every
// provider entry of an application shares its one wasm module.
import { verifyWith, WebhookVerificationError, ERROR_CODES } from "postwire/providers";

/** This entry's provider. */
export const provider = POSTWIRE_PROVIDER;

/**
 * Verifies one delivery of this provider: `{ id, type, timestamp, payload }`, or a thrown
 * WebhookVerificationError with its stable `code`.
 */
export function verify(body, headers, options) {
  return verifyWith(POSTWIRE_PROVIDER, body, headers, options);
}

export { WebhookVerificationError, ERROR_CODES };
