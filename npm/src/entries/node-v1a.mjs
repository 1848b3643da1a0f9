// `postwire/v1a` for Node's `import`: the same instance as its `require` (one wasm module,
// one WebhookVerificationError class), re-exported with named ESM exports.
import api from "./v1a.cjs";

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
