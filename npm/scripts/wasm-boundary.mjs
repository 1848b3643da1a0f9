// The cold-start rule for the package's wasm modules, checked by npm/build.sh on every
// build and by npm/test/modules.test.mjs on the shipped files: a module imports nothing,
// and every exported function takes only numbers (i32, i64, f32, f64) and returns at most
// one number. V8 (Node 20) calls such exports through its generic JavaScript-to-wasm
// wrapper; for any other signature (a string return is two results) and for every import
// it compiles an optimized wrapper while compiling the module, about 1.5 ms of a cold
// start, more than the rest of the module's compilation.
//
//   node npm/scripts/wasm-boundary.mjs FILE.wasm...   # non-zero, with the reasons, if one breaks it
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const NUMBERS = new Set([0x7f, 0x7e, 0x7d, 0x7c]); // i32, i64, f32, f64
const NAMES = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x6f: "externref", 0x70: "funcref", 0x7b: "v128" };

/**
 * What in a module breaks the rule: one line per import, and per export whose signature
 * V8 would compile a wrapper for. Empty when the module keeps it.
 * @param {Uint8Array} bytes a wasm binary
 * @returns {string[]}
 */
export function boundaryProblems(bytes) {
  let p = 8;
  const u = () => {
    let r = 0;
    let shift = 0;
    let b;
    do {
      b = bytes[p++];
      r += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return r;
  };
  const name = () => {
    const n = u();
    const s = new TextDecoder().decode(bytes.subarray(p, p + n));
    p += n;
    return s;
  };
  const types = [];
  const funcTypes = []; // type index of each function, imports first
  const problems = [];
  const exports = [];
  while (p < bytes.length) {
    const id = bytes[p++];
    const size = u();
    const end = p + size;
    if (id === 1) {
      for (let n = u(); n > 0; n--) {
        if (bytes[p++] !== 0x60) throw new Error("unsupported type form");
        const params = Array.from({ length: u() }, () => bytes[p++]);
        const results = Array.from({ length: u() }, () => bytes[p++]);
        types.push({ params, results });
      }
    } else if (id === 2) {
      for (let n = u(); n > 0; n--) {
        const where = `${name()}.${name()}`;
        const kind = bytes[p++];
        problems.push(`imports ${where}`);
        if (kind === 0) funcTypes.push(u());
        else if (kind === 1) {
          p++;
          if (bytes[p++] & 1) u(), u();
          else u();
        } else if (kind === 2) {
          if (bytes[p++] & 1) u(), u();
          else u();
        } else if (kind === 3) p += 2;
        else throw new Error(`unknown import kind ${kind}`);
      }
    } else if (id === 3) {
      for (let n = u(); n > 0; n--) funcTypes.push(u());
    } else if (id === 7) {
      for (let n = u(); n > 0; n--) {
        const exportName = name();
        const kind = bytes[p++];
        const index = u();
        if (kind === 0) exports.push([exportName, index]);
      }
    }
    p = end;
  }
  const show = (ts) => ts.map((t) => NAMES[t] ?? `0x${t.toString(16)}`).join(", ");
  for (const [exportName, index] of exports) {
    const { params, results } = types[funcTypes[index]];
    if (!params.every((t) => NUMBERS.has(t)) || results.length > 1 || !results.every((t) => NUMBERS.has(t))) {
      problems.push(`exports ${exportName}: (${show(params)}) -> (${show(results)})`);
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let failed = false;
  for (const file of process.argv.slice(2)) {
    const problems = boundaryProblems(readFileSync(file));
    for (const problem of problems) console.error(`${file}: ${problem}`);
    failed ||= problems.length > 0;
  }
  if (failed) {
    console.error("a module breaks the cold-start rule of npm/scripts/wasm-boundary.mjs: no imports, numbers only at exports");
    process.exit(1);
  }
}
