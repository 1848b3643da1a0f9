// A TypeScript consumer of the package through `require` (CommonJS types).
import postwire = require("postwire");

const wh = new postwire.Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
const sig: string = wh.sign("msg_1", new Date(), new Uint8Array(0));
let err: postwire.WebhookVerificationError | undefined;
try {
  wh.verify("{}", { "webhook-id": "a", "webhook-timestamp": "1", "webhook-signature": sig });
} catch (e) {
  if (e instanceof postwire.WebhookVerificationError) err = e;
}
const viaDefault: typeof postwire.Webhook = postwire.default.Webhook;
export = { sig, err, viaDefault };
