// postwire/next in a real Next.js app (next from npm): test/next-app/app/webhooks/route.js
// exports `createHandler(...)` as POST, exactly as the README shows; the app is built with
// `next build` (which evaluates the route without the secret in the environment) and
// served by `next start`, and deliveries signed by `standardwebhooks` are posted to it. The
// same handler also runs as an Edge route (app/edge-webhooks/route.js): postwire's
// edge-light build in Next.js's edge sandbox.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const appDir = fileURLToPath(new URL("./next-app/", import.meta.url));
const NEXT = fileURLToPath(new URL("../../node_modules/next/dist/bin/next", import.meta.url));
const require = createRequire(new URL("../../package.json", import.meta.url));
const { Webhook: StandardWebhook } = require("standardwebhooks");
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };

let server;
let base;

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  rmSync(appDir + ".next", { recursive: true, force: true });
  // Built without the secret: Next.js evaluates the route module at build time.
  const build = spawnSync(process.execPath, [NEXT, "build"], { cwd: appDir, env, encoding: "utf8", timeout: 240_000 });
  assert.equal(build.status, 0, `next build failed:\n${build.stdout}\n${build.stderr}`);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(process.execPath, [NEXT, "start", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: appDir,
    env: { ...env, POSTWIRE_TEST_SECRET: SECRET },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  server.stdout.on("data", (d) => (output += d));
  server.stderr.on("data", (d) => (output += d));
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(base + "/seen")).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`next start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, { timeout: 320_000 });

after(() => {
  if (server && server.exitCode === null) server.kill("SIGTERM");
});

async function post(body, { tamper = false, path = "/webhooks" } = {}) {
  const id = JSON.parse(body).id;
  const at = new Date();
  const res = await fetch(base + path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new StandardWebhook(SECRET).sign(id, at, body),
    },
    body: tamper ? body.replace("hi", "ho") : body,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const event = (id, message = "hi", type = "webhook.test") =>
  JSON.stringify({ id, type, createdAt: new Date().toISOString(), workspaceId: "ws_1", data: { message } });

test("next start serves the route: verify, de-duplicate, dispatch, retry after a failure", async () => {
  assert.deepEqual(await post(event("msg_n1")), { status: 204, json: undefined });
  assert.deepEqual(await post(event("msg_n1")), { status: 200, json: { duplicate: true } });
  const bad = await post(event("msg_n2"), { tamper: true });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, "invalid_signature");
  assert.deepEqual(await post(event("msg_n3", "hi", "invoice.paid")), { status: 202, json: { ignored: "invoice.paid" } });
  const failed = await post(event("msg_n4", "fail"));
  assert.equal(failed.status, 500);
  assert.equal(failed.json.code, "handler_failed");
  // A large body (1 MiB): hashed by node:crypto in Next's Node runtime.
  assert.equal((await post(event("msg_n5", "x".repeat(1 << 20)))).status, 204);
  const seen = await (await fetch(base + "/seen")).json();
  assert.deepEqual(
    seen.map(([type, id, message]) => [type, id, message.length > 10 ? message.length : message]),
    [
      ["webhook.test", "msg_n1", "hi"],
      ["webhook.test", "msg_n4", "fail"],
      ["webhook.test", "msg_n5", 1 << 20],
    ],
  );
});

test("the same handler as an Edge route (runtime = \"edge\"): the edge-light build in Next.js's edge sandbox", async () => {
  const path = "/edge-webhooks";
  assert.deepEqual(await post(event("msg_e1"), { path }), { status: 204, json: undefined });
  assert.deepEqual(await post(event("msg_e1"), { path }), { status: 200, json: { duplicate: true } });
  const bad = await post(event("msg_e2"), { tamper: true, path });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.code, "invalid_signature");
  // 64 KiB: hashed by WebCrypto there (verifyEventAsync), every decision still in wasm.
  assert.equal((await post(event("msg_e3", "x".repeat(64 * 1024)), { path })).status, 204);
  const bigBad = await post(event("msg_e4", "hi" + "x".repeat(64 * 1024)), { tamper: true, path });
  assert.equal(bigBad.json?.code, "invalid_signature");
  const info = await (await fetch(base + path)).json();
  assert.deepEqual(info, {
    seen: [["webhook.test", "msg_e1", 2], ["webhook.test", "msg_e3", 64 * 1024]],
    nativeHmac: false,
    edgeRuntime: "string",
  });
});
