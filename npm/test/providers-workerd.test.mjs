// postwire/providers inside workerd (Miniflare), bundled as wrangler would (the workerd
// condition; the providers .wasm imported as a compiled module): Stripe and GitHub
// deliveries signed by their SDKs verify synchronously in the isolate, forgeries and
// stale ones get their codes, and postwire/next's createHandler with { provider } answers
// Slack's url_verification and handles a delivery once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { createHmac } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { PROVIDER_CASES } from "./providers/sign.mjs";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = npmDir + "build/workerd-providers-test/";
let mf;

before(async () => {
  mkdirSync(outDir, { recursive: true });
  execFileSync(npmDir + "../node_modules/.bin/esbuild", [
    "test/providers/worker.js", "--bundle", "--format=esm", "--platform=neutral",
    "--conditions=workerd,worker,browser", "--external:*.wasm", `--outfile=${outDir}worker.js`, "--log-level=warning",
  ], { cwd: npmDir, stdio: "inherit" });
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_providers_bg.wasm", outDir + "postwire_wasm_providers_bg.wasm");
  // postwire/next imports the package itself (its default module, for Standard Webhooks routes).
  copyFileSync(npmDir + "dist/workerd/postwire_wasm_bg.wasm", outDir + "postwire_wasm_bg.wasm");
  mf = new Miniflare({
    modules: true,
    scriptPath: outDir + "worker.js",
    modulesRoot: outDir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    bindings: { STRIPE_SECRET: "whsec_postwireTestStripe", GITHUB_SECRET: "postwire-github-secret", SLACK_SECRET: "8f742231b10e8888abcd99yyyzzz85a5" },
  });
  await mf.ready;
});
after(() => mf?.dispose());

const post = async (path, body, headers) => {
  const res = await mf.dispatchFetch(`http://worker.example${path}`, { method: "POST", body, headers });
  const text = await res.text();
  return { status: res.status, json: text === "" ? undefined : JSON.parse(text) };
};

test("workerd: SDK-signed Stripe and GitHub deliveries verify; forgeries and stale ones get their codes", async () => {
  const now = Math.floor(Date.now() / 1000);
  const s = await PROVIDER_CASES.stripe.make(70 * 1024, now);
  assert.deepEqual(await post("/stripe", s.body, s.headers), { status: 200, json: { id: "evt_live_1", type: "invoice.paid", timestamp: now, payloadId: "evt_live_1" } });
  assert.equal((await post("/any", s.body, s.headers)).json.id, "evt_live_1");
  assert.deepEqual(await post("/stripe", s.body + " ", s.headers), { status: 400, json: { code: "invalid_signature", name: "WebhookVerificationError" } });
  const stale = await PROVIDER_CASES.stripe.make(100, now - 600);
  assert.equal((await post("/stripe", stale.body, stale.headers)).json.code, "timestamp_too_old");
  const g = await PROVIDER_CASES.github.make(2048, now);
  assert.equal((await post("/github", g.body, g.headers)).json.type, "pull_request");
  assert.equal((await post("/github", g.body, { "x-hub-signature-256": g.headers["x-hub-signature-256"] })).json.code, "missing_header");
});

test("workerd: postwire/next's createHandler with { provider: slack } answers url_verification and handles a delivery once", async () => {
  const now = Math.floor(Date.now() / 1000);
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  const sign = (body) => ({ "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${now}:${body}`).digest("hex")}`, "x-slack-request-timestamp": String(now) });
  const challenge = JSON.stringify({ type: "url_verification", challenge: "abc123" });
  assert.deepEqual(await post("/slack", challenge, sign(challenge)), { status: 200, json: { challenge: "abc123" } });
  const d = await PROVIDER_CASES.slack.make(1024, now);
  assert.deepEqual(await post("/slack", d.body, d.headers), { status: 204, json: undefined });
  assert.deepEqual(await post("/slack", d.body, d.headers), { status: 200, json: { duplicate: true } });
  assert.equal((await post("/slack", d.body, { ...d.headers, "x-slack-signature": "v0=00" })).json.code, "invalid_header");
  const handled = await (await mf.dispatchFetch("http://worker.example/handled")).json();
  assert.deepEqual(handled, ["Ev0Live"]);
});
