// The benchmark in a page of headless Chromium (bundled by ../runtimes.mjs with esbuild's
// browser condition): sets window.__bench to the rows, or to { error }.
import * as postwire from "postwire";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { run } from "./cases.js";

run({ postwire, StandardWebhook, nodeCrypto: null }, window.__options).then(
  (rows) => {
    window.__bench = { runtime: navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? "chromium", rows };
  },
  (e) => {
    window.__bench = { error: String(e?.stack ?? e) };
  },
);
