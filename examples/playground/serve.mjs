// A tiny static server for the playground, with no dependencies: it serves this folder,
// and the `postwire` package's browser builds at /vendor/postwire.js and, for `whpk_`
// public keys, /vendor/postwire-v1a.js (postwire/v1a; app.js imports them from there). Nothing else is reachable, and it listens on
// loopback only.
//
//   node examples/playground/serve.mjs [port] [key set origin...]     then open http://127.0.0.1:<port>/
//
// The page may fetch only from the key set origins given (e.g. https://webhooks.example.com,
// for a key set URL in the key field); by default from nowhere.
//
// The test (playground.test.mjs) starts it with startPlaygroundServer() on a free port.
import http from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** Where the package's browser build is: node_modules/postwire → npm/ (root package.json). */
function postwireWebBuild() {
  const pkgJson = require.resolve("postwire/package.json");
  return path.join(path.dirname(pkgJson), "dist", "web", "index.js");
}

const FILES = {
  "/": ["index.html", "text/html; charset=utf-8"],
  "/index.html": ["index.html", "text/html; charset=utf-8"],
  "/style.css": ["style.css", "text/css; charset=utf-8"],
  "/app.js": ["app.js", "text/javascript; charset=utf-8"],
  "/samples.js": ["samples.js", "text/javascript; charset=utf-8"],
  "/favicon.svg": ["favicon.svg", "image/svg+xml"],
};

export async function startPlaygroundServer({ port = 0, keySetOrigins = [] } = {}) {
  const origins = keySetOrigins.map((o) => new URL(o).origin);
  const connectSrc = origins.length === 0 ? "'none'" : origins.join(" ");
  const vendor = postwireWebBuild();
  const vendorV1a = path.join(path.dirname(vendor), "v1a.js");
  const server = http.createServer(async (req, res) => {
    const { pathname } = new URL(req.url ?? "/", "http://localhost");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    let file;
    let type;
    if (pathname === "/vendor/postwire.js") {
      [file, type] = [vendor, "text/javascript; charset=utf-8"];
    } else if (pathname === "/vendor/postwire-v1a.js") {
      [file, type] = [vendorV1a, "text/javascript; charset=utf-8"];
    } else if (FILES[pathname]) {
      [file, type] = [path.join(HERE, FILES[pathname][0]), FILES[pathname][1]];
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": type,
        "cache-control": "no-store",
        // The page needs nothing from any other origin; say so to the browser.
        "content-security-policy":
          `default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src ${connectSrc}`,
      });
      res.end(req.method === "HEAD" ? undefined : body);
    } catch (e) {
      const missing = file === vendor || file === vendorV1a;
      res.writeHead(missing ? 503 : 404, { "content-type": "text/plain" });
      res.end(missing ? "the postwire package is not built: run `bash npm/build.sh`" : "not found");
    }
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return { url, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { url } = await startPlaygroundServer({ port: Number(process.argv[2] ?? 8787), keySetOrigins: process.argv.slice(3) });
  console.log(`postwire playground: ${url}`);
}
