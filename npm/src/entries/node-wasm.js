// Where the Node builds get their module's bytes: the .wasm file beside the built entry
// (dist/node/), read with openSync + readSync into a buffer of the known size (Node's
// first readFileSync of a binary file cost about 0.07 ms more at a cold start: its buffer
// path's functions are compiled on first use). Inlining it as base64 cost twice as much at
// a cold start: V8 scans the 110 KB string literal when it compiles the file, and decoding
// it is a second pass. Bundlers that move the entry without its files (a Next.js or
// esbuild server bundle) leave no file beside it; then, or if the file there is not this
// build's (another length), the inlined copy is loaded from wasm-inline.cjs, which a
// bundler includes since it is a plain `require`.

/**
 * Node's built-in module `id` (`node:fs`, `node:crypto`): through `process.getBuiltinModule`
 * where Node has it (20.16, 22.3 and later), which skips what `require` does for a built-in
 * on its first call (its ES module facade: about 0.06 ms of a cold start when the package
 * is the first thing that requires one); `require` on older Node. Each name is written out
 * so that bundlers see a literal `require`.
 * @param {"node:fs" | "node:crypto"} id
 * @returns {object}
 */
export function builtin(id) {
  const get = process.getBuiltinModule;
  if (typeof get === "function") return get(id);
  return id === "node:fs" ? require("node:fs") : require("node:crypto");
}

/**
 * The bytes of the file at `path` if it is `length` bytes long, else a different length
 * (reads at most one byte more, enough to tell).
 * @param {string} path
 * @param {number} length
 * @returns {Uint8Array}
 */
export function readFileOfLength(path, length) {
  const fs = builtin("node:fs");
  const fd = fs.openSync(path, "r");
  try {
    const bytes = new Uint8Array(length + 1);
    return bytes.subarray(0, fs.readSync(fd, bytes, 0, length + 1, 0));
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * @param {() => Uint8Array} read reads the .wasm beside the entry; written out in each
 *   entry with the file's name as a literal, so that tools that trace a deployment's files
 *   (`__dirname + "/…"`, which they evaluate as they do `path.join`) find it; not
 *   `path.join` itself, whose first call costs a cold start about 0.06 ms
 * @param {number} length its length in bytes, as built
 * @param {() => string} inline the module as base64, for when the file is missing or not this build's
 * @returns {Uint8Array}
 */
export function nodeWasmBytes(read, length, inline) {
  try {
    const bytes = read();
    if (bytes.length === length) return bytes;
  } catch {
    // Not beside the entry (a bundle): the inlined copy below.
  }
  return Buffer.from(inline(), "base64");
}
