// Types of `postwire/providers/PROVIDER_NAME` (build.sh writes one per preset from this file).
import type { ProviderBody, ProviderHeaders, ProviderOptions, ProviderDelivery } from "postwire/providers";

export type { ProviderBody, ProviderHeaders, ProviderOptions, ProviderDelivery };
export { WebhookVerificationError, ERROR_CODES } from "postwire/providers";

/** This entry's provider. */
export declare const provider: "PROVIDER_NAME";

/** Verifies one PROVIDER_NAME delivery; throws a WebhookVerificationError with its code. */
export declare function verify(body: ProviderBody, headers: ProviderHeaders, options: ProviderOptions): ProviderDelivery;
