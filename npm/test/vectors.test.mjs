// Runs every file of tests/vectors/ against the built package (Node build, through the
// package's own name so the `exports` map is what resolves it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Webhook, WebhookVerificationError, matchesSubscription } from "postwire";

const dir = fileURLToPath(new URL("../../tests/vectors/", import.meta.url));
const load = (name) => JSON.parse(readFileSync(dir + name, "utf8"));
const bodyOf = (c) => (c.body_base64 !== undefined ? new Uint8Array(Buffer.from(c.body_base64, "base64")) : c.body);

test("every vector file has a runner here (the v1a ones in v1a.test.mjs)", () => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  assert.deepEqual(files, [
    "catalogue.json", "events.json", "keys.json", "matching.json", "sign.json", "sign_v1a.json", "verify.json",
    "verify_v1a.json",
  ]);
});

// catalogue.json is the one source of the event catalogue; every copy in JavaScript and
// TypeScript is checked against it here.
test("catalogue.json: the package's lists, its TypeScript unions and the playground's samples", async () => {
  const cat = load("catalogue.json");
  const types = cat.eventTypes.map((t) => t.type);
  const events = await import("../src/events.js");
  assert.deepEqual([...events.EVENT_TYPES], types);
  assert.deepEqual([...events.FAILURE_CODES], cat.failureCodes);
  assert.deepEqual([...events.DISCONNECT_REASONS], cat.disconnectReasons);
  assert.deepEqual([...events.ACTOR_KINDS], cat.actorKinds);

  // `export type Name = | "a" | "b";` in the declarations, as a list.
  const dts = readFileSync(fileURLToPath(new URL("../types/index.d.ts", import.meta.url)), "utf8");
  const union = (name) => {
    const m = new RegExp(`export type ${name} =([^;]*);`).exec(dts);
    assert.ok(m, `index.d.ts declares ${name}`);
    return [...m[1].matchAll(/"([^"]*)"/g)].map((x) => x[1]);
  };
  assert.deepEqual(union("EventType"), types);
  assert.deepEqual(union("FailureCode"), cat.failureCodes);
  assert.deepEqual(union("DisconnectReason"), cat.disconnectReasons);
  assert.deepEqual(union("ActorKind"), cat.actorKinds);

  // Every sample is a valid event of its type, as the package parses it.
  const wh = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  const now = new Date(1_700_000_000_000);
  const check = (body, type, what) => {
    const id = JSON.parse(body).id;
    const headers = { "webhook-id": id, "webhook-timestamp": String(now / 1000), "webhook-signature": wh.sign(id, now, body) };
    assert.equal(wh.verifyEvent(body, headers, { now }).type, type, what);
  };
  for (const { type, sample } of cat.eventTypes) check(JSON.stringify(sample), type, `catalogue sample ${type}`);
  const playground = await import("../../examples/playground/samples.js");
  assert.deepEqual(playground.SAMPLE_TYPES, types);
  for (const type of types) check(playground.sampleBody(type), type, `playground sample ${type}`);
});

test("sign.json", () => {
  const { cases } = load("sign.json");
  assert.ok(cases.length > 0);
  for (const c of cases) {
    const wh = new Webhook(c.secret);
    assert.equal(wh.sign(c.id, new Date(c.timestamp * 1000), bodyOf(c)), c.signature, c.name);
  }
});

for (const hmac of ["auto", "wasm", "native"]) test(`verify.json (hmac: ${hmac})`, () => {
  const { cases } = load("verify.json");
  assert.ok(cases.length > 0);
  for (const c of cases) {
    const wh = new Webhook(c.secrets, { toleranceInSeconds: c.tolerance ?? 300, hmac });
    const run = () => wh.verify(bodyOf(c), c.headers, { jsonParse: false, now: c.now * 1000 });
    // Also through a Fetch Headers, and with the body as bytes: the same answer.
    const viaHeaders = () =>
      wh.verify(new TextEncoder().encode(typeof bodyOf(c) === "string" ? bodyOf(c) : "") , new Headers(c.headers), {
        jsonParse: false,
        now: c.now * 1000,
      });
    if (c.ok) {
      assert.doesNotThrow(run, c.name);
      if (typeof bodyOf(c) === "string") assert.doesNotThrow(viaHeaders, `${c.name} (Headers, bytes)`);
    } else {
      assert.throws(run, (e) => e instanceof WebhookVerificationError && e.code === c.error, c.name);
      if (typeof bodyOf(c) === "string" && !JSON.stringify(c.headers).includes("\\u")) {
        assert.throws(viaHeaders, (e) => e.code === c.error, `${c.name} (Headers, bytes)`);
      }
    }
  }
});

test("events.json", () => {
  const { cases } = load("events.json");
  assert.ok(cases.length > 0);
  const wh = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  const now = new Date(1_700_000_000_000);
  for (const c of cases) {
    // Deliver each body properly signed, under the envelope id when it has a usable one.
    let id = "msg_evt";
    try {
      const parsed = JSON.parse(c.body);
      if (typeof parsed?.id === "string" && /^[\x21-\x7e]{1,256}$/.test(parsed.id)) id = parsed.id;
    } catch {}
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": String(now.getTime() / 1000),
      "webhook-signature": wh.sign(id, now, c.body),
    };
    if (c.ok) {
      const event = wh.verifyEvent(c.body, headers, { now });
      assert.equal(event.type, c.type, c.name);
      assert.equal(event.id, id, c.name);
    } else {
      assert.throws(
        () => wh.verifyEvent(c.body, headers, { now }),
        (e) => e instanceof WebhookVerificationError && e.code === c.error,
        c.name,
      );
    }
  }
});

test("matching.json", () => {
  const { cases } = load("matching.json");
  assert.ok(cases.length > 0);
  for (const c of cases) {
    const got = matchesSubscription({ events: c.events, integrationIds: c.integrationIds }, c.eventType, c.accountId);
    assert.equal(got, c.matches, c.name);
  }
});
