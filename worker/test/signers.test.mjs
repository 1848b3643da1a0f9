// Deliveries signed by each signer of the project pass the Worker in workerd: postwire-core's
// Signer (the `sign_with_core` example of this crate), the `postwire sign` CLI, and the npm
// `standardwebhooks` reference package; including rotation headers with two signatures.
//
// worker/test.sh builds the two binaries and passes their paths in POSTWIRE_CORE_SIGNER and
// POSTWIRE_CLI; run alone, the test looks in target/debug.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Webhook } from "standardwebhooks";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, newSecret, newId, nowSecs, sampleBody, REPO_ROOT } from "./support/worker.mjs";

function binary(envName, relative) {
  const p = process.env[envName] || path.join(REPO_ROOT, "target/debug", relative);
  if (!existsSync(p)) throw new Error(`${p} is missing: run worker/test.sh (it builds it), or set ${envName}`);
  return p;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), "postwire-worker-signers-"));

function coreSign(secrets, id, timestamp, body) {
  const args = ["--id", id, "--timestamp", String(timestamp), ...secrets.flatMap((s) => ["--secret", s])];
  return execFileSync(binary("POSTWIRE_CORE_SIGNER", "examples/sign_with_core"), args, { input: body }).toString().trim();
}

function cliSign(secrets, id, timestamp, body) {
  const file = path.join(tmp, `${id}.body`);
  writeFileSync(file, body);
  const args = ["sign", ...secrets.flatMap((s) => ["--secret", s]), "--id", id, "--timestamp", String(timestamp), file];
  return execFileSync(binary("POSTWIRE_CLI", "postwire"), args).toString().trim();
}

function npmSign(secrets, id, timestamp, body) {
  return secrets.map((s) => new Webhook(s).sign(id, new Date(timestamp * 1000), body)).join(" ");
}

const SIGNERS = { "postwire-core's Signer": coreSign, "the postwire sign CLI": cliSign, "npm standardwebhooks": npmSign };

describe("deliveries signed by every signer pass the Worker", () => {
  const oldSecret = newSecret();
  const currentSecret = newSecret();
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: currentSecret, ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  for (const [name, signFn] of Object.entries(SIGNERS)) {
    it(`${name}: one secret, then old+new (rotation), forwarded once each`, async () => {
      for (const secrets of [[currentSecret], [oldSecret, currentSecret]]) {
        const id = newId("sig");
        const body = sampleBody(id, 1024);
        const ts = nowSecs();
        const signature = signFn(secrets, id, ts, body);
        assert.equal(signature.split(" ").length, secrets.length, signature);
        const headers = { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signature };
        const res = await worker.send({ headers, body });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json.code, "delivered");
        assert.equal(origin.receivedFor(id).length, 1);
        assert.equal(origin.receivedFor(id)[0].body.toString(), body);
      }
      // A signature by a secret the Worker does not hold fails, whoever made it.
      const id = newId("sig");
      const body = sampleBody(id);
      const ts = nowSecs();
      const headers = { "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signFn([oldSecret], id, ts, body) };
      const res = await worker.send({ headers, body });
      assert.equal(res.status, 401);
      assert.equal(res.json.code, "invalid_signature");
    });
  }

  it("the three signers agree byte for byte", () => {
    const id = newId("agree");
    const body = sampleBody(id, 1024);
    const ts = nowSecs();
    const sigs = Object.values(SIGNERS).map((f) => f([oldSecret, currentSecret], id, ts, body));
    assert.equal(new Set(sigs).size, 1, sigs.join("\n"));
  });
});
