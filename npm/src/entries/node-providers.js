// `postwire/providers` for Node (`require`; providers-import.cjs passes it to `import`): the
// providers API (../providers/api.js) over the third wasm module, built with
// postwire-wasm's `providers` feature, read from dist/node/postwire_wasm_providers_bg.wasm
// (or inlined in wasm-providers-inline.cjs where a bundler moved this file: node-wasm.js).
import { createProvidersApi } from "../providers/api.js";
import { nodeWasmBytes, readFileOfLength } from "./node-wasm.js";

const api = createProvidersApi(() =>
  nodeWasmBytes(
    () => readFileOfLength(__dirname + "/postwire_wasm_providers_bg.wasm", POSTWIRE_WASM_BYTES),
    POSTWIRE_WASM_BYTES,
    () => require("./wasm-providers-inline.cjs"),
  ),
);

export const { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES } = api;
export default api;
