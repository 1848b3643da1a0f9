// `postwire/providers` for browsers and bundlers (the `browser` condition): the providers
// module ships as a file next to this one, found with `new URL(…, import.meta.url)` (Vite,
// webpack, Rollup and Parcel copy it as an asset; with esbuild, copy
// postwire_wasm_providers_bg.wasm next to the bundle), fetched and compiled, streaming,
// when the module loads (a top-level await), so a page downloads it as binary (155 KB gzip)
// instead of inlined base64 (about 210 KB), and `verify` stays synchronous. For a runtime
// that cannot fetch its own files, dist/web/providers.js (the `default` condition) inlines it.
import { createProvidersApi } from "../providers/api.js";

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

const wasmModule = await compile(new URL("./postwire_wasm_providers_bg.wasm", import.meta.url));
const api = createProvidersApi(() => wasmModule);

export const { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES } = api;
export default api;
