// `postwire/providers` for Vercel's Edge runtime (the `edge-light` condition): the providers
// module imported precompiled with the `?module` suffix.
import wasmModule from "./postwire_wasm_providers_bg.wasm?module";
import { createProvidersApi } from "../providers/api.js";

const api = createProvidersApi(() => wasmModule);

export const { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES } = api;
export default api;
