// Types of `postwire/providers/twilio`.
import type { ProviderBody, ProviderHeaders, TwilioOptions, ProviderDelivery } from "postwire/providers";

export type { ProviderBody, ProviderHeaders, TwilioOptions, ProviderDelivery };
export { WebhookVerificationError, ERROR_CODES } from "postwire/providers";

/** This entry's provider. */
export declare const provider: "twilio";

/** Verifies one Twilio request (signed over `options.publicUrl` and the form); throws a WebhookVerificationError with its code. */
export declare function verify(body: ProviderBody, headers: ProviderHeaders, options: TwilioOptions): ProviderDelivery;
