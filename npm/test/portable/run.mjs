// Runs the portable checks on the package as this runtime resolves it (`import "postwire"`,
// or a path given as the first argument), and prints one JSON line. Used for Deno, Bun and
// Node's non-node conditions.
import { runChecks, CHECK_COUNT } from "./checks.js";

const args = typeof Deno !== "undefined" ? Deno.args : process.argv.slice(2);
const target = args[0] ?? "postwire";
const pw = await import(target);
const passed = await runChecks(pw);
const runtime = typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun" : "node";
const resolved = typeof import.meta.resolve === "function" ? import.meta.resolve(target) : target;
console.log(JSON.stringify({ runtime, resolved, passed: passed.length, expected: CHECK_COUNT }));
