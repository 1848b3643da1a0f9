// Parts of the end-to-end test: the sender (`postwire serve` as a child process on a real
// SQLite file), the Worker (its worker-build output in workerd through Miniflare, with a
// real KV namespace), and a Node origin that verifies every request with the `postwire`
// npm package. Everything talks real HTTP on loopback.
import { spawn, execFileSync } from "node:child_process";
import { readFileSync, existsSync, openSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { Webhook, WebhookVerificationError } from "postwire";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const WORKER_DIR = path.join(ROOT, "worker");
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free loopback port (bound, then released). */
export async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// ------------------------------------------------------------------------------ sender

/** The `postwire` binary (tests/e2e/test.sh builds it and sets POSTWIRE_BIN). */
export function postwireBin() {
  const bin = process.env.POSTWIRE_BIN ?? path.join(ROOT, "target", "debug", "postwire");
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run tests/e2e/test.sh (it builds postwire-cli)`);
  return bin;
}

/** `postwire token create`: a bearer token for the public API (printed once). */
export function createToken(db, workspace) {
  const out = execFileSync(postwireBin(), ["token", "create", "--create-database", "--db", db, "--workspace", workspace, "--scope", "webhooks:write"], { encoding: "utf8" });
  const token = out.split("\n").find((l) => /^pw_\S+$/.test(l.trim()));
  if (!token) throw new Error("postwire token create printed no token");
  return token.trim();
}

/**
 * Starts `postwire serve` on `db`; resolves once it listens. Its output is appended to
 * `logFile` (checked for secrets at the end).
 */
export async function startSender({ db, ingestToken, logFile }) {
  const log = openSync(logFile, "a");
  const child = spawn(
    postwireBin(),
    ["serve", "--db", db, "--listen", "127.0.0.1:0", "--ingest-token", ingestToken, "--dangerously-allow-insecure-local-urls", "--log", "info"],
    { stdio: ["ignore", "pipe", log] },
  );
  let stdout = "";
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`postwire serve did not start: ${stdout}`)), 30_000);
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`postwire serve exited (${code ?? signal}) before listening: ${stdout}`));
    });
  });
  child.stdout.on("data", () => {}); // keep draining
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    base,
    child,
    exited,
    /** SIGKILL: no shutdown of any kind. */
    async kill() {
      child.kill("SIGKILL");
      return exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** A JSON call; returns `{ status, json }`. */
export async function call(base, method, url, token, body) {
  const res = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

// ------------------------------------------------------------------------------ Worker

/** `compatibility_date` and `[vars]` of worker/wrangler.toml: the deployed settings. */
function wranglerConfig() {
  const text = readFileSync(path.join(WORKER_DIR, "wrangler.toml"), "utf8");
  const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const vars = {};
  let section = "";
  for (const line of text.split("\n")) {
    const h = /^\s*\[+([^\]]+)\]+\s*$/.exec(line);
    if (h) section = h[1].trim();
    const kv = /^\s*([A-Z0-9_]+)\s*=\s*"([^"]*)"/.exec(line);
    if (h === null && kv && section === "vars") vars[kv[1]] = kv[2];
  }
  if (!compatibilityDate) throw new Error("worker/wrangler.toml has no compatibility_date");
  return { compatibilityDate, vars };
}

/** The built Worker in workerd, with the DEDUP KV namespace, on a loopback port. */
export async function startWorker({ port, webhookSecret, originUrl, originSecret }) {
  const build = path.join(WORKER_DIR, "build");
  if (!existsSync(path.join(build, "index.js"))) throw new Error("worker/build is missing: run worker/build.sh");
  const { compatibilityDate, vars } = wranglerConfig();
  const mf = new Miniflare({
    host: "127.0.0.1",
    port,
    modules: true,
    scriptPath: path.join(build, "index.js"),
    modulesRoot: build,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate,
    kvNamespaces: ["DEDUP"],
    bindings: { ...vars, ORIGIN_URL: originUrl, WEBHOOK_SECRETS: webhookSecret, ORIGIN_SECRET: originSecret },
  });
  const url = await mf.ready;
  return {
    url: url.href,
    async kvKeys() {
      const ns = await mf.getKVNamespace("DEDUP");
      const keys = [];
      let cursor;
      do {
        const page = await ns.list({ cursor });
        keys.push(...page.keys.map((k) => k.name));
        cursor = page.list_complete ? undefined : page.cursor;
      } while (cursor);
      return Promise.all(keys.map(async (k) => ({ key: k, value: await ns.get(k) })));
    },
    dispose: () => mf.dispose(),
  };
}

// ------------------------------------------------------------------------------ origin

/**
 * The customer's origin: verifies each request with the npm package, holding only the
 * Worker's ORIGIN_SECRET (so it accepts nothing that did not come through the Worker),
 * and records what it accepted, in arrival order. `mode` sets its behaviour:
 * "ok", "fail" (503) or "slow" (answers 200 after `slowMs`).
 */
export async function startOrigin({ originSecret, subscriptionSecret }) {
  const viaWorker = new Webhook(originSecret);
  const fromSender = new Webhook(subscriptionSecret);
  const accepted = []; // { id, type, key, at }
  const refused = []; // { id, status, why }
  const received = []; // every request's webhook-id
  const origin = { mode: "ok", slowMs: 2500, accepted, refused, received, onRequest: null };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const id = String(req.headers["webhook-id"] ?? "");
      received.push(id);
      origin.onRequest?.(id);
      const answer = (status, json) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(json));
      };
      let event;
      try {
        event = viaWorker.verifyEvent(body, req.headers);
        // The sender's own signature is in the same header, and also verifies.
        fromSender.verifyEvent(body, req.headers);
      } catch (e) {
        const code = e instanceof WebhookVerificationError ? e.code : "internal";
        refused.push({ id, status: 400, why: code });
        return answer(400, { statusCode: 400, code, message: String(e.message) });
      }
      if (origin.mode === "fail") {
        refused.push({ id, status: 503, why: "origin failing (test)" });
        return answer(503, { statusCode: 503, code: "unavailable", message: "origin failing on purpose" });
      }
      if (origin.mode === "slow") await sleep(origin.slowMs);
      const key = event.data.post ? `post:${event.data.post.id}` : `account:${event.data.integration?.id}`;
      accepted.push({ id: event.id, type: event.type, key, at: Date.now() });
      answer(200, { received: true });
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  origin.url = `http://127.0.0.1:${server.address().port}/webhooks/postwire`;
  origin.close = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return origin;
}
