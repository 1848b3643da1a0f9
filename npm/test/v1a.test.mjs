// `postwire/v1a`: `new Webhook("whpk_…")` verifies v1a (ed25519, the opt-in extension)
// synchronously, through the package's own name and exports map. Runs keys.json and
// verify_v1a.json of tests/vectors, a delivery signed by node:crypto's Ed25519 (independent
// of the Rust code), and checks that the default entry point refuses whpk_ keys with a
// clear `invalid_public_key` while its wasm module stays v1-only.
import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Webhook, WebhookVerificationError, ERROR_CODES } from "postwire/v1a";
import * as v1Only from "postwire";

const require = createRequire(import.meta.url);
const dir = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const load = (name) => JSON.parse(readFileSync(dir + name, "utf8")).cases;
const bodyOf = (c) => (c.body_base64 !== undefined ? new Uint8Array(Buffer.from(c.body_base64, "base64")) : c.body);

function keyPair() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  return { privateKey, whpk: `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}` };
}

function signV1a(privateKey, id, ts, body) {
  const msg = Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(body)]);
  return `v1a,${crypto.sign(null, msg, privateKey).toString("base64")}`;
}

test("verify_v1a.json: every case, with the trust list as given (whpk_ and whsec_ together)", () => {
  const cases = load("verify_v1a.json");
  let ok = 0;
  let failing = 0;
  for (const c of cases) {
    const run = () => new Webhook(c.keys).verify(bodyOf(c), c.headers, { now: c.now * 1000, jsonParse: false });
    if (c.ok) {
      assert.doesNotThrow(run, c.name);
      ok++;
    } else {
      assert.throws(run, (e) => e instanceof WebhookVerificationError && e.code === c.error, c.name);
      failing++;
    }
  }
  assert.ok(ok > 10 && failing > 10);
});

test("keys.json: public and trusted keys parse or fail with the vector's code", () => {
  for (const c of load("keys.json").filter((c) => c.kind !== "signing")) {
    const make = () => new Webhook(c.text);
    if (c.ok) assert.doesNotThrow(make, c.name);
    else assert.throws(make, (e) => e.code === c.error && !e.message.includes(c.text.trim().slice(5, 25) || "\0"), c.name);
  }
});

test("a delivery signed by node:crypto's Ed25519 verifies; forgeries do not", () => {
  const { privateKey, whpk } = keyPair();
  const id = "msg_node";
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws", data: { message: "hi" } });
  const headers = { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signV1a(privateKey, id, ts, body) };
  const wh = new Webhook(whpk);
  assert.equal(wh.verify(body, headers).data.message, "hi");
  assert.equal(wh.verifyEvent(Buffer.from(body), headers).type, "webhook.test");
  assert.throws(() => wh.verify(body.replace("hi", "ho"), headers), { code: "invalid_signature" });
  assert.throws(() => new Webhook(keyPair().whpk).verify(body, headers), { code: "invalid_signature" });
  // Beside a secret, either signature is enough; a header with only v1 fails for the public key.
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const v1 = new v1Only.Webhook(secret).sign(id, new Date(ts * 1000), body);
  const both = { ...headers, "webhook-signature": `${v1} ${headers["webhook-signature"]}` };
  assert.doesNotThrow(() => new Webhook([secret, whpk]).verify(body, both));
  assert.doesNotThrow(() => new Webhook(whpk).verify(body, both));
  assert.throws(() => wh.verify(body, { ...headers, "webhook-signature": v1 }), { code: "invalid_signature", message: /v1a/ });
  // The async path and the require() build agree.
  return wh.verifyAsync(body, headers).then((v) => {
    assert.equal(v.id, id);
    const cjs = require("postwire/v1a");
    assert.equal(new cjs.Webhook(whpk).verify(body, headers).id, id);
  });
});

test("the default entry point refuses whpk_ keys, pointing at postwire/v1a; its module has no curve code", () => {
  const { whpk } = keyPair();
  assert.throws(() => new v1Only.Webhook(whpk), (e) => e.code === "invalid_public_key" && /postwire\/v1a/.test(e.message));
  assert.throws(() => new v1Only.Webhook("whsk_" + "A".repeat(44)), (e) => e.code === "invalid_public_key" && /whpk_/.test(e.message));
  assert.throws(() => new Webhook("whsk_" + "A".repeat(44)), (e) => e.code === "invalid_public_key" && !e.message.includes("AAAAAAAA"));
  assert.ok(ERROR_CODES.includes("invalid_public_key"));
  const sizes = JSON.parse(readFileSync(fileURLToPath(new URL("../dist/wasm-size.json", import.meta.url)), "utf8"));
  assert.ok(sizes.v1a.raw > sizes.raw, "the v1a module is the larger one");
  const v1Wasm = readFileSync(fileURLToPath(new URL("../build/postwire_wasm_bg.wasm", import.meta.url)));
  const exports = WebAssembly.Module.exports(new WebAssembly.Module(v1Wasm)).map((e) => e.name);
  assert.ok(!exports.includes("publicKey") && !exports.includes("verifyWithPublicKeys"), exports.join(" "));
});

test("dispose() forgets the public keys too", () => {
  const { privateKey, whpk } = keyPair();
  const wh = new Webhook(whpk);
  wh.dispose();
  const ts = Math.floor(Date.now() / 1000);
  assert.throws(() => wh.verify("{}", { "webhook-id": "m", "webhook-timestamp": String(ts), "webhook-signature": signV1a(privateKey, "m", ts, "{}") }), TypeError);
});

test("postwire/v1a in Deno and Bun (their own export conditions): verifies, and refuses a forgery", async () => {
  const { spawnSync } = await import("node:child_process");
  const { existsSync } = await import("node:fs");
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const npmDir = fileURLToPath(new URL("../", import.meta.url));
  const runtimes = [
    [root + "node_modules/@deno/linux-x64-glibc/deno", ["run", "--allow-all", "--no-lock", "test/v1a/runtime.mjs"]],
    [root + "node_modules/@oven/bun-linux-x64/bin/bun", ["test/v1a/runtime.mjs"]],
  ];
  for (const [bin, args] of runtimes) {
    assert.ok(existsSync(bin), `${bin} (the root package.json installs it)`);
    const r = spawnSync(bin, args, { cwd: npmDir, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").pop()), { ok: 1, forged: "invalid_signature" }, bin);
  }
});
