// `postwire/providers` for Cloudflare Workers (workerd): the providers module imported as a
// module (Workers may not compile wasm from bytes).
import wasmModule from "./postwire_wasm_providers_bg.wasm";
import { createProvidersApi } from "../providers/api.js";

const api = createProvidersApi(() => wasmModule);

export const { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES } = api;
export default api;
