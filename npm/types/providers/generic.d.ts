// Types of `postwire/providers/generic`.
import type { ProviderBody, ProviderHeaders, GenericOptions, GenericRecipe, ProviderDelivery } from "postwire/providers";

export type { ProviderBody, ProviderHeaders, GenericOptions, GenericRecipe, ProviderDelivery };
export { WebhookVerificationError, ERROR_CODES } from "postwire/providers";

/** This entry's provider. */
export declare const provider: "generic";

/** Verifies one delivery signed as `options.recipe` describes; throws a WebhookVerificationError with its code. */
export declare function verify(body: ProviderBody, headers: ProviderHeaders, options: GenericOptions): ProviderDelivery;
