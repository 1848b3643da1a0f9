// `postwire/v1a` for Node (`require`; v1a-import.cjs passes it to `import`): node.js over
// the module built with `ed25519`, so `new Webhook("whpk_…")` verifies v1a signatures,
// synchronously. Its own module (dist/node/postwire_wasm_v1a_bg.wasm, or inlined in
// wasm-v1a-inline.cjs where a bundler moved this file: node-wasm.js), so the default entry
// points do not grow.
import { instantiateApi } from "./init-v1a.js";
import { builtin, nodeWasmBytes, readFileOfLength } from "./node-wasm.js";

const api = instantiateApi(
  () =>
    nodeWasmBytes(
      () => readFileOfLength(__dirname + "/postwire_wasm_v1a_bg.wasm", POSTWIRE_WASM_BYTES),
      POSTWIRE_WASM_BYTES,
      () => require("./wasm-v1a-inline.cjs"),
    ),
  () => builtin("node:crypto"),
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
  RemoteKeySet,
} = api;
export default api;
