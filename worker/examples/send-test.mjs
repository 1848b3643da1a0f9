// Sends one signed Standard Webhooks delivery (a `webhook.test` event), as postwire's
// sender makes it, and prints the answer. Node 18 or newer, no dependencies:
//   node examples/send-test.mjs [url] [webhook-id]
// url defaults to http://127.0.0.1:8787/ (wrangler dev); the id to a fresh one. The secret
// is WEBHOOK_SECRET, or else the first of WEBHOOK_SECRETS in ./.dev.vars.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

const url = process.argv[2] ?? "http://127.0.0.1:8787/";
const id = process.argv[3] ?? `msg_${Date.now()}`;
const secret =
  process.env.WEBHOOK_SECRET ??
  readFileSync(".dev.vars", "utf8").match(/^WEBHOOK_SECRETS\s*=\s*"?(whsec_[^\s",]+)/m)?.[1];
if (!secret) throw new Error("set WEBHOOK_SECRET, or WEBHOOK_SECRETS in ./.dev.vars");

const timestamp = Math.floor(Date.now() / 1000);
const body = JSON.stringify({
  id, type: "webhook.test", createdAt: new Date(timestamp * 1000).toISOString(), workspaceId: "ws_1",
  data: { message: "hello from send-test.mjs" },
});
const key = Buffer.from(secret.slice("whsec_".length), "base64");
const signature = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
const response = await fetch(url, {
  method: "POST",
  body,
  headers: {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": `v1,${signature}`,
  },
});
console.log(response.status, await response.text());
