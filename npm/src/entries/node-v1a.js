// `postwire/v1a` for Node (`require`; node-v1a.mjs re-exports it for `import`): node.js over
// the module built with `ed25519`, so `new Webhook("whpk_…")` verifies v1a signatures,
// synchronously. Its own inlined module: the default entry points do not grow.
import { WASM_BASE64 } from "../../build/web-v1a/wasm-base64.js";
import { instantiateApi } from "./init-v1a.js";

const api = instantiateApi(
  () => Buffer.from(WASM_BASE64, "base64"),
  () => require("node:crypto"),
);

export const {
  Webhook,
  WebhookVerificationError,
  ReplayGuard,
  generateSecret,
  matchesSubscription,
  isWebhookId,
  EVENT_TYPES,
  ERROR_CODES,
} = api;
export default api;
