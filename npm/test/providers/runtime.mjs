// Run by providers.test.mjs under Deno and Bun: postwire/providers and its per-provider
// entries, resolved by the runtime's own export conditions, verify deliveries signed with
// the runtime's node:crypto as each provider documents, and refuse forgeries with their
// codes. Prints one JSON line: per provider [id, code of a tampered body, code of a third bad case].
import crypto from "node:crypto";
import { verify } from "postwire/providers";
import * as stripe from "postwire/providers/stripe";
import * as github from "postwire/providers/github";

const now = Math.floor(Date.now() / 1000);
const hmac = (alg, key, data, enc) => crypto.createHmac(alg, key).update(data).digest(enc);
const code = (fn) => {
  try {
    fn();
    return "accepted";
  } catch (e) {
    if (e?.name !== "WebhookVerificationError") throw e;
    return e.code;
  }
};
const out = {};

{
  const body = '{"id":"evt_rt_1","type":"invoice.paid"}';
  const headers = { "Stripe-Signature": `t=${now},v1=${hmac("sha256", "whsec_rt", `${now}.${body}`, "hex")}` };
  const options = { secret: "whsec_rt" };
  out.stripe = [
    stripe.verify(body, headers, options).id,
    code(() => stripe.verify(body + " ", headers, options)),
    code(() => stripe.verify(body, headers, { ...options, now: (now + 400) * 1000 })),
  ];
}
{
  const body = '{"action":"opened"}';
  const headers = new Headers({ "X-Hub-Signature-256": `sha256=${hmac("sha256", "gh", body, "hex")}`, "X-GitHub-Delivery": "d-rt-1", "X-GitHub-Event": "issues" });
  out.github = [
    github.verify(new TextEncoder().encode(body), headers, { secret: "gh" }).id,
    code(() => github.verify(body + " ", headers, { secret: "gh" })),
    code(() => github.verify(body, { "x-hub-signature-256": headers.get("x-hub-signature-256") }, { secret: "gh" })),
  ];
}
{
  const body = '{"type":"event_callback","event_id":"Ev0rt","event":{"type":"message"}}';
  const headers = { "x-slack-signature": `v0=${hmac("sha256", "sl", `v0:${now}:${body}`, "hex")}`, "x-slack-request-timestamp": String(now) };
  out.slack = [
    verify(body, headers, { provider: "slack", secret: "sl" }).id,
    code(() => verify(body + " ", headers, { provider: "slack", secret: "sl" })),
    code(() => verify(body, headers, { provider: "slack", secret: "sl", now: (now + 400) * 1000 })),
  ];
}
{
  const url = "https://rt.example/sms";
  const params = { Body: "hi", From: "+1", To: "+2" };
  const body = new URLSearchParams(params).toString();
  const signed = url + Object.keys(params).sort().map((k) => k + params[k]).join("");
  const headers = { "x-twilio-signature": hmac("sha1", "tok", signed, "base64"), "i-twilio-idempotency-token": "idem-rt" };
  out.twilio = [
    verify(body, headers, { provider: "twilio", secret: "tok", publicUrl: url }).id,
    code(() => verify(body + "x", headers, { provider: "twilio", secret: "tok", publicUrl: url })),
    code(() => verify(body, headers, { provider: "twilio", secret: "tok" })),
  ];
}
{
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const key = Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("hex");
  const body = '{"id":"11","type":1}';
  const headers = { "x-signature-ed25519": crypto.sign(null, Buffer.from(`${now}${body}`), privateKey).toString("hex"), "x-signature-timestamp": String(now) };
  out.discord = [
    verify(body, headers, { provider: "discord", secret: key }).id,
    code(() => verify(body + " ", headers, { provider: "discord", secret: key })),
    code(() => verify(body, headers, { provider: "discord", secret: key, now: (now + 400) * 1000 })),
  ];
}
{
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  const key = Buffer.from(publicKey.export({ type: "spki", format: "der" })).toString("base64");
  const body = `[{"email":"a@example.com","event":"delivered","timestamp":${now}}]`;
  const headers = {
    "x-twilio-email-event-webhook-signature": crypto.sign("sha256", Buffer.from(`${now}${body}`), privateKey).toString("base64"),
    "x-twilio-email-event-webhook-timestamp": String(now),
  };
  out.sendgrid = [
    verify(body, headers, { provider: "sendgrid", secret: key }).id.split("_")[0],
    code(() => verify(body + " ", headers, { provider: "sendgrid", secret: key })),
    code(() => verify(body, { ...headers, "x-twilio-email-event-webhook-timestamp": "soon" }, { provider: "sendgrid", secret: key })),
  ];
}
console.log(JSON.stringify(out));
