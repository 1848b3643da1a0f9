// Entry point for Node, `require` (and, through index.mjs, `import`): the wasm-bindgen
// `nodejs` glue reads the .wasm beside it with fs, synchronously, at first require.
"use strict";
const wasm = require("./postwire_wasm.cjs");
const { createApi } = require("../api.js");

module.exports = createApi(wasm);
