// The benchmark inside Node, Bun or Deno (started by ../runtimes.mjs): the package as this
// runtime's export condition resolves it, standardwebhooks, and node:crypto. Prints JSON.
import * as nodeCrypto from "node:crypto";
import { createRequire } from "node:module";
import * as postwire from "postwire";
import { run } from "./cases.js";

const args = typeof Deno !== "undefined" ? Deno.args : process.argv.slice(2);
const options = JSON.parse(args[0] ?? "{}");
const require = createRequire(import.meta.url);
const { Webhook: StandardWebhook } = require("standardwebhooks");
const rows = await run({ postwire, StandardWebhook, nodeCrypto }, options);
const runtime = typeof Deno !== "undefined" ? `deno ${Deno.version.deno}` : typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;
console.log(JSON.stringify({ runtime, resolved: import.meta.resolve("postwire"), rows }));
