// Entry point for Bun and Deno: ESM, the module's bytes inlined (as for browsers), and the
// runtime's native node:crypto for the HMAC of large bodies, as on Node. Both runtimes
// implement node:crypto natively (BoringSSL in Bun, Rust crypto in Deno), several times
// faster than SHA-256 in wasm on large bodies; every decision stays in wasm. No Buffer and
// no require, so it runs in Deno outside npm compatibility mode too.
import { createHmac, createSecretKey } from "node:crypto";
import { WASM_BASE64 } from "../../build/web/wasm-base64.js";
import { instantiateApi } from "./init.js";

function decodeBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// Where node:crypto overtakes one wasm call (measured here, roughly): Bun's HMAC is cheap
// to set up, so from 512 B; Deno's costs more per call, so from 4 KiB.
const NATIVE_MIN_BYTES = typeof Bun !== "undefined" ? 512 : 4096;

const api = instantiateApi(
  () => decodeBase64(WASM_BASE64),
  () => ({ createHmac, createSecretKey }),
  NATIVE_MIN_BYTES,
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
export default api;
