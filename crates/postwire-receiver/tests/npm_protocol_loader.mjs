// A Node module hook for tests/npm_interop.mjs: the npm stores' sources import the shared
// protocol files (../protocol/*/*.lua, *.sql) as text, which npm/build.sh inlines with
// esbuild's `text` loader; this hook gives Node the same `export default "<text>"`, so the
// test runs the stores' sources over the very files the Rust stores include.
import { readFile } from "node:fs/promises";

export async function load(url, context, nextLoad) {
  if (url.startsWith("file:") && (url.endsWith(".lua") || url.endsWith(".sql"))) {
    const text = await readFile(new URL(url), "utf8");
    return { format: "module", shortCircuit: true, source: `export default ${JSON.stringify(text)};` };
  }
  return nextLoad(url, context);
}
