// The verifiers and deliveries of the cross-runtime benchmark (runtimes.mjs), in
// web-standard JavaScript so the same file runs in Node, Bun, Deno, workerd and Chromium.
// What users run: the body is a string, every verification builds a fresh verifier from
// the secret (as a handler that reads the secret per request does) and parses the JSON.

export const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
export const SIZES = [256, 1024, 16 * 1024, 256 * 1024];

/** A JSON body of exactly `size` bytes. */
export function body(size) {
  const head = '{"id":"msg_bench","type":"webhook.test","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws_1","data":{"message":"';
  const tail = '"}}';
  return head + "x".repeat(size - head.length - tail.length) + tail;
}

/** A delivery of `size` bytes signed now by `standardwebhooks`. */
export function delivery(StandardWebhook, size) {
  const payload = body(size);
  const now = new Date();
  const headers = {
    "webhook-id": "msg_bench",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(SECRET).sign("msg_bench", now, payload),
  };
  return { payload, headers };
}

function b64decode(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The least a correct verifier does: timestamp window, HMAC, constant-time compare, JSON.parse. */
function checkTimestamp(headers) {
  const ts = headers["webhook-timestamp"];
  if (!/^\d+$/.test(ts) || Math.abs(Math.floor(Date.now() / 1000) - Number(ts)) > 300) throw new Error("timestamp");
}
function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}
function expectedFrom(headers) {
  return headers["webhook-signature"]
    .split(" ")
    .map((e) => e.split(","))
    .filter(([v]) => v === "v1")
    .map(([, s]) => b64decode(s));
}

/**
 * The verifiers of one runtime, by name: each `(payload, headers) => value | Promise`.
 * `nodeCrypto` is node:crypto where the runtime has it (Node, Bun, Deno), else null: the
 * native HMAC is then WebCrypto's (async).
 */
export function verifiers({ postwire, StandardWebhook, nodeCrypto }) {
  const internals = postwire.Webhook[Symbol.for("postwire.internals")];
  const libs = {
    postwire: (p, h) => new postwire.Webhook(SECRET).verify(p, h),
  };
  if (internals.webCryptoHmac) libs["postwire verifyAsync"] = (p, h) => new postwire.Webhook(SECRET).verifyAsync(p, h);
  libs.standardwebhooks = (p, h) => new StandardWebhook(SECRET).verify(p, h);
  if (nodeCrypto) {
    const { createHmac, timingSafeEqual } = nodeCrypto;
    libs["node:crypto"] = (p, h) => {
      checkTimestamp(h);
      const key = b64decode(SECRET.slice(6));
      const mac = createHmac("sha256", key).update(`${h["webhook-id"]}.${h["webhook-timestamp"]}.`).update(p).digest();
      if (!expectedFrom(h).some((s) => s.length === mac.length && timingSafeEqual(s, mac))) throw new Error("no match");
      return JSON.parse(p);
    };
  } else if (globalThis.crypto?.subtle) {
    const enc = new TextEncoder();
    libs["WebCrypto"] = async (p, h) => {
      checkTimestamp(h);
      const key = await crypto.subtle.importKey("raw", b64decode(SECRET.slice(6)), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(`${h["webhook-id"]}.${h["webhook-timestamp"]}.${p}`)));
      if (!expectedFrom(h).some((s) => sameBytes(s, mac))) throw new Error("no match");
      return JSON.parse(p);
    };
  }
  return libs;
}

/** Checks every verifier accepts the delivery and rejects a tampered one. */
export async function agree(libs, { payload, headers }) {
  for (const [name, verify] of Object.entries(libs)) {
    const value = await verify(payload, headers);
    if (value?.type !== "webhook.test") throw new Error(`${name} did not return the parsed body`);
    let threw = false;
    try {
      await verify(payload.replace("xx", "xy"), headers);
    } catch {
      threw = true;
    }
    if (!threw) throw new Error(`${name} accepted a tampered body`);
  }
}

/** Runs `fn` `n` times (awaiting it when it is async); resolves when done. */
export async function repeat(fn, n, payload, headers) {
  const first = fn(payload, headers);
  if (first instanceof Promise) {
    await first;
    for (let i = 1; i < n; i++) await fn(payload, headers);
  } else {
    for (let i = 1; i < n; i++) fn(payload, headers);
  }
}

/** Calls per second of `fn` over about `ms` milliseconds, timed with performance.now(). */
export async function opsPerSecond(fn, payload, headers, ms) {
  let n = 0;
  let batch = 1;
  const start = performance.now();
  let t;
  do {
    await repeat(fn, batch, payload, headers);
    n += batch;
    batch = Math.min(batch * 2, 256);
    t = performance.now();
  } while (t - start < ms);
  return n / ((t - start) / 1000);
}

/**
 * The whole table of one runtime that has a working clock: for each size, each verifier's
 * median of `rounds` slices of `sliceMs`, interleaved across verifiers.
 */
export async function run(modules, { rounds = 5, sliceMs = 150, sizes = SIZES } = {}) {
  const libs = verifiers(modules);
  const rows = [];
  for (const size of sizes) {
    const d = delivery(modules.StandardWebhook, size);
    await agree(libs, d);
    const samples = Object.fromEntries(Object.keys(libs).map((k) => [k, []]));
    for (const fn of Object.values(libs)) await opsPerSecond(fn, d.payload, d.headers, sliceMs / 2);
    for (let r = 0; r < rounds; r++) {
      for (const [name, fn] of Object.entries(libs)) samples[name].push(await opsPerSecond(fn, d.payload, d.headers, sliceMs));
    }
    const row = { size };
    for (const [name, xs] of Object.entries(samples)) row[name] = [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    rows.push(row);
  }
  return rows;
}
