// Test helpers shared by the examples' tests: Standard Webhooks deliveries signed with
// Node's own crypto (an implementation independent of postwire, so a bug in the package
// cannot hide itself), and a small client that POSTs them over real loopback HTTP.
import crypto from "node:crypto";
import { sampleBody } from "../playground/samples.js";

export const newSecret = () => `whsec_${crypto.randomBytes(32).toString("base64")}`;
export const nowSecs = () => Math.floor(Date.now() / 1000);

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` with a `whsec_` secret. */
export function sign(secret, id, timestamp, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${crypto.createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64")}`;
}

let n = 0;
/**
 * A signed delivery of a sample event: `{ id, body, headers }`.
 * @param {string} secret
 * @param {{ type?: string, id?: string, timestamp?: number, body?: string }} [o]
 */
export function delivery(secret, { type = "post.published", id, timestamp = nowSecs(), body } = {}) {
  id ??= `msg_test_${process.pid}_${Date.now().toString(36)}_${++n}`;
  body ??= sampleBody(type, { id });
  return {
    id,
    body,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": sign(secret, id, timestamp, body),
    },
  };
}

/** POSTs a delivery (or anything) to `url`; returns `{ status, json, text }`. */
export async function post(url, { headers = {}, body = "" }) {
  const res = await fetch(url, { method: "POST", headers, body });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text, headers: res.headers };
}
