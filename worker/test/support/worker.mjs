// Runs the built Worker (worker/build, from worker-build) in workerd through Miniflare, in
// the de-duplication mode named by POSTWIRE_DEDUP_STORE ("kv", the default, or
// "durable-object"), with the [vars], bindings and compatibility date of that mode's wrangler
// file (wrangler.toml, or wrangler.durable-object.toml), so the tests run the configuration
// that is deployed: a real KV namespace bound as DEDUP, or the DedupObject Durable Object
// class (SQLite-backed, as its migration declares) bound as DEDUP_OBJECT.
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import crypto from "node:crypto";
import { Miniflare } from "miniflare";

export const WORKER_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BUILD_DIR = path.join(WORKER_DIR, "build");
export const REPO_ROOT = path.resolve(WORKER_DIR, "..");

/** The de-duplication mode under test. */
export const MODE = process.env.POSTWIRE_DEDUP_STORE || "kv";
if (!["kv", "durable-object"].includes(MODE)) throw new Error(`POSTWIRE_DEDUP_STORE=${MODE}: expected kv or durable-object`);
export const WRANGLER_FILE = MODE === "kv" ? "wrangler.toml" : "wrangler.durable-object.toml";

/**
 * `compatibility_date`, the `[vars]` table (flat string values only), the KV bindings and the
 * Durable Object bindings (with whether their class is SQLite-backed) of a wrangler file.
 */
export function wranglerConfig(file = WRANGLER_FILE) {
  const text = readFileSync(path.join(WORKER_DIR, file), "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const vars = {};
  const tables = []; // [header, {key: value}] in order
  let section = "";
  for (const line of text.split("\n")) {
    const header = /^\s*\[+([^\]]+)\]+\s*$/.exec(line);
    if (header) {
      section = header[1].trim();
      tables.push([section, {}]);
      continue;
    }
    const kv = /^\s*([A-Za-z0-9_]+)\s*=\s*(.+?)\s*(#.*)?$/.exec(line);
    if (!kv) continue;
    const str = /^"([^"]*)"$/.exec(kv[2]);
    if (section === "vars" && str) vars[kv[1]] = str[1];
    if (tables.length) tables[tables.length - 1][1][kv[1]] = str ? str[1] : kv[2];
  }
  if (!date) throw new Error(`${file} has no compatibility_date`);
  const kvNamespaces = tables.filter(([h]) => h === "kv_namespaces").map(([, t]) => t.binding);
  const sqliteClasses = tables
    .filter(([h]) => h === "migrations")
    .flatMap(([, t]) => [...(t.new_sqlite_classes ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1]));
  const durableObjects = Object.fromEntries(
    tables
      .filter(([h]) => h === "durable_objects.bindings")
      .map(([, t]) => [t.name, { className: t.class_name, useSQLite: sqliteClasses.includes(t.class_name) }]),
  );
  return { compatibilityDate: date, vars, kvNamespaces, durableObjects };
}

/**
 * Starts the Worker. `bindings` override the wrangler file's [vars] and add the secrets
 * (WEBHOOK_SECRETS, ORIGIN_SECRET); a value of `undefined` removes a variable. With
 * `store: false` the mode's store binding (KV namespace or Durable Object) is left out.
 */
export async function startWorker(bindings, { store = true, file = WRANGLER_FILE, persist } = {}) {
  if (!existsSync(path.join(BUILD_DIR, "index.js"))) {
    throw new Error("worker/build/index.js is missing: run worker/build.sh first");
  }
  let generation = 0; // Durable Object mode: a new namespace key empties every object
  let current = { bindings, store };
  const mf = new Miniflare(workerOptions(bindings, { store, generation, file, persist }));
  let url = await mf.ready;
  const { kvNamespaces, durableObjects } = wranglerConfig(file);
  const objectBinding = Object.keys(durableObjects)[0];

  async function objectState(id) {
    const ns = await mf.getDurableObjectNamespace(objectBinding);
    const res = await ns.get(ns.idFromName(id)).fetch("http://dedup-object/", { method: "GET" });
    if (!res.ok) throw new Error(`GET on the Durable Object of ${id}: ${res.status} ${await res.text()}`);
    return res.json();
  }

  return {
    mf,
    mode: MODE,
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
    /**
     * The store's record of `id`: `{value, expiration}` (expiration in Unix seconds: KV's
     * expiration, or the Durable Object's alarm), or undefined when there is none.
     */
    async record(id) {
      if (MODE === "kv") {
        const ns = await mf.getKVNamespace(kvNamespaces[0]);
        const { keys } = await ns.list({ prefix: `webhook-id:${id}` });
        const key = keys.find((k) => k.name === `webhook-id:${id}`);
        return key ? { value: await ns.get(key.name), expiration: key.expiration } : undefined;
      }
      const { record, alarm } = await objectState(id);
      return record === null ? undefined : { value: record, expiration: alarm === null ? null : alarm / 1000 };
    },
    /** The Durable Object's raw state of `id`, `{record, alarm}` (Durable Object mode only). */
    objectState,
    /** Forgets every record (KV: deletes the keys; Durable Objects: a fresh namespace). */
    async clearStore() {
      if (MODE === "kv") {
        const ns = await mf.getKVNamespace(kvNamespaces[0]);
        const { keys } = await ns.list();
        await Promise.all(keys.map((k) => ns.delete(k.name)));
        return;
      }
      generation += 1;
      await mf.setOptions(workerOptions(current.bindings, { store: current.store, generation, file, persist }));
      url = await mf.ready;
    },
    async reconfigure(newBindings, opts = { store: true }) {
      current = { bindings: newBindings, store: opts.store ?? true };
      await mf.setOptions(workerOptions(newBindings, { store: current.store, generation, file, persist }));
      url = await mf.ready;
    },
    /** Miniflare's URL of the Worker. */
    url: () => url,
    dispose: () => mf.dispose(),
  };
}

/**
 * Miniflare's options for the Worker with `file`'s settings; `persist` (a folder) keeps
 * Durable Object storage on disk across a dispose and a new start.
 */
function workerOptions(bindings, { store, generation, file = WRANGLER_FILE, persist }) {
  const { compatibilityDate, vars, kvNamespaces, durableObjects } = wranglerConfig(file);
  const all = { ...vars, ...bindings };
  for (const [k, v] of Object.entries(all)) if (v === undefined) delete all[k];
  const objects = Object.fromEntries(
    Object.entries(durableObjects).map(([name, o]) => [name, { ...o, unsafeUniqueKey: `postwire-test-${generation}-${o.className}` }]),
  );
  return {
    modules: true,
    scriptPath: path.join(BUILD_DIR, "index.js"),
    modulesRoot: BUILD_DIR,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate,
    kvNamespaces: store ? kvNamespaces : [],
    durableObjects: store ? objects : {},
    ...(persist ? { durableObjectsPersist: persist } : {}),
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
