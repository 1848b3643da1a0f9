// postwire/providers in a page of real headless Chromium (Debian's /usr/bin/chromium, driven
// by playwright-core; nothing downloaded), bundled by esbuild for the browser (the
// browser build, which fetches its .wasm beside the bundle, streaming): deliveries
// signed by the providers' SDKs in Node verify in the page, a changed byte is refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { PROVIDER_CASES } from "./providers/sign.mjs";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = npmDir + "build/chromium-providers-test/";
const ORIGIN = "http://postwire.test";
let browser;

before(async () => {
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/providers/page.js", "--bundle", "--format=esm", "--platform=browser", `--outfile=${outDir}page.js`, "--log-level=warning",
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

test("Chromium: SDK-signed deliveries of every provider verify in a page (esbuild browser bundle, the .wasm fetched), a changed byte is refused", async () => {
  const now = Math.floor(Date.now() / 1000);
  const cases = {};
  for (const [name, maker] of Object.entries(PROVIDER_CASES)) {
    const { body, headers, options } = await maker.make(4096, now);
    cases[name] = { body, headers, options };
  }
  const files = {
    "/": ["text/html", '<!doctype html><script type="module" src="/page.js"></script>'],
    "/page.js": ["text/javascript", readFileSync(outDir + "page.js", "utf8")],
    "/cases.json": ["application/json", JSON.stringify(cases)],
    // The browser build fetches its module beside the bundle.
    "/postwire_wasm_providers_bg.wasm": ["application/wasm", readFileSync(npmDir + "dist/browser/postwire_wasm_providers_bg.wasm")],
  };
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    const file = url.origin === ORIGIN ? files[url.pathname] : undefined;
    return file ? route.fulfill({ status: 200, contentType: file[0], body: file[1] }) : route.fulfill({ status: 404, body: "not found" });
  });
  await page.goto(ORIGIN + "/");
  await page.waitForFunction(() => window.__postwireProviders !== undefined, null, { timeout: 30_000 });
  const result = await page.evaluate(() => window.__postwireProviders);
  assert.deepEqual(errors, []);
  assert.equal(result.error, undefined, result.error);
  assert.equal(result.hasBuffer, false);
  for (const name of Object.keys(PROVIDER_CASES)) {
    const expect = (await PROVIDER_CASES[name].make(10, now)).expect;
    if (expect.id !== undefined) assert.equal(result.out[name].id, expect.id, name);
    assert.equal(result.out[name].type, expect.type, name);
    assert.equal(result.out[name].tampered, "invalid_signature", name);
  }
});
