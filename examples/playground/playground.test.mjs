// The playground in real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; no browser is downloaded). It loads every sample and checks it
// verifies, tampers with the body, the secret and the headers and checks each failure and
// its code, drives the page with the keyboard only, checks that the browser made no
// request beyond the page's own loopback server, and keeps a screenshot as a build
// artifact in target/artifacts/playground.png (and playground-tampered.png).
//
//   node --test examples/playground/playground.test.mjs     (examples/test.sh runs it)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { mkdtemp, mkdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startPlaygroundServer } from "./serve.mjs";
import { SAMPLE_TYPES, sampleBody } from "./samples.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCREENSHOT = path.join(ROOT, "target", "artifacts", "playground.png");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let server, context, page, profileDir;
const requests = [];
const problems = [];

before(async () => {
  server = await startPlaygroundServer();
  profileDir = await mkdtemp(path.join(os.tmpdir(), "postwire-playground-chromium-"));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 1000 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-quic",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("request", (r) => requests.push(r.url()));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  await page.goto(server.url);
  await page.waitForSelector("html[data-ready=true]", { timeout: 15_000 });
});

after(async () => {
  await context?.close();
  await server?.close();
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
});

const state = () => page.getAttribute("#result", "data-state");
const text = (sel) => page.textContent(sel);
async function fields() {
  return page.evaluate(() => ({
    secret: document.getElementById("secret").value,
    id: document.getElementById("webhook-id").value,
    timestamp: document.getElementById("webhook-timestamp").value,
    signature: document.getElementById("webhook-signature").value,
    body: document.getElementById("body").value,
  }));
}
async function verify() {
  await page.click("#verify");
}
async function expectFailure(code) {
  await page.waitForFunction(() => document.getElementById("result").dataset.state !== "verified");
  assert.equal(await state(), "failed");
  assert.equal(await text("#verdict"), "Not verified");
  assert.equal(await text("#error-code"), `Error code: ${code}`);
  assert.ok((await text("#hint")).length > 20, "a hint is shown");
  assert.equal(await page.isVisible("#event"), false, "no parsed event for a failed delivery");
}

/** An independent Standard Webhooks signature (Node's crypto, not the page's wasm). */
function nodeSignature(secret, id, timestamp, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return "v1," + crypto.createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
}

test("each of the nine samples loads signed and verifies", async () => {
  await page.click("#generate-secret");
  for (const type of SAMPLE_TYPES) {
    await page.selectOption("#sample-type", type);
    await page.click("#load-sample");
    await page.waitForFunction((t) => document.getElementById("verdict").textContent === `Verified: ${t}`, type);
    assert.equal(await state(), "verified", type);
    const f = await fields();
    const event = JSON.parse(await text("#event"));
    assert.equal(event.type, type);
    assert.equal(event.id, f.id, "the parsed event is the body's, with id = webhook-id");
    assert.deepEqual(event, JSON.parse(f.body));
    // The page's signature is the Standard Webhooks one, checked outside the browser.
    assert.equal(f.signature, nodeSignature(f.secret, f.id, f.timestamp, f.body), type);
    assert.ok(Math.abs(Number(f.timestamp) - Date.now() / 1000) < 60, "signed at the current time");
    const summary = await text("#summary");
    assert.ok(summary.includes(type) && summary.includes(f.id), `summary of ${type}: ${summary}`);
    if ("post" in event.data) assert.equal("content" in event.data.post, false, "no post content");
  }
});

test("a tampered body fails with invalid_signature and says why", async () => {
  await page.selectOption("#sample-type", "post.published");
  await page.click("#load-sample");
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
  const { body } = await fields();
  const tampered = body.replace('"state":"PUBLISHED"', '"state":"ERROR"');
  assert.notEqual(tampered, body);
  await page.fill("#body", tampered);
  await verify();
  await expectFailure("invalid_signature");
  assert.match(await text("#hint"), /raw body/);
  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, "-tampered.png"), fullPage: true });
  // One added space is enough.
  await page.fill("#body", body + " ");
  await verify();
  await expectFailure("invalid_signature");
  // Putting the original back verifies again (the signature was never changed).
  await page.fill("#body", body);
  await verify();
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
});

test("other failures: wrong secret, bad secret, stale timestamp, missing and malformed headers", async () => {
  await page.selectOption("#sample-type", "webhook.test");
  await page.click("#load-sample");
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
  const f = await fields();
  const otherSecret = "whsec_" + crypto.randomBytes(32).toString("base64");
  const cases = [
    [{ secret: otherSecret }, "invalid_signature"],
    [{ secret: "whsec_not base64!" }, "invalid_secret"],
    [{ timestamp: String(Math.floor(Date.now() / 1000) - 3600) }, "timestamp_too_old"],
    [{ timestamp: String(Math.floor(Date.now() / 1000) + 3600) }, "timestamp_too_new"],
    [{ timestamp: "12ab" }, "invalid_header"],
    [{ signature: "" }, "missing_header"],
    [{ id: "" }, "missing_header"],
    [{ signature: "v2,abc" }, "invalid_signature"],
  ];
  const selector = { secret: "#secret", id: "#webhook-id", timestamp: "#webhook-timestamp", signature: "#webhook-signature" };
  for (const [change, code] of cases) {
    for (const [k, v] of Object.entries(change)) await page.fill(selector[k], v);
    await verify();
    await expectFailure(code);
    for (const k of Object.keys(change)) await page.fill(selector[k], f[k]);
    await verify();
    await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
  }
  // A stale delivery is fixed by re-signing it now.
  await page.fill("#webhook-timestamp", String(Math.floor(Date.now() / 1000) - 3600));
  await page.fill("#webhook-signature", nodeSignature(f.secret, f.id, Math.floor(Date.now() / 1000) - 3600, f.body));
  await verify();
  await expectFailure("timestamp_too_old");
  await page.click("#resign");
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
});

test("a signed body that is not an event says so, separately from signature failures", async () => {
  const f = await fields();
  const body = JSON.stringify({ hello: "world" });
  await page.fill("#body", body);
  await page.fill("#webhook-signature", nodeSignature(f.secret, f.id, f.timestamp, body));
  await verify();
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "not-an-event");
  assert.equal(await text("#error-code"), "Error code: invalid_payload");
  assert.match(await text("#verdict"), /Signature verified, but the body is not an event/);
});

/** A workspace's v1a key pair and a delivery it signed, made outside the page (Node's
 * Ed25519): the page gets only the `whpk_` public key, never a secret. */
function v1aDelivery(type) {
  const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "jwk" }).x; // base64url of the 32 bytes
  const whpk = "whpk_" + Buffer.from(raw, "base64url").toString("base64");
  const id = `msg_${crypto.randomBytes(8).toString("hex")}`;
  const timestamp = Math.floor(Date.now() / 1000);
  const body = sampleBody(type, { id });
  const signature = "v1a," + crypto.sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString("base64");
  return { whpk, id, timestamp: String(timestamp), signature, body };
}

test("a delivery signed with the workspace's v1a key verifies with its public key alone", async () => {
  const d = v1aDelivery("webhook.test");
  await page.fill("#secret", d.whpk);
  await page.fill("#webhook-id", d.id);
  await page.fill("#webhook-timestamp", d.timestamp);
  await page.fill("#webhook-signature", d.signature);
  await page.fill("#body", d.body);
  await verify();
  await page.waitForFunction(() => document.getElementById("verdict").textContent === "Verified: webhook.test");
  assert.equal(JSON.parse(await text("#event")).id, d.id);
  // A changed body, or another workspace's key, fails with the usual code.
  await page.fill("#body", d.body.replace("Hello", "hello"));
  await verify();
  await expectFailure("invalid_signature");
  await page.fill("#body", d.body);
  await page.fill("#secret", v1aDelivery("webhook.test").whpk);
  await verify();
  await expectFailure("invalid_signature");
  // A public key cannot sign: re-signing says so instead of making up a secret.
  await page.fill("#secret", d.whpk);
  await page.click("#resign");
  await page.waitForFunction(() => document.getElementById("verdict").textContent === "A public key cannot sign");
  assert.equal(await page.inputValue("#secret"), d.whpk);
  await page.fill("#secret", "");
});

test("usable with the keyboard alone", async () => {
  await page.reload();
  await page.waitForSelector("html[data-ready=true]");
  // Tab from the top of the page reaches the sample picker first, then its button.
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "sample-type");
  // Choose post.failed (the fifth type) with the arrow keys.
  for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowDown");
  assert.equal(await page.inputValue("#sample-type"), "post.failed");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "load-sample");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("verdict").textContent === "Verified: post.failed");
  // The focus ring is visible on the focused button.
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none");
  // Edit the body from the keyboard, then Ctrl+Enter verifies.
  await page.focus("#body");
  await page.keyboard.press("End");
  await page.keyboard.type(" ");
  await page.keyboard.press("Control+Enter");
  await expectFailure("invalid_signature");
  await page.keyboard.press("Backspace");
  await page.keyboard.press("Control+Enter");
  await page.waitForFunction(() => document.getElementById("result").dataset.state === "verified");
  // Every control has a label.
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea")].filter((el) => !el.labels?.length).map((el) => el.id),
  );
  assert.deepEqual(unlabelled, []);
});

test("nothing left the page, no errors, and a screenshot is kept", async () => {
  await page.selectOption("#sample-type", "post.published");
  await page.click("#load-sample");
  await page.waitForFunction(() => document.getElementById("verdict").textContent === "Verified: post.published");
  const origin = new URL(server.url).origin;
  const elsewhere = requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:"));
  assert.deepEqual(elsewhere, [], "every request went to the page's own server");
  assert.ok(requests.some((u) => u.endsWith("/vendor/postwire.js")), "the npm package's browser build was loaded");
  assert.deepEqual(problems, []);
  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  assert.ok((await stat(SCREENSHOT)).size > 10_000, "the screenshot has content");
  console.log(`screenshot: ${path.relative(ROOT, SCREENSHOT)}`);
});

test("a delivery verifies with the workspace's key set URL alone (in the browser, over CORS), fetched once; an unknown key is refused with no refetch within the interval", async () => {
  // The key set on another loopback origin, with CORS, as a sender would serve it to a docs
  // page; built here with Node's crypto (RFC 7638 kid), and counting its requests.
  const http = await import("node:http");
  const jwk = (d) => {
    const x = d.publicKey.export({ format: "jwk" }).x;
    const kid = crypto.createHash("sha256").update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest("base64url");
    return { kty: "OKP", crv: "Ed25519", x, kid, use: "sig", alg: "EdDSA" };
  };
  const signed = (keys, type) => {
    const id = `msg_${crypto.randomBytes(8).toString("hex")}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const body = sampleBody(type, { id });
    const signature = "v1a," + crypto.sign(null, Buffer.from(`${id}.${timestamp}.${body}`), keys.privateKey).toString("base64");
    return { id, timestamp, signature, body };
  };
  const current = crypto.generateKeyPairSync("ed25519");
  const next = crypto.generateKeyPairSync("ed25519");
  let published = [current];
  let hits = 0;
  const keyServer = http.createServer((req, res) => {
    hits++;
    res.writeHead(200, {
      "content-type": "application/jwk-set+json",
      "cache-control": "public, max-age=300",
      "access-control-allow-origin": "*",
    });
    res.end(JSON.stringify({ keys: published.map(jwk) }));
  });
  await new Promise((r) => keyServer.listen(0, "127.0.0.1", r));
  const keySetUrl = `http://127.0.0.1:${keyServer.address().port}/public/v1/key-sets/ks_test/jwks.json`;
  const playground = await startPlaygroundServer({ keySetOrigins: [keySetUrl] });
  const keyPage = await context.newPage();
  const seen = [];
  keyPage.on("request", (r) => seen.push(r.url()));
  try {
    await keyPage.goto(playground.url);
    await keyPage.waitForSelector("html[data-ready=true]", { timeout: 15_000 });
    const put = async (d) => {
      await keyPage.fill("#secret", keySetUrl);
      await keyPage.fill("#webhook-id", d.id);
      await keyPage.fill("#webhook-timestamp", d.timestamp);
      await keyPage.fill("#webhook-signature", d.signature);
      await keyPage.fill("#body", d.body);
      await keyPage.click("#verify");
    };
    const d = signed(current, "post.published");
    await put(d);
    await keyPage.waitForFunction(() => document.getElementById("verdict").textContent === "Verified: post.published");
    await put(signed(current, "webhook.test"));
    await keyPage.waitForFunction(() => document.getElementById("verdict").textContent === "Verified: webhook.test");
    assert.equal(hits, 1, "one fetch; the second delivery used the cached keys");
    // Another key (a forgery, or a rotation the page has not seen within a minute): refused.
    published = [next, current];
    await put(signed(next, "webhook.test"));
    await keyPage.waitForFunction(() => document.getElementById("result").dataset.state === "failed");
    assert.equal(await keyPage.textContent("#error-code"), "Error code: invalid_signature");
    assert.equal(hits, 1, "within the refresh interval, a refused delivery fetches nothing");
    // A key set URL cannot sign either.
    await keyPage.click("#resign");
    await keyPage.waitForFunction(() => document.getElementById("verdict").textContent === "A public key cannot sign");
    // Every request went to the page's server or to the key set URL, nothing else.
    const allowed = [new URL(playground.url).origin, new URL(keySetUrl).origin];
    assert.deepEqual(seen.filter((u) => !allowed.some((o) => u.startsWith(o)) && !u.startsWith("data:")), []);
    assert.ok(seen.includes(keySetUrl));
  } finally {
    await keyPage.close();
    await playground.close();
    keyServer.closeAllConnections();
    await new Promise((r) => keyServer.close(r));
  }
});
