// The package in a page of real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; nothing downloaded): once bundled for the browser, and once imported
// natively as an ES module straight from dist/web, without a bundler.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { CHECK_COUNT } from "./portable/checks.js";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = npmDir + "build/chromium-test/";
const ORIGIN = "http://postwire.test";

let browser;
before(async () => {
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/chromium/page.js", "--bundle", "--format=esm", "--platform=browser", `--outfile=${outDir}page.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
});
after(async () => {
  await browser?.close();
});

/** A page whose requests to ORIGIN are answered from `files` (path → [type, body]); nothing else is reachable. */
async function pageWith(files) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    const file = url.origin === ORIGIN ? files[url.pathname] : undefined;
    if (!file) return route.fulfill({ status: 404, body: "not found" });
    return route.fulfill({ status: 200, contentType: file[0], body: file[1] });
  });
  return { page, errors };
}

async function resultOf(page, errors) {
  await page.waitForFunction(() => window.__postwire !== undefined, null, { timeout: 30_000 });
  const result = await page.evaluate(() => window.__postwire);
  assert.deepEqual(errors, []);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.passed.length, CHECK_COUNT);
  return result;
}

test("bundled for the browser (esbuild, browser condition; the .wasm beside the bundle)", async () => {
  const { page, errors } = await pageWith({
    "/": ["text/html", '<!doctype html><script type="module" src="/page.js"></script>'],
    "/page.js": ["text/javascript", readFileSync(outDir + "page.js", "utf8")],
    "/postwire_wasm_bg.wasm": ["application/wasm", readFileSync(npmDir + "dist/browser/postwire_wasm_bg.wasm")],
  });
  await page.goto(ORIGIN + "/");
  await resultOf(page, errors);
  assert.equal(await page.evaluate(() => typeof Buffer), "undefined");
  await page.close();
});

for (const wasmType of ["application/wasm", "application/octet-stream"]) {
  test(`imported natively from dist/browser, no bundler: the .wasm fetched as a file (${wasmType})`, async () => {
    const checks = readFileSync(npmDir + "test/portable/checks.js", "utf8");
    const { page, errors } = await pageWith({
      "/": ["text/html", `<!doctype html><script type="module">
        import * as postwire from "/dist/browser/index.js";
        import { runChecks } from "/checks.js";
        window.__postwire = runChecks(postwire).then((passed) => ({ passed }), (e) => ({ error: String(e.stack || e) }));
      </script>`],
      "/dist/browser/index.js": ["text/javascript", readFileSync(npmDir + "dist/browser/index.js", "utf8")],
      "/dist/browser/postwire_wasm_bg.wasm": [wasmType, readFileSync(npmDir + "dist/browser/postwire_wasm_bg.wasm")],
      "/checks.js": ["text/javascript", checks],
    });
    await page.goto(ORIGIN + "/");
    await resultOf(page, errors);
    await page.close();
  });
}

test("imported natively from dist/web (postwire/inline: the wasm inlined), no bundler", async () => {
  const checks = readFileSync(npmDir + "test/portable/checks.js", "utf8");
  const { page, errors } = await pageWith({
    "/": ["text/html", `<!doctype html><script type="module">
      import * as postwire from "/dist/web/index.js";
      import { runChecks } from "/checks.js";
      window.__postwire = runChecks(postwire).then((passed) => ({ passed }), (e) => ({ error: String(e.stack || e) }));
    </script>`],
    "/dist/web/index.js": ["text/javascript", readFileSync(npmDir + "dist/web/index.js", "utf8")],
    "/checks.js": ["text/javascript", checks],
  });
  await page.goto(ORIGIN + "/");
  await resultOf(page, errors);
  await page.close();
});

test("postwire/v1a imported natively from dist/web/v1a.js: the portable checks, and a v1a delivery verified synchronously with a public key", async () => {
  const crypto = await import("node:crypto");
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const whpk = `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}`;
  const ts = Math.floor(Date.now() / 1000);
  const body = '{"id":"msg_c","hello":"chromium"}';
  const signature = `v1a,${crypto.sign(null, Buffer.from(`msg_c.${ts}.${body}`), privateKey).toString("base64")}`;
  const delivery = { whpk, body, headers: { "webhook-id": "msg_c", "webhook-timestamp": String(ts), "webhook-signature": signature } };
  const checks = readFileSync(npmDir + "test/portable/checks.js", "utf8");
  const { page, errors } = await pageWith({
    "/": ["text/html", `<!doctype html><script type="module">
      import * as postwire from "/dist/web/v1a.js";
      import { runChecks } from "/checks.js";
      const d = ${JSON.stringify(delivery)};
      let v1a;
      try {
        const wh = new postwire.Webhook(d.whpk);
        const ok = wh.verify(d.body, d.headers).hello;
        let forged = "accepted";
        try { wh.verify(d.body.replace("chromium", "chromiun"), d.headers); } catch (e) { forged = e.code; }
        v1a = { ok, forged };
      } catch (e) { v1a = { error: String(e) }; }
      window.__postwire = runChecks(postwire).then((passed) => ({ passed, v1a }), (e) => ({ error: String(e.stack || e) }));
    </script>`],
    "/dist/web/v1a.js": ["text/javascript", readFileSync(npmDir + "dist/web/v1a.js", "utf8")],
    "/checks.js": ["text/javascript", checks],
  });
  await page.goto(ORIGIN + "/");
  const result = await resultOf(page, errors);
  assert.deepEqual(result.v1a, { ok: "chromium", forged: "invalid_signature" });
  await page.close();
});
