// What dist/node/index.mjs imports: index.cjs, passed through. build.sh writes one per
// Node entry (index-bridge.cjs, v1a-bridge.cjs), with the file name below replaced.
//
// Why not import index.cjs directly: Node's ES module loader scans every CommonJS file it
// imports for its export names (cjs-module-lexer, running in JavaScript over each byte, cold
// in a new process). index.mjs needs none of them: it takes the default export and names the
// exports itself. Scanning the 39 KB bundle cost an ES module app 4 to 6 ms of its cold
// start on Node 22 (bench/cold.mjs, "ES module app"); this file is all the scanner reads.
// Assigning the `require` call itself to module.exports would be followed as a re-export
// and the bundle scanned after all, so the value passes through a variable.
"use strict";
const api = require("./index.cjs");
module.exports = api;
