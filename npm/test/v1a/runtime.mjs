// Run by v1a.test.mjs under Deno and Bun: postwire/v1a resolved by the runtime's own export
// conditions verifies a v1a delivery signed by the runtime's node:crypto, and refuses a
// tampered body. Prints one JSON line.
import { Webhook } from "postwire/v1a";
import crypto from "node:crypto";

const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
const whpk = `whpk_${Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url").toString("base64")}`;
const ts = Math.floor(Date.now() / 1000);
const body = '{"id":"m","x":1}';
const sig = `v1a,${crypto.sign(null, Buffer.from(`m.${ts}.${body}`), privateKey).toString("base64")}`;
const headers = { "webhook-id": "m", "webhook-timestamp": String(ts), "webhook-signature": sig };
const wh = new Webhook(whpk);
const ok = wh.verify(body, headers).x;
let forged = "accepted";
try {
  wh.verify(body + " ", headers);
} catch (e) {
  forged = e.code;
}
console.log(JSON.stringify({ ok, forged }));
