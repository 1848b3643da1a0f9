// Entry point for Node, `require` (and, through index.mjs, `import`): the wasm-bindgen
// `nodejs` glue reads the .wasm beside it with fs, synchronously, at first require.
// Bun and Deno never load this file (their export conditions pick dist/web).
"use strict";
const wasm = require("./postwire_wasm.cjs");
const { createHmac, createSecretKey } = require("node:crypto");
const { createApi } = require("../api.js");

// Large bodies are hashed with node:crypto (native, SHA extensions); decisions stay in wasm.
module.exports = createApi(wasm, { createHmac, createSecretKey });
