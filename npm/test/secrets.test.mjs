// Drop-in for every secret: each secret text `standardwebhooks` (npm) accepts must be
// accepted here with the same key bytes. Secrets are generated, mangled every way a real
// deployment mangles them (a file's final newline, a space in .env, padding stripped or
// doubled, non-zero spare bits, one character too many), and each text is given to
// `standardwebhooks`, to this package and to a model of the documented rule
// (postwire-core's `Secret::parse`), which must all agree.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { Webhook, WebhookVerificationError } from "postwire";

const require = createRequire(new URL("../../package.json", import.meta.url));
const { Webhook: StandardWebhook } = require("standardwebhooks");

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const MSG = { id: "msg_secret_compat", at: new Date(1_700_000_000_000), body: '{"type":"webhook.test"}' };
const TS = Math.floor(MSG.at.getTime() / 1000);

/**
 * The documented rule (crates/postwire-core/src/secret.rs, `Secret::parse`), written
 * independently: the key bytes, or null when the text is rejected.
 */
function modelKey(text) {
  if (Buffer.byteLength(text) > 2048) return null;
  let s = text.replace(/^[ \t\n\r\f]+|[ \t\n\r\f]+$/g, "");
  if (s.startsWith("whsec_")) s = s.slice(6);
  const unpadded = s.replace(/=+$/, "");
  if (s.length - unpadded.length > 2) return null;
  const chars = [...unpadded];
  if (chars.length % 4 === 1) chars.pop();
  if (chars.length === 0) return null;
  const out = [];
  let acc = 0;
  let bits = 0;
  for (const c of chars) {
    const v = ALPHABET.indexOf(c);
    if (v < 0 || c.length !== 1) return null;
    acc = ((acc << 6) | v) & 0xffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return out.length > 1024 ? null : Buffer.from(out);
}

/** The `v1,` signature of MSG under `key`, with node:crypto. */
const macOf = (key) => "v1," + createHmac("sha256", key).update(`${MSG.id}.${TS}.${MSG.body}`).digest("base64");

/** `standardwebhooks`'s outcome: the signature of MSG under the key it decoded, or null. */
function theirs(text) {
  let wh;
  try {
    wh = new StandardWebhook(text);
  } catch {
    return null;
  }
  return wh.sign(MSG.id, MSG.at, MSG.body);
}

/** This package's outcome: the signature of MSG, or null after an `invalid_secret` error. */
function ours(text) {
  let wh;
  try {
    wh = new Webhook(text);
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError && e.code === "invalid_secret", `${JSON.stringify(text)}: ${e}`);
    assert.ok(text.trim().length < 12 || !e.message.includes(text.trim().slice(-10)), "no secret in the message");
    return null;
  }
  return wh.sign(MSG.id, MSG.at, MSG.body);
}

/** Every mangling of the key's base64 (padded and unpadded) that deployments produce. */
function mangle(key) {
  const padded = key.toString("base64");
  const bare = padded.replace(/=+$/, "");
  const spare = key.length % 3 === 0 ? null : spareBits(bare, key.length % 3);
  const forms = [padded, bare];
  if (spare) forms.push(spare, spare + "=".repeat(padded.length - bare.length));
  const out = new Set();
  for (const f of forms) {
    for (const prefix of ["whsec_", ""]) {
      const s = prefix + f;
      out.add(s);
      for (const tail of ["\n", " ", "\r\n", "\t", "\n\n", "=", "==", "===", "=\n", "==\n", "A", "x", "!", "é", "-", "=A"]) {
        out.add(s + tail);
      }
      out.add(" " + s);
      out.add("\n" + s + "\n");
      out.add(s.slice(0, -1));
      out.add(s.slice(0, -2));
      if (f.length > 4) {
        out.add(prefix + f.slice(0, 2) + "!" + f.slice(3));
        out.add(prefix + f.slice(0, 2) + " " + f.slice(2));
      }
      out.add(prefix + f.replaceAll("+", "-").replaceAll("/", "_"));
    }
  }
  out.add("whsec_whsec_" + padded);
  out.add("WHSEC_" + padded);
  return out;
}

/** `bare` with its last character's unused low bits set (1 byte left: 4 bits, 2 bytes: 2). */
function spareBits(bare, leftover) {
  const last = ALPHABET.indexOf(bare.at(-1));
  return bare.slice(0, -1) + ALPHABET[last | (leftover === 1 ? 0b1111 : 0b11)];
}

/** Whether a text only `postwire` accepts is one of the documented extensions. */
function documentedExtension(text, sig) {
  const trimmed = text.replace(/^[ \t\n\r\f]+|[ \t\n\r\f]+$/g, "");
  if (theirs(trimmed) === sig) return "surrounding whitespace";
  const b64 = (trimmed.startsWith("whsec_") ? trimmed.slice(6) : trimmed).replace(/=+$/, "");
  if (b64.length < 4 && theirs(b64.padEnd(4, "=")) === sig) return "unpadded, under 4 characters";
  return null;
}

test("every secret standardwebhooks accepts is accepted, with the same key", (t) => {
  const stats = { texts: 0, bothAccept: 0, bothReject: 0, onlyOurs: {}, nonCanonicalTheyAccept: 0 };
  const lengths = [1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 23, 24, 25, 31, 32, 33, 48, 63, 64, 65, 100];
  for (const len of lengths) {
    for (let trial = 0; trial < 6; trial++) {
      const key = randomBytes(len);
      for (const text of mangle(key)) {
        stats.texts++;
        const want = modelKey(text);
        const sw = theirs(text);
        const pw = ours(text);
        const what = `${JSON.stringify(text)} (key of ${len} bytes)`;
        // The model is a superset of standardwebhooks, with the same key...
        if (sw !== null) {
          assert.ok(want !== null, `the rule must accept ${what}`);
          assert.equal(macOf(want), sw, `same key as standardwebhooks for ${what}`);
          if (text !== "whsec_" + key.toString("base64") && text !== key.toString("base64")) stats.nonCanonicalTheyAccept++;
        }
        // ...and this package follows the model exactly.
        assert.equal(pw, want === null ? null : macOf(want), `postwire follows the documented rule for ${what}`);
        if (sw !== null && pw !== null) {
          stats.bothAccept++;
          // Same verification result both ways.
          const headers = { "webhook-id": MSG.id, "webhook-timestamp": String(TS), "webhook-signature": sw };
          assert.deepEqual(new Webhook(text).verify(MSG.body, headers, { now: MSG.at }), { type: "webhook.test" });
          const sw2 = new StandardWebhook(text);
          const realNow = Date.now;
          Date.now = () => MSG.at.getTime();
          try {
            assert.deepEqual(sw2.verify(MSG.body, { ...headers, "webhook-signature": pw }), { type: "webhook.test" });
          } finally {
            Date.now = realNow;
          }
        } else if (sw === null && pw === null) {
          stats.bothReject++;
        } else {
          const kind = documentedExtension(text, pw);
          assert.ok(kind, `postwire accepts ${what}, which standardwebhooks rejects, for no documented reason`);
          stats.onlyOurs[kind] = (stats.onlyOurs[kind] ?? 0) + 1;
        }
      }
    }
  }
  t.diagnostic(JSON.stringify(stats));
  // The run must have exercised every kind of case, or it proves nothing.
  assert.ok(stats.nonCanonicalTheyAccept > 500, JSON.stringify(stats));
  assert.ok(stats.bothReject > 500, JSON.stringify(stats));
  assert.ok(stats.onlyOurs["surrounding whitespace"] > 0 && stats.onlyOurs["unpadded, under 4 characters"] > 0, JSON.stringify(stats));
});

test("the contested secrets of the README, against standardwebhooks itself", () => {
  const ref = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const refSig = theirs(ref);
  // [text, standardwebhooks accepts, postwire accepts, same key as the reference secret]
  const table = [
    [ref + "\n", true, true, true],
    [ref + " ", true, true, true],
    [ref + "\r\n", false, true, true],
    [ref + "==", true, true, true],
    [ref + "x", true, true, true],
    [ref + "===", false, false],
    ["whsec_AAE", false, true],
    ["whsec_AAF=", true, true],
    [" " + ref, false, true, true],
  ];
  for (const [text, sw, pw, same] of table) {
    assert.equal(theirs(text) !== null, sw, `standardwebhooks on ${JSON.stringify(text)}`);
    assert.equal(ours(text) !== null, pw, `postwire on ${JSON.stringify(text)}`);
    if (same) assert.equal(ours(text), refSig, JSON.stringify(text));
  }
  // Spare bits are ignored: "AAF=" and "AAE=" are the same key (0x00 0x01).
  assert.equal(ours("whsec_AAF="), theirs("whsec_AAE="));
});
