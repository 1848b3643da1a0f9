// Entry point for Node, built into dist/node/index.cjs (`require`; index-import.cjs passes it
// for `import`). The module is read from dist/node/postwire_wasm_bg.wasm and compiled
// synchronously; where a bundler moved this file without it (Next.js server bundles,
// esbuild, webpack), from the inlined copy in wasm-inline.cjs (node-wasm.js). Large
// bodies are hashed with node:crypto; every decision stays in wasm. Bun and Deno never
// load this file (their export conditions pick dist/native).
// Nothing is read or compiled and node:crypto is not loaded at require time: the module on
// the first call that needs it, node:crypto on the first body large enough to use it.
import { instantiateApi } from "./init.js";
import { builtin, nodeWasmBytes, readFileOfLength } from "./node-wasm.js";

const api = instantiateApi(
  () =>
    nodeWasmBytes(
      () => readFileOfLength(__dirname + "/postwire_wasm_bg.wasm", POSTWIRE_WASM_BYTES),
      POSTWIRE_WASM_BYTES,
      () => require("./wasm-inline.cjs"),
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
} = api;
// The same object as the ESM builds' default export, so `require("postwire").default` and
// TypeScript's default import of the CommonJS types agree with them.
export default api;
