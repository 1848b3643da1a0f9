// Node module hooks that let worker/build/index.js (worker-build's output, written for
// workerd) load in plain Node, for bench/cpu.mjs:
// - `cloudflare:workers` becomes a module with the two base classes index.js extends;
// - an imported `.wasm` file becomes a compiled `WebAssembly.Module` (workerd's CompiledWasm
//   rule; Node would otherwise instantiate it itself).
import { fileURLToPath } from "node:url";

const CLOUDFLARE_WORKERS = "postwire-bench:cloudflare-workers";

export async function resolve(specifier, context, next) {
  if (specifier === "cloudflare:workers") return { url: CLOUDFLARE_WORKERS, shortCircuit: true };
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url === CLOUDFLARE_WORKERS) {
    return {
      format: "module",
      shortCircuit: true,
      source: `
        export class WorkerEntrypoint { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }
        export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }`,
    };
  }
  if (url.endsWith(".wasm")) {
    const file = JSON.stringify(fileURLToPath(url));
    return {
      format: "module",
      shortCircuit: true,
      source: `import { readFileSync } from "node:fs"; export default new WebAssembly.Module(readFileSync(${file}));`,
    };
  }
  return next(url, context);
}
