// `postwire/v1a` for Node's `import`: the same instance as its `require` (one wasm module,
// one WebhookVerificationError class), re-exported with named ESM exports.
import api from "./v1a-bridge.cjs"; // v1a.cjs's value, not scanned: see node-bridge.cjs

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
