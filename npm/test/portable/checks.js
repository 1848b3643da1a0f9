// Checks that run unchanged in every runtime (Node, Deno, Bun, workerd, Chromium): only
// web-standard APIs here, no Node ones. `runChecks(pw)` takes the imported package and
// resolves to the names of the checks that passed; it throws on the first failure.

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const REF_HEADERS = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const REF_BODY = '{"test": 2432232314}';
const REF_NOW = 1614265330000;

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function throwsCode(fn, code, what) {
  try {
    fn();
  } catch (e) {
    check(!(e instanceof WebAssembly.RuntimeError), `${what}: wasm trap`);
    check(e instanceof Error && e.name === "WebhookVerificationError", `${what}: ${e}`);
    check(e.code === code, `${what}: code ${e.code}, expected ${code}`);
    return;
  }
  throw new Error(`check failed: ${what} did not throw`);
}

export async function runChecks(pw) {
  const passed = [];
  const ok = (name) => passed.push(name);
  const { Webhook, WebhookVerificationError, ReplayGuard, generateSecret } = pw;

  const wh = new Webhook(SECRET);
  const parsed = wh.verify(REF_BODY, REF_HEADERS, { now: REF_NOW });
  check(parsed && parsed.test === 2432232314, "reference vector verifies");
  ok("reference vector");

  check(wh.verify(new TextEncoder().encode(REF_BODY), new Headers(REF_HEADERS), { now: REF_NOW }).test === 2432232314, "bytes + Headers");
  check(wh.verify(new TextEncoder().encode(REF_BODY).buffer, REF_HEADERS, { now: REF_NOW }).test === 2432232314, "ArrayBuffer");
  ok("Uint8Array, ArrayBuffer and Headers input");

  check(wh.sign(REF_HEADERS["webhook-id"], new Date(REF_NOW), REF_BODY) === REF_HEADERS["webhook-signature"], "sign");
  ok("sign");

  throwsCode(() => wh.verify(REF_BODY + " ", REF_HEADERS, { now: REF_NOW }), "invalid_signature", "tampered body");
  throwsCode(() => wh.verify(REF_BODY, REF_HEADERS), "timestamp_too_old", "old timestamp");
  throwsCode(() => wh.verify(JSON.parse(REF_BODY), REF_HEADERS, { now: REF_NOW }), "invalid_payload", "parsed object");
  throwsCode(() => wh.verify(REF_BODY, { ...REF_HEADERS, "webhook-signature": "v1,x ".repeat(3000) }, { now: REF_NOW }), "invalid_header", "thousands of signatures");
  check(new WebhookVerificationError("m", "invalid_header") instanceof Error, "error class");
  ok("errors with codes");

  const secret = generateSecret();
  check(/^whsec_[A-Za-z0-9+/]{43}=$/.test(secret) && secret !== generateSecret(), "generateSecret");
  const fresh = new Webhook([secret, SECRET]);
  const now = new Date();
  const body = JSON.stringify({ id: "msg_live", type: "webhook.test", createdAt: now.toISOString(), workspaceId: "ws", data: { message: "hi" } });
  const headers = { "webhook-id": "msg_live", "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign("msg_live", now, body) };
  check(fresh.verifyEvent(body, headers).type === "webhook.test", "rotation + verifyEvent");
  ok("generateSecret, rotation and verifyEvent");

  const request = new Request("https://example.com/hook", { method: "POST", headers, body });
  const event = await fresh.verifyRequest(request);
  check(event.id === "msg_live" && event.data.message === "hi", "verifyRequest");
  ok("verifyRequest");

  const guard = new ReplayGuard();
  check(guard.checkAndRecord("msg_live") === "fresh" && guard.checkAndRecord("msg_live") === "duplicate", "replay guard");
  ok("ReplayGuard");

  const big = "x".repeat(1 << 20);
  const bigSig = wh.sign("msg_big", now, big);
  const bigHeaders = { "webhook-id": "msg_big", "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": bigSig };
  // Signed in wasm, verified with the build's HMAC for large bodies (node:crypto where it has one).
  check(wh.verify(big, bigHeaders, { jsonParse: false }) === undefined, "1 MiB body");
  throwsCode(() => wh.verify(big.slice(1) + "y", bigHeaders), "invalid_signature", "1 MiB body, tampered");
  ok("1 MiB body");

  // verifyAsync: WebCrypto's HMAC for large bodies where there is no node:crypto; the
  // same answers as verify, for strings and bytes, and for small bodies too.
  check((await wh.verifyAsync(big, bigHeaders, { jsonParse: false })) === undefined, "verifyAsync, 1 MiB string");
  check((await wh.verifyAsync(new TextEncoder().encode(big), new Headers(bigHeaders), { jsonParse: false })) === undefined, "verifyAsync, 1 MiB bytes");
  check((await wh.verifyAsync(REF_BODY, REF_HEADERS, { now: REF_NOW })).test === 2432232314, "verifyAsync, small body");
  for (const [body, headers, code, what] of [
    [big.slice(1) + "y", bigHeaders, "invalid_signature", "tampered"],
    [big, { ...bigHeaders, "webhook-timestamp": "1614265330" }, "timestamp_too_old", "stale"],
    [big, { ...bigHeaders, "webhook-id": "bad id" }, "invalid_header", "bad id"],
  ]) {
    let error;
    try {
      await wh.verifyAsync(body, headers);
    } catch (e) {
      error = e;
    }
    check(error instanceof WebhookVerificationError && error.code === code, `verifyAsync, ${what}: ${error}`);
  }
  const bigEvent = JSON.stringify({ id: "msg_big", type: "webhook.test", createdAt: "2026-11-22T09:00:00.000Z", workspaceId: "ws_1", data: { message: big } });
  const bigEventHeaders = { ...bigHeaders, "webhook-signature": wh.sign("msg_big", now, bigEvent) };
  check((await wh.verifyEventAsync(bigEvent, bigEventHeaders)).data.message.length === big.length, "verifyEventAsync, 1 MiB event");
  const rotated = new Webhook([generateSecret(), SECRET]);
  check((await rotated.verifyAsync(big, bigHeaders, { jsonParse: false })) === undefined, "verifyAsync with a rotation");
  ok("verifyAsync");
  return passed;
}

/** How many checks `runChecks` makes; runners compare against it. */
export const CHECK_COUNT = 9;
