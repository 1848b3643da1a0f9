// postwire/providers' types as an ES module consumer sees them (checked by providers.test.mjs with tsc).
import { verify, PROVIDERS, WebhookVerificationError, type ProviderDelivery, type ProviderName } from "postwire/providers";
import * as stripe from "postwire/providers/stripe";
import * as twilio from "postwire/providers/twilio";
import * as generic from "postwire/providers/generic";
import { createHandler as expressHandler } from "postwire/express";
import { createHandler as honoHandler } from "postwire/hono";
import { createHandler as nextHandler } from "postwire/next";
import { processOnce, memoryStore } from "postwire/once";

const headers: Record<string, string> = { "stripe-signature": "t=1,v1=00" };
const d: ProviderDelivery = verify("{}", headers, { provider: "stripe", secret: "whsec_x" });
const id: string = d.id;
const type: string | null = d.type;
const ts: number | null = d.timestamp;
const names: readonly ProviderName[] = PROVIDERS;
stripe.verify(new Uint8Array(), new Headers(), { secret: ["a", "b"], toleranceInSeconds: 10, now: new Date() });
twilio.verify("a=1", headers, { secret: "tok", publicUrl: "https://x.example/sms" });
generic.verify("{}", headers, { secret: "k", recipe: { signatureHeader: "X-Sig", algorithm: "sha512", encoding: "base64" } });
// @ts-expect-error Twilio needs its public URL
twilio.verify("a=1", headers, { secret: "tok" });
// @ts-expect-error a provider's name, not any string
verify("{}", headers, { provider: "stripe2", secret: "x" });
// @ts-expect-error the generic provider needs a recipe
verify("{}", headers, { provider: "generic", secret: "x" });
// @ts-expect-error md5 is not an algorithm
generic.verify("{}", headers, { secret: "k", recipe: { signatureHeader: "X", algorithm: "md5" } });
try {
  stripe.verify("{}", headers, { secret: "x" });
} catch (e) {
  if (e instanceof WebhookVerificationError && e.code === "invalid_provider_settings") console.log(e.message);
}
expressHandler({ "invoice.paid": (e) => console.log(e.provider, e.payload), "*": () => {} }, { provider: stripe, secret: "whsec_x", limit: 1024 });
honoHandler({ "*": (e) => void e.id }, { provider: twilio, secret: () => "tok", publicUrl: "https://x.example/sms" });
nextHandler({ "*": (e) => void e.type }, { provider: generic, secret: "k", recipe: { signatureHeader: "X-Sig" }, store: memoryStore() });
await processOnce(stripe.verify("{}", headers, { secret: "x" }), (e) => void e.payload, memoryStore());
void [id, type, ts, names];
