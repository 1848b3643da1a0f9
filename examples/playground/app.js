// The playground's logic. Everything happens here in the page: the `postwire` package's
// browser build (WebAssembly, loaded by serve.mjs at /vendor/postwire.js) signs the
// samples and verifies whatever is in the form. No request leaves the page.
//
// A `whpk_` public key (a workspace's, from `GET …/signing-keys`) in the key field checks
// `v1a` (ed25519) signatures instead, with the postwire/v1a build (/vendor/postwire-v1a.js,
// loaded on first use so the default page stays small). A public key verifies but cannot
// sign: with one, paste a delivery the workspace signed; no secret is on the page.
// The URL of the workspace's published key set (`keySetUrl` of `GET …/signing-keys`) in
// the key field fetches its keys with postwire/v1a's RemoteKeySet: the one request the
// page makes, to that URL only (serve.mjs lets the page reach the origins it is given).
//
// Verification is done in two steps, so the result can say exactly what is wrong:
//   1. webhook.verify(): headers, timestamp window, signature (the Standard Webhooks part);
//   2. webhook.verifyEvent(): the same, plus the body must be an event of this API whose
//      `id` equals `webhook-id`. A delivery can pass 1 and fail 2 (signed, but not an event).
import { Webhook, WebhookVerificationError, generateSecret } from "./vendor/postwire.js";
import { sampleBody, newEventId } from "./samples.js";

/** postwire/v1a's `Webhook`, for `whpk_` public keys, loaded on first use. */
let v1a = null;
async function v1aWebhook() {
  v1a ??= await import("./vendor/postwire-v1a.js");
  return v1a;
}

const isPublicKey = (key) => key.startsWith("whpk_");
const isKeySetUrl = (key) => /^https?:\/\//i.test(key);

/** One RemoteKeySet per URL while the page is open: its cache and refresh rule apply. */
const keySets = new Map();
async function keySetFor(url) {
  if (!keySets.has(url)) keySets.set(url, new (await v1aWebhook()).RemoteKeySet(url));
  return keySets.get(url);
}

/** What verifies with the key field's value: `verify` and `verifyEvent`, both awaited. */
async function verifierFor(key) {
  if (isKeySetUrl(key)) return keySetFor(key);
  const Lib = isPublicKey(key) ? (await v1aWebhook()).Webhook : Webhook;
  return new Lib(key);
}

const $ = (id) => document.getElementById(id);
const form = $("delivery");
const fields = {
  secret: $("secret"),
  id: $("webhook-id"),
  timestamp: $("webhook-timestamp"),
  signature: $("webhook-signature"),
  body: $("body"),
};

/** What to do about each error code, in plain words. */
const HINTS = {
  missing_header:
    "One of webhook-id, webhook-timestamp or webhook-signature is empty. Copy all three headers from the request.",
  invalid_header:
    "A header is malformed: webhook-id is 1 to 256 visible ASCII characters, webhook-timestamp is Unix seconds " +
    "(digits only), webhook-signature is one or more `v1,<base64>` entries separated by spaces.",
  timestamp_too_old:
    "The timestamp is more than 5 minutes in the past. Receivers reject it to stop replayed requests. " +
    "If you pasted an old delivery, use “Re-sign … now” to sign it again with the current time.",
  timestamp_too_new:
    "The timestamp is more than 5 minutes in the future. Check the clock of the sending machine (or this one).",
  invalid_signature:
    "No signature matched. Check that the body is the raw body, byte for byte (not re-serialized JSON, no added " +
    "or trimmed whitespace), and that the secret is the one of this subscription.",
  invalid_secret:
    "The secret is not a valid signing secret: it is `whsec_` followed by base64, as shown when the subscription " +
    "was created.",
  invalid_public_key:
    "The public key is not valid: it is `whpk_` followed by the base64 of 32 bytes, as listed by " +
    "GET …/signing-keys (a `whsk_` signing key is never needed here).",
  invalid_payload: "The body could not be read.",
  invalid_key_set:
    "The key set URL answered something that is not a key set with an Ed25519 key: check it is the workspace's " +
    "keySetUrl, as listed by GET …/signing-keys.",
  key_set_unavailable:
    "The key set could not be fetched: check the URL, and that it is served with CORS to this page " +
    "(a redirect to another origin is refused).",
};

/** The three headers; an empty field is an absent header, as it would be in a request. */
function headers() {
  const h = {};
  for (const [name, field] of [["webhook-id", fields.id], ["webhook-timestamp", fields.timestamp], ["webhook-signature", fields.signature]]) {
    if (field.value.trim()) h[name] = field.value.trim();
  }
  return h;
}

function show(state, verdict, { code = null, hint = null, detail = null, event = null, summary = null } = {}) {
  const result = $("result");
  result.dataset.state = state;
  $("verdict").textContent = verdict;
  $("error-code").hidden = !code;
  $("error-code").textContent = code ? `Error code: ${code}` : "";
  $("hint").hidden = !hint;
  $("hint").textContent = hint ?? "";
  $("detail").hidden = !detail;
  $("detail").textContent = detail ? `Details: ${detail}` : "";
  const dl = $("summary");
  dl.replaceChildren();
  dl.hidden = !summary;
  for (const [term, value] of summary ?? []) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dl.append(dt, dd);
  }
  $("event-title").hidden = event === null;
  $("event").hidden = event === null;
  $("event").textContent = event === null ? "" : JSON.stringify(event, null, 2);
}

/** The main facts of an event, by type, for the summary list. */
function summarize(event) {
  const rows = [
    ["type", event.type],
    ["id", event.id],
    ["workspace", event.workspaceId],
    ["created", event.createdAt],
  ];
  const d = event.data;
  if ("post" in d) {
    rows.push(["post", `${d.post.id} (${d.post.state})`], ["account", `${d.post.integration.name} · ${d.post.integration.providerIdentifier}`]);
  }
  if (event.type === "post.published") rows.push(["released at", d.post.releaseURL]);
  if (event.type === "post.failed") rows.push(["failure", `${d.error.code}${d.error.retryable ? " (retryable)" : " (not retryable)"}: ${d.error.message}`]);
  if (event.type === "post.deleted") rows.push(["deleted by", `${d.deletedBy.kind}${d.deletedBy.id ? ` ${d.deletedBy.id}` : ""}`]);
  if ("integration" in d) rows.push(["account", `${d.integration.name} · ${d.integration.providerIdentifier}`]);
  if (event.type === "integration.disconnected") rows.push(["reason", d.reason]);
  if (event.type === "webhook.test") rows.push(["message", d.message]);
  return rows;
}

function failure(err) {
  if (err instanceof WebhookVerificationError || (err && typeof err.code === "string" && err.name === "WebhookVerificationError")) {
    show("failed", "Not verified", { code: err.code, hint: HINTS[err.code], detail: err.message });
  } else {
    show("failed", "Not verified", { code: "unexpected", detail: String(err) });
  }
}

async function verifyNow() {
  if (!Object.values(fields).some((f) => f.value.trim())) {
    show("idle", "Load a sample or paste a delivery, then verify.");
    return;
  }
  const key = fields.secret.value.trim();
  let webhook;
  try {
    webhook = await verifierFor(key);
    await webhook.verify(fields.body.value, headers(), { jsonParse: false });
  } catch (err) {
    failure(err);
    return;
  }
  try {
    const event = await webhook.verifyEvent(fields.body.value, headers());
    show("verified", `Verified: ${event.type}`, { event, summary: summarize(event) });
  } catch (err) {
    let parsed = null;
    try {
      parsed = JSON.parse(fields.body.value);
    } catch {}
    show("not-an-event", "Signature verified, but the body is not an event of this API", {
      code: err.code ?? "unexpected",
      hint: "The secret and signature are right; the payload is not a valid event of the webhooks API.",
      detail: err.message,
      event: parsed,
    });
  }
}

/** Signs the current body with the current secret, as a sender would right now. */
function signNow({ freshId = false } = {}) {
  const key = fields.secret.value.trim();
  if (isPublicKey(key) || isKeySetUrl(key)) {
    show("failed", "A public key cannot sign", {
      hint: "Paste a delivery signed by the workspace (its headers and body), or clear the key field to sign a sample with a generated secret.",
    });
    return false;
  }
  if (!fields.secret.value.trim()) fields.secret.value = generateSecret();
  if (freshId || !fields.id.value.trim()) fields.id.value = newEventId();
  const now = new Date();
  try {
    const signature = new Webhook(fields.secret.value.trim()).sign(fields.id.value.trim(), now, fields.body.value);
    fields.timestamp.value = String(Math.floor(now.getTime() / 1000));
    fields.signature.value = signature;
  } catch (err) {
    failure(err);
    return false;
  }
  return true;
}

function loadSample() {
  const type = $("sample-type").value;
  const id = newEventId();
  fields.id.value = id;
  fields.body.value = sampleBody(type, { id });
  if (signNow()) verifyNow();
}

let pending = 0;
function verifySoon() {
  clearTimeout(pending);
  pending = setTimeout(verifyNow, 200);
}

$("load-sample").addEventListener("click", loadSample);
$("generate-secret").addEventListener("click", () => {
  fields.secret.value = generateSecret();
  verifyNow();
});
$("resign").addEventListener("click", () => {
  if (signNow()) verifyNow();
});
form.addEventListener("submit", (e) => {
  e.preventDefault();
  clearTimeout(pending);
  verifyNow();
});
form.addEventListener("input", (e) => {
  if (e.target !== $("sample-type")) verifySoon();
});
form.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    clearTimeout(pending);
    verifyNow();
  }
});
// Ready: tests wait for this before driving the page.
document.documentElement.dataset.ready = "true";
