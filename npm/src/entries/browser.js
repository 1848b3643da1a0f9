// Entry point for browsers and bundlers (the `browser` condition): the .wasm ships as a
// file next to this one, found with `new URL(…, import.meta.url)`, which Vite, webpack,
// Rollup and Parcel recognize and copy as an asset (esbuild leaves the URL as is: copy
// postwire_wasm_bg.wasm next to the bundle). It is fetched and compiled, streaming, when
// the module loads (a top-level await), and instantiated on first use; the API is then
// synchronous, as everywhere. Needs `script-src 'wasm-unsafe-eval'` under a strict CSP.
// For a runtime that cannot fetch its own files, import "postwire/inline".
import { instantiateApi } from "./init.js";

async function compile(url) {
  if (typeof WebAssembly.compileStreaming === "function") {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch {
      // A server that sends the .wasm without `application/wasm`: compile from bytes.
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`postwire: fetching ${url} failed with ${response.status}`);
  return WebAssembly.compile(await response.arrayBuffer());
}

const wasmModule = await compile(new URL("./postwire_wasm_bg.wasm", import.meta.url));
const api = instantiateApi(() => wasmModule);

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
