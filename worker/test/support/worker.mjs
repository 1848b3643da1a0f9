// Runs the built Worker (worker/build, from worker-build) in workerd through Miniflare, with
// a real KV namespace bound as DEDUP, and the [vars] and compatibility date of
// worker/wrangler.toml, so the tests run the configuration that is deployed.
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import crypto from "node:crypto";
import { Miniflare } from "miniflare";

export const WORKER_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BUILD_DIR = path.join(WORKER_DIR, "build");
export const REPO_ROOT = path.resolve(WORKER_DIR, "..");

/** `compatibility_date` and the `[vars]` table of wrangler.toml (flat string values only). */
export function wranglerConfig() {
  const text = readFileSync(path.join(WORKER_DIR, "wrangler.toml"), "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const vars = {};
  let section = "";
  for (const line of text.split("\n")) {
    const header = /^\s*\[+([^\]]+)\]+\s*$/.exec(line);
    if (header) {
      section = header[1].trim();
      continue;
    }
    const kv = /^\s*([A-Z0-9_]+)\s*=\s*"([^"]*)"\s*(#.*)?$/.exec(line);
    if (section === "vars" && kv) vars[kv[1]] = kv[2];
  }
  if (!date) throw new Error("wrangler.toml has no compatibility_date");
  return { compatibilityDate: date, vars };
}

/**
 * Starts the Worker. `bindings` override wrangler.toml's [vars] and add the secrets
 * (WEBHOOK_SECRETS, ORIGIN_SECRET); a value of `undefined` removes a variable.
 */
export async function startWorker(bindings, { kv = true } = {}) {
  if (!existsSync(path.join(BUILD_DIR, "index.js"))) {
    throw new Error("worker/build/index.js is missing: run worker/build.sh first");
  }
  const mf = new Miniflare(workerOptions(bindings, { kv }));
  let url = await mf.ready;
  return {
    mf,
    /**
     * Sends a request to the Worker over real HTTP on loopback (Miniflare's URL, not
     * `dispatchFetch`, which drops headers with empty values); returns status, headers and
     * the parsed JSON body.
     */
    async send({ method = "POST", headers = {}, body } = {}) {
      const res = await fetch(url, { method, headers, body, duplex: body instanceof ReadableStream ? "half" : undefined });
      const text = await res.text();
      let json = null;
      try {
        json = JSON.parse(text);
      } catch {}
      return { status: res.status, headers: res.headers, text, json };
    },
    kv: () => mf.getKVNamespace("DEDUP"),
    /** Every key of the DEDUP namespace with its value and expiration (Unix s). */
    async kvEntries() {
      const ns = await mf.getKVNamespace("DEDUP");
      const { keys } = await ns.list();
      return Promise.all(keys.map(async (k) => ({ key: k.name, value: await ns.get(k.name), expiration: k.expiration })));
    },
    async clearKv() {
      const ns = await mf.getKVNamespace("DEDUP");
      const { keys } = await ns.list();
      await Promise.all(keys.map((k) => ns.delete(k.name)));
    },
    async reconfigure(newBindings, opts = { kv: true }) {
      await mf.setOptions(workerOptions(newBindings, opts));
      url = await mf.ready;
    },
    dispose: () => mf.dispose(),
  };
}

function workerOptions(bindings, { kv }) {
  const { compatibilityDate, vars } = wranglerConfig();
  const all = { ...vars, ...bindings };
  for (const [k, v] of Object.entries(all)) if (v === undefined) delete all[k];
  return {
    modules: true,
    scriptPath: path.join(BUILD_DIR, "index.js"),
    modulesRoot: BUILD_DIR,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate,
    kvNamespaces: kv ? ["DEDUP"] : [],
    bindings: all,
  };
}

// ------------------------------------------------------------------ signing, independently
// Standard Webhooks signing with Node's crypto: an implementation independent of the Rust
// code under test (the CLI and postwire-core's signer are exercised in their own tests).

export const nowSecs = () => Math.floor(Date.now() / 1000);

export function secretKey(secret) {
  const b64 = secret.startsWith("whsec_") ? secret.slice(6) : secret;
  return Buffer.from(b64, "base64");
}

export function sign(secret, id, timestamp, body) {
  const mac = crypto.createHmac("sha256", secretKey(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(typeof body === "string" ? Buffer.from(body) : body);
  return `v1,${mac.digest("base64")}`;
}

export function newSecret() {
  return `whsec_${crypto.randomBytes(32).toString("base64")}`;
}

let counter = 0;
export function newId(prefix = "msg") {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

/** Headers of a delivery signed with `secrets` (one signature each) at `timestamp`. */
export function delivery({ secrets, id = newId(), timestamp = nowSecs(), body = sampleBody(id) }) {
  const signature = secrets.map((s) => sign(s, id, timestamp, body)).join(" ");
  return {
    id,
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signature,
    },
  };
}

export function sampleBody(id, padTo = 0) {
  const base = { id, type: "webhook.test", createdAt: new Date().toISOString(), workspaceId: "ws_1", data: { message: "hello" } };
  let text = JSON.stringify(base);
  if (padTo > text.length) {
    base.data.message = "x".repeat(padTo - text.length + "hello".length);
    text = JSON.stringify(base);
  }
  return text;
}

/** Asserts the spec's error body: exactly statusCode, code, message; statusCode = status. */
export function assertErrorBody(assert, res, status, code) {
  assert.equal(res.status, status, `status of ${res.text}`);
  assert.deepEqual(Object.keys(res.json ?? {}).sort(), ["code", "message", "statusCode"], res.text);
  assert.equal(res.json.statusCode, status);
  assert.equal(res.json.code, code, res.text);
  assert.equal(typeof res.json.message, "string");
  assert.ok(res.json.message.length > 0);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
