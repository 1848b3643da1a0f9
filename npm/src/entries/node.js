// Entry point for Node, built into dist/node/index.cjs (`require`; index.mjs re-exports it
// for `import`). Self-contained: the module's bytes are inlined and compiled synchronously,
// so it survives bundlers that move files (Next.js server bundles, esbuild, webpack) where
// reading a .wasm beside `__dirname` would break. Large bodies are hashed with
// node:crypto; every decision stays in wasm. Bun and Deno never load this file (their
// export conditions pick dist/web).
// Nothing is compiled and node:crypto is not loaded at require time: the module on the
// first call that needs it, node:crypto on the first body large enough to use it.
import { WASM_BASE64 } from "../../build/web/wasm-base64.js";
import { instantiateApi } from "./init.js";

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
// The same object as the ESM builds' default export, so `require("postwire").default` and
// TypeScript's default import of the CommonJS types agree with them.
export default api;
