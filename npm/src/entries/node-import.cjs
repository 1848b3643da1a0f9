// Node's `import` entry (the `node` + `import` condition): index.cjs, passed through, so
// that `import` and `require` share one instance (one wasm module, one
// WebhookVerificationError class; the default import is what `require` returns).
// build.sh writes one per Node entry (index-import.cjs, v1a-import.cjs), with the file
// name below replaced.
//
// Why a CommonJS file and not an ES module re-exporting index.cjs: Node's ES module loader
// scans every CommonJS file it imports for its export names (cjs-module-lexer, running in
// JavaScript over each byte, cold in a new process). Scanning the 39 KB bundle cost an ES
// module app 4 to 6 ms of its cold start on Node 20 and 22 (bench/cold.mjs, "ES module
// app"), and an ES module in front of it another 0.2 to 0.6 ms. The scanner reads only this
// file: the names come from the annotation on the last line (esbuild's form; it never
// runs), the values from module.exports. Assigning the `require` call itself to
// module.exports would be followed as a re-export and the bundle scanned after all, so
// the value passes through a variable.
"use strict";
const api = require("./index.cjs");
module.exports = api;
0 && (module.exports = { Webhook, WebhookVerificationError, ReplayGuard, generateSecret, matchesSubscription, isWebhookId, EVENT_TYPES, ERROR_CODES });
