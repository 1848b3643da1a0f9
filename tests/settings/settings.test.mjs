// The Settings screen in a real browser: Debian's headless Chromium driven by
// playwright-core, against a real `postwire serve` (SQLite) and a loopback receiver.
//
// The story: a magic link from the API signs the browser in; the admin creates a
// subscription (secret shown once), sends a test event and sees it delivered; the
// receiver fails and the attempts appear, its `<script>` body shown as text; pause,
// publish (held), resume (the held event goes out, counts shown); rotate; resend;
// recover. A used or expired link is refused, a cross-site form post is refused, and
// the verify box checks a real delivery (in the page with the npm package's browser build
// when the server embeds it, on the server otherwise) and works without JavaScript. axe-core runs on every page (no serious or critical violation) and
// each page is captured light/dark × desktop/360 px into target/settings-screenshots/.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, rmSync, readFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { ROOT, call, createToken, postwireBin, sleep } from "../e2e/support.mjs";

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const SHOTS = path.join(ROOT, "target", "settings-screenshots");
const WS = "ws_settings";
const INGEST = `ingest_${crypto.randomBytes(16).toString("hex")}`;
const LINK_TTL_SECS = 4;
const dir = mkdtempSync(path.join(os.tmpdir(), "postwire-settings-"));
const db = path.join(dir, "postwire.db");
const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
  if (!process.env.POSTWIRE_SETTINGS_KEEP) rmSync(dir, { recursive: true, force: true });
});
const t0 = Date.now();
const log = (...a) => console.log(`[settings +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

async function until(what, check, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** `postwire serve` on `db`, with short magic links so expiry is testable. */
async function startServer() {
  const logFd = openSync(path.join(dir, "serve.log"), "a");
  const child = spawn(
    postwireBin(),
    ["serve", "--db", db, "--listen", "127.0.0.1:0", "--ingest-token", INGEST, "--dangerously-allow-insecure-local-urls",
      "--portal-link-ttl-secs", String(LINK_TTL_SECS)],
    { stdio: ["ignore", "pipe", logFd] },
  );
  let out = "";
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`postwire serve did not start: ${out}`)), 30_000);
    child.stdout.on("data", (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`postwire serve exited (${code}): ${out}`)));
  });
  child.stdout.on("data", () => {});
  cleanup.push(async () => {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  });
  return base;
}

/** A loopback receiver: records every request; `mode` "ok" answers 200, "fail" a 500 with HTML. */
async function startReceiver() {
  const state = { mode: "ok", requests: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      state.requests.push({ headers: req.headers, body, id: req.headers["webhook-id"] });
      if (state.mode === "ok") {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      } else {
        res.writeHead(500, { "content-type": "text/html" }).end("<script>window.__owned = 1</script><img src=x onerror=\"window.__owned = 2\">down");
      }
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return { state, url: `http://127.0.0.1:${server.address().port}/hook` };
}

/** A page of another site (`localhost`, not `127.0.0.1`) that posts a form to the screen. */
async function startAttacker(target, fields) {
  const inputs = Object.entries(fields).map(([k, v]) => `<input name="${k}" value="${v}">`).join("");
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><form id=f method=post action="${target}">${inputs}</form><script>document.getElementById("f").submit()</script>`);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return `http://localhost:${server.address().port}/`;
}

const ingest = (base, changes) =>
  fetch(`${base}/internal/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${INGEST}`, "content-type": "application/json" },
    body: JSON.stringify({ changes }),
  }).then(async (r) => ({ status: r.status, json: await r.json() }));

const postChange = (postId, change) => ({
  kind: "post",
  workspaceId: WS,
  change,
  post: {
    id: postId, externalId: `ext-${postId}`, group: "grp", state: "QUEUE", publishDate: "2026-12-01T09:00:00.000Z",
    integration: { id: "acc_1", name: "Acme on LinkedIn", providerIdentifier: "linkedin" }, content: "never in a webhook",
  },
});

const VIEWPORTS = { desktop: { width: 1280, height: 900 }, mobile: { width: 360, height: 740 } };
const axeResults = [];

/** axe-core on the current page (no serious or critical violation) and the four screenshots. */
async function check(page, name) {
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an injected
  // <script>, and the test must not weaken it (no bypassCSP).
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(AXE_SOURCE);
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    const result = await page.evaluate(async () => {
      // eslint-disable-next-line no-undef
      const r = await axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
    });
    const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
    axeResults.push({ name, scheme, violations: result.length, serious: bad.length });
    assert.deepEqual(bad, [], `${name} (${scheme}): axe found serious or critical violations`);
    for (const [vp, size] of Object.entries(VIEWPORTS)) {
      await page.setViewportSize(size);
      await page.screenshot({ path: path.join(SHOTS, `${name}-${scheme}-${vp}.png`), fullPage: true });
      if (vp === "mobile") {
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 1, `${name} (${scheme}) scrolls sideways at 360 px by ${overflow} px`);
      }
    }
    await page.setViewportSize(VIEWPORTS.desktop);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

test("the Settings screen, end to end in Chromium", { timeout: 240_000 }, async () => {
  mkdirSync(SHOTS, { recursive: true });
  const token = createToken(db, WS);
  const base = await startServer();
  const rx = await startReceiver();
  log(`server ${base}, receiver ${rx.url}`);

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  cleanup.push(() => browser.close());
  const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy/.test(m.text())) pageErrors.push(m.text());
  });

  // ---- sign in with a magic link from the API
  const created = await call(base, "POST", `/public/v1/workspaces/${WS}/portal-sessions`, token);
  assert.equal(created.status, 201, created.text);
  const link = created.json.url;
  await page.goto(link);
  assert.equal(await page.locator("h1").textContent(), "Sign in");
  assert.deepEqual(await context.cookies(), [], "opening the link uses nothing up");
  await check(page, "01-sign-in");
  await page.click("#continue");
  await page.waitForURL(`${base}/settings/`);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "pw_settings");
  assert.ok(session && session.httpOnly && session.secure && session.sameSite === "Strict", JSON.stringify(cookies));
  assert.ok(session.expires > Date.now() / 1000, "the cookie has an expiry");
  assert.equal(await page.locator("h1").textContent(), "Subscriptions");
  await check(page, "02-empty-list");

  // ---- the link is single-use; a second context cannot reuse it
  const other = await browser.newContext();
  const otherPage = await other.newPage();
  const reused = await otherPage.goto(link);
  assert.equal(reused.status(), 403);
  assert.match(await otherPage.locator("main").textContent(), /expired, was already used, or was revoked/);
  await check(otherPage, "03-link-refused");
  // ---- an expired link is refused
  const late = await call(base, "POST", `/public/v1/workspaces/${WS}/portal-sessions`, token);
  await sleep(LINK_TTL_SECS * 1000 + 500);
  assert.equal((await otherPage.goto(late.json.url)).status(), 403, "expired link");
  assert.equal((await otherPage.goto(`${base}/settings/`)).status(), 401, "no session in that browser");
  await other.close();

  // ---- create a subscription: the secret is shown once, with a copy button
  await page.click("text=Add a subscription");
  await check(page, "04-new");
  await page.fill("#name", "Production <b>hooks</b>");
  await page.fill("#url", rx.url);
  await page.click("button:has-text('Create')");
  assert.equal(await page.locator("h1").textContent(), "Subscription created");
  const secret = await page.inputValue("#secret");
  assert.match(secret, /^whsec_/);
  assert.match(await page.locator("main").textContent(), /will not be shown again/);
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  await page.click("button[data-copy=secret]");
  await until("copied", async () => (await page.locator(".copied").textContent()).length > 0, 5000);
  await check(page, "05-secret");
  await page.click("text=Done");
  const detailUrl = page.url();
  const subId = detailUrl.split("/").pop();
  assert.match(subId, /^wh_/);
  const html = await page.content();
  assert.ok(!html.includes(secret), "the secret is never shown again");
  assert.ok(html.includes("Production &lt;b&gt;hooks&lt;/b&gt;"), "names are text");
  const api = await call(base, "GET", `/public/v1/workspaces/${WS}/webhooks/${subId}`, token);
  assert.equal(api.json.createdByKind, "dashboard");

  // ---- send a test event and watch it arrive in the log
  await page.click("button:has-text('Send test event')");
  await page.waitForSelector("#flash");
  // No reload: the log refreshes itself while a delivery is pending.
  await page.waitForSelector("li.delivery[data-state=delivered]", { timeout: 15_000 });
  assert.equal(rx.state.requests.length, 1);
  const firstDelivery = rx.state.requests[0];
  await check(page, "06-detail-delivered");

  // ---- the receiver fails: the attempt appears, its body as text
  rx.state.mode = "fail";
  await page.click("button:has-text('Send test event')");
  await page.waitForSelector("#flash");
  // Pending (before or after its first attempt, whose retry is 30 s away): the log is
  // live, and the failed attempt appears without a reload.
  assert.equal(await page.locator("#log").getAttribute("data-live"), "true");
  await page.waitForSelector("tr.attempt:has-text('HTTP 500')", { timeout: 15_000 });
  await until("the log says it refreshed", async () => /^Updated /.test(await page.locator("#log-status").textContent()), 10_000);
  await page.locator("tr.attempt details summary").first().click();
  const shown = await page.locator("tr.attempt pre.body").first().textContent();
  assert.ok(shown.includes("<script>window.__owned = 1</script>"), shown);
  assert.equal(await page.evaluate(() => window.__owned), undefined, "the receiver's markup never ran");
  assert.equal(await page.locator("main script, main img").count(), 0);
  await check(page, "07-detail-failing");
  rx.state.mode = "ok";

  // ---- pause, publish (held), resume: the held event goes out
  await page.click("button:has-text('Pause')");
  await page.waitForSelector("#flash");
  assert.match(await page.locator("#state").textContent(), /Paused/);
  const published = await ingest(base, [postChange("post_1", "scheduled")]);
  assert.equal(published.status, 200);
  const eventId = published.json.results[0].eventId;
  await page.goto(`${detailUrl}?state=held`);
  // The new event, and the failing test event that was waiting for its retry.
  assert.equal(await page.locator("li.delivery").count(), 2, "held while paused");
  await check(page, "08-detail-paused-filtered");
  const before = rx.state.requests.length;
  await page.click("button:has-text('Resume')");
  assert.match(await page.locator("#flash").textContent(), /Resumed: 2 held events will be delivered; 0 expired/);
  await until("the held event delivered", () => rx.state.requests.some((r) => r.id === eventId));
  assert.ok(rx.state.requests.length > before);

  // ---- filter by type
  await page.goto(`${detailUrl}?type=post.scheduled`);
  await until("post.scheduled delivered", async () => {
    await page.reload();
    return (await page.locator("li.delivery[data-state=delivered]").count()) === 1;
  });
  assert.equal(await page.locator("li.delivery").count(), 1);
  await page.locator("details.payload summary").first().click();
  const payload = JSON.parse(await page.locator("details.payload pre.body").first().textContent());
  assert.equal(payload.id, eventId);
  assert.equal(payload.data.post.id, "post_1");
  assert.ok(!("content" in payload.data.post), "events never carry the post's content");

  // ---- resend a delivered one: the same webhook-id arrives again
  await page.locator(`li.delivery[data-event="${eventId}"] button:has-text('Resend')`).click();
  assert.match(await page.locator("#flash").textContent(), /Resent: the new delivery is dlv_/);
  await until("the resend arrives", () => rx.state.requests.filter((r) => r.id === eventId).length === 2);

  // ---- recover (nothing has failed for good on a real clock: it says so)
  await page.goto(detailUrl);
  await page.fill("#since", "2020-01-01T00:00");
  await page.click("button:has-text('Recover')");
  assert.match(await page.locator("#flash").textContent(), /Recover queued 0 failed deliveries/);

  // ---- rotate: a new secret, both signed for 24 h
  await page.click("button:has-text('Rotate secret')");
  assert.equal(await page.locator("h1").textContent(), "New signing secret");
  const rotated = await page.inputValue("#secret");
  assert.ok(rotated.startsWith("whsec_") && rotated !== secret);
  assert.match(await page.locator("main").textContent(), /signed with both the old and the new secret/);
  await check(page, "09-rotated");
  await page.click("text=Done");

  // ---- edit, with keyboard only for the submit
  await page.click("text=Edit");
  await check(page, "10-edit");
  await page.fill("#name", "Production");
  await page.check("input[value='post.scheduled']");
  await page.focus("#integrationIds");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#flash");
  assert.match(await page.locator("#flash").textContent(), /Saved/);
  assert.equal(await page.locator("h1").textContent(), "Production");

  // ---- the list, notifications, the event catalogue
  await page.click("nav >> text=Subscriptions");
  assert.equal(await page.locator("li.card").count(), 1);
  assert.match(await page.locator("li.card").textContent(), /delivered/);
  await check(page, "11-list");
  await page.click("nav >> text=Notifications");
  await check(page, "12-notifications");
  await page.click("nav >> text=Event catalogue");
  assert.equal(await page.locator("section.card h2 code").count(), 9);
  await check(page, "13-events");

  // ---- the verify box, with a delivery the receiver got (new Webhook(secret) from the npm package)
  const hasVerifier = (await fetch(`${base}/settings/assets/postwire.js`)).status === 200;
  const lastOk = rx.state.requests.findLast((r) => r.id === eventId);
  const headerText = ["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => `${h}: ${lastOk.headers[h]}`).join("\n");
  await page.fill("#v-headers", headerText);
  await page.fill("#v-body", lastOk.body);
  await page.fill("#v-secret", secret);
  await page.click("#verify-form button");
  const verdict = await until("a verdict", async () => {
    const t = await page.locator("#v-result").textContent();
    return t && t !== "Checking…" ? t : null;
  });
  // In the page when the npm package is embedded, on the server otherwise: valid alike.
  log(`verify box: ${hasVerifier ? "in the browser" : "on the server (no npm/dist in this build)"}`);
  assert.match(verdict, /^Valid: post\.scheduled msg_/, verdict);
  await page.fill("#v-headers", headerText);
  await page.fill("#v-body", lastOk.body);
  await page.fill("#v-secret", `whsec_${Buffer.alloc(32, 7).toString("base64")}`);
  await page.click("#verify-form button");
  await until("an invalid verdict", async () => /^Not valid: invalid_signature/.test(await page.locator("#v-result").textContent()));

  // ---- the verify box with the workspace's public key (v1a): the page holds a sample
  // delivery signed by the workspace's key and the whpk_ key that verifies it, no secret
  const hasV1a = (await fetch(`${base}/settings/assets/postwire-v1a.js`)).status === 200;
  await page.goto(`${base}/settings/events`);
  const publicKey = await page.inputValue("#v-public-key");
  assert.match(publicKey, /^whpk_[A-Za-z0-9+/]{43}=$/);
  assert.equal(await page.inputValue("#v-secret"), "");
  assert.doesNotMatch(await page.content(), /whs(ec|k)_[A-Za-z0-9+/]/);
  await page.click("#verify-form button");
  const v1aVerdict = await until("a v1a verdict", async () => {
    const t = await page.locator("#v-result").textContent();
    return t && t !== "Checking…" ? t : null;
  });
  log(`v1a verify box: ${hasV1a ? "in the browser" : "on the server (no npm/dist/web/v1a.js in this build)"}`);
  assert.match(v1aVerdict, /^Valid: webhook\.test msg_/, v1aVerdict);
  await page.fill("#v-body", (await page.inputValue("#v-body")).replace("sample", "Sample"));
  await page.click("#verify-form button");
  await until("a tampered sample refused", async () => /^Not valid: invalid_signature/.test(await page.locator("#v-result").textContent()));
  await check(page, "13-events-v1a");

  // ---- operator endpoints: add one (its secret shown once), then the list without it
  await page.click("nav >> text=Operator endpoints");
  assert.equal(await page.locator("h1").textContent(), "Operator endpoints");
  await page.fill("#op-name", "On-call <i>ops</i>");
  await page.fill("#op-url", rx.url);
  await page.click("button:has-text('Create')");
  assert.equal(await page.locator("h1").textContent(), "Operator endpoint created");
  assert.match(await page.inputValue("#secret"), /^whsec_/);
  await check(page, "15-operator-secret");
  await page.click("text=Done");
  assert.match(await page.locator("main").textContent(), /On-call <i>ops<\/i>/);
  assert.doesNotMatch(await page.content(), /whsec_/);
  await check(page, "16-operator-endpoints");

  // ---- "Send test" on the card: the endpoint's own page, whose delivery log shows the
  // test notice arrive (the log refreshes itself while it is pending)
  await page.click("li.card button:has-text('Send test')");
  await page.waitForURL(/\/settings\/operator-endpoints\/wh_[^/?]+\?done=test$/);
  assert.match(await page.locator("#flash").textContent(), /Test event queued/);
  await until("the test notice delivered", async () =>
    (await page.locator('li.delivery[data-state="delivered"] code', { hasText: "webhook.test" }).count()) > 0);
  assert.ok(rx.state.requests.some((r) => r.body.includes('"type":"webhook.test"') && r.body.includes("This is a test event from postwire.")));
  assert.doesNotMatch(await page.content(), /whsec_/);
  await check(page, "17-operator-deliveries");

  // ---- the verify box without JavaScript: the form goes to the server, which checks it
  // with postwire-core; so it works in a build without the npm package (cargo install)
  const noScript = await browser.newContext({ javaScriptEnabled: false });
  const plain = await noScript.newPage();
  const plainLink = await call(base, "POST", `/public/v1/workspaces/${WS}/portal-sessions`, token);
  await plain.goto(plainLink.json.url);
  await plain.click("#continue");
  await plain.waitForURL(`${base}/settings/`);
  await plain.goto(`${base}/settings/events`);
  await plain.click("#verify-form button");
  await plain.waitForURL(`${base}/settings/events/verify`);
  assert.match(await plain.locator("#v-result").textContent(), /^Valid: webhook\.test msg_/);
  await plain.fill("#v-body", (await plain.inputValue("#v-body")).replace("sample", "Sample"));
  await plain.click("#verify-form button");
  assert.match(await plain.locator("#v-result").textContent(), /^Not valid: invalid_signature: /);
  await noScript.close();

  // ---- a cross-site form post is refused (localhost is another site than 127.0.0.1)
  await page.goto(detailUrl);
  const csrf = await page.inputValue("input[name=csrf] >> nth=0");
  const attacker = await startAttacker(`${base}/settings/webhooks/${subId}/pause`, { csrf });
  const attackPage = await context.newPage();
  const posted = attackPage.waitForResponse((r) => r.url().endsWith("/pause"));
  await attackPage.goto(attacker);
  const response = await posted;
  assert.ok([401, 403].includes(response.status()), `cross-site post answered ${response.status()}`);
  const after = await call(base, "GET", `/public/v1/workspaces/${WS}/webhooks/${subId}`, token);
  assert.equal(after.json.disabled, false, "the cross-site post changed nothing");
  await attackPage.close();

  // ---- delete, with confirmation
  await page.goto(detailUrl);
  await page.click("text=Delete");
  assert.equal(await page.locator("h1").textContent(), "Delete subscription?");
  await check(page, "14-delete-confirm");
  await page.click("button:has-text('Delete for good')");
  await page.waitForURL(`${base}/settings/`);
  assert.match(await page.locator("main").textContent(), /No subscriptions yet/);

  // ---- sign out: the session is revoked
  await page.click("button:has-text('Sign out')");
  assert.equal(await page.locator("h1").textContent(), "Signed out");
  assert.equal((await page.goto(`${base}/settings/`)).status(), 401);

  // ---- the CLI's link works the same way
  const cli = spawn(postwireBin(), ["portal", "link", "--db", db, "--workspace", WS, "--base-url", base]);
  let cliOut = "";
  cli.stdout.on("data", (c) => (cliOut += c));
  await new Promise((r) => cli.on("exit", r));
  await page.goto(cliOut.trim());
  await page.click("#continue");
  await page.waitForURL(`${base}/settings/`);
  assert.equal(await page.locator("h1").textContent(), "Subscriptions");

  assert.deepEqual(pageErrors, [], "no script errors or CSP violations");
  assert.ok(!readFileSync(path.join(dir, "serve.log"), "utf8").includes(secret.slice(6)), "no secret in the log");
  log(`axe: ${axeResults.length} runs, ${axeResults.reduce((n, r) => n + r.violations, 0)} minor or moderate violations, 0 serious or critical`);
  log(`screenshots in ${SHOTS}; first delivery ${firstDelivery.id}`);
});
