// postwire/providers' edge-light build in Vercel's Edge runtime (the `edge-runtime`
// package), bundled as Next.js's edge compiler does: the providers .wasm imported with
// `?module` becomes a WebAssembly.Module compiled outside the sandbox, and compiling wasm
// from bytes is refused inside it. A Stripe delivery signed by its SDK verifies; a changed
// byte is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PROVIDER_CASES } from "./providers/sign.mjs";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
// Inside the package's directory, so `postwire/providers/stripe` resolves to this package by its name.
const dir = join(npmDir, "build/edge-providers-test");

test("postwire/providers/stripe's edge-light build in edge-runtime: verifies an SDK-signed delivery, no wasm compiled from bytes", async () => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "entry.js"),
    `import { verify } from "postwire/providers/stripe";
addEventListener("fetch", (event) => {
  event.respondWith((async () => {
    try {
      const body = await event.request.text();
      const secret = event.request.headers.get("x-test-secret");
      const d = verify(body, event.request.headers, { secret });
      let tampered = "accepted";
      try {
        verify(body + " ", event.request.headers, { secret });
      } catch (e) {
        tampered = e.code;
      }
      return Response.json({ id: d.id, type: d.type, tampered });
    } catch (e) {
      return Response.json({ error: String(e && e.stack || e) });
    }
  })());
});
`,
  );
  const esbuild = await import("esbuild");
  const bindings = {};
  const result = await esbuild.build({
    entryPoints: [join(dir, "entry.js")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "neutral",
    conditions: ["edge-light", "worker", "browser"],
    metafile: true,
    logLevel: "warning",
    plugins: [
      {
        name: "wasm-module-binding",
        setup(build) {
          build.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({ path: join(args.resolveDir, args.path.replace(/\?module$/, "")), namespace: "wasm-module" }));
          build.onLoad({ filter: /.*/, namespace: "wasm-module" }, async (args) => {
            const bytes = readFileSync(args.path);
            const name = `wasm_${createHash("sha1").update(bytes).digest("hex")}`;
            bindings[name] = await WebAssembly.compile(bytes);
            return { contents: `export default globalThis.${name};`, loader: "js" };
          });
        },
      },
    ],
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(inputs.some((i) => i.endsWith("dist/edge-light/providers.js")), inputs.join(", "));
  assert.equal(Object.keys(bindings).length, 1, "one module, imported precompiled");
  const code = result.outputFiles[0].text;
  assert.doesNotMatch(code, /AGFzbQ/, "no module inlined as bytes (base64 of \\0asm)");
  const { EdgeRuntime } = await import("edge-runtime");
  const runtime = new EdgeRuntime({ initialCode: code, codeGeneration: { strings: false, wasm: false }, extend: (context) => Object.assign(context, bindings) });
  const d = await PROVIDER_CASES.stripe.make(2048, Math.floor(Date.now() / 1000));
  const res = await runtime.dispatchFetch("http://edge/stripe", { method: "POST", headers: { ...d.headers, "x-test-secret": d.options.secret }, body: d.body });
  assert.deepEqual(await res.json(), { id: "evt_live_1", type: "invoice.paid", tampered: "invalid_signature" });
});
