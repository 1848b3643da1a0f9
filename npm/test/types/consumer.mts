// A TypeScript consumer of the package (ESM): it must type-check, and each
// `@ts-expect-error` must meet an error, so loose types (`any`) would fail the test.
import {
  Webhook,
  WebhookVerificationError,
  ReplayGuard,
  generateSecret,
  matchesSubscription,
  EVENT_TYPES,
  type WebhookEvent,
  type ErrorCode,
} from "postwire";

const secret: string = generateSecret();
const wh = new Webhook([secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], { toleranceInSeconds: 60 });
new Webhook(new Uint8Array([1, 2, 3]), { format: "raw" });
// @ts-expect-error: format is only "raw"
new Webhook(secret, { format: "base64" });

const headers = new Headers();
const parsed: unknown = wh.verify("{}", headers);
wh.verify(new Uint8Array(2), { "webhook-id": "a", "webhook-timestamp": "1", "webhook-signature": "v1,x" }, { jsonParse: false, now: new Date() });
wh.verify(new ArrayBuffer(2), { "Webhook-Id": ["a"], "webhook-timestamp": 1 });
// @ts-expect-error: a parsed object is not a payload
wh.verify({ a: 1 }, headers);
const value: string = wh.sign("msg_1", new Date(), "{}");

function handle(event: WebhookEvent): string {
  switch (event.type) {
    case "post.published":
      return event.data.post.releaseURL; // narrowed: a string here
    case "post.failed":
      return event.data.error.code === "unknown" ? String(event.data.error.retryable satisfies false) : event.data.error.message;
    case "post.deleted":
      return event.data.deletedBy.kind;
    case "integration.disconnected":
      return event.data.reason;
    case "webhook.test":
      // @ts-expect-error: webhook.test carries no post
      return event.data.post.id;
    default:
      return event.type;
  }
}

async function fetchHandler(request: Request): Promise<Response> {
  try {
    const event = await wh.verifyRequest(request);
    const json: unknown = await wh.verifyRequest(request, { parse: "json" });
    return new Response(handle(event) + String(json));
  } catch (e) {
    if (e instanceof WebhookVerificationError) {
      const code: ErrorCode = e.code;
      // @ts-expect-error: codes are a closed set
      const bad: ErrorCode = "nope";
      return new Response(code + bad, { status: 400 });
    }
    throw e;
  }
}

// svix's header names and type, and the default export (the ESM builds have one).
import postwire, { type WebhookRequiredHeaders } from "postwire";
const svixHeaders: WebhookRequiredHeaders = { "svix-id": "a", "svix-timestamp": "1", "svix-signature": "v1,x" };
new postwire.Webhook(secret).verify("{}", svixHeaders);
// @ts-expect-error: the default export has no such member
postwire.verify;
// Symbol.dispose is typed even with an older `lib` (as here: es2022).
const disposable = new Webhook(secret);
disposable[Symbol.dispose]();
disposable.dispose();

async function asyncForms(): Promise<string> {
  const value: unknown = await wh.verifyAsync("{}", headers, { jsonParse: false });
  const event = await wh.verifyEventAsync(new Uint8Array(0), headers);
  // @ts-expect-error: verifyAsync returns a promise, not the value
  const notAwaited: string = wh.verifyAsync("{}", headers);
  return event.type + String(value) + notAwaited;
}
export { asyncForms };

const guard = new ReplayGuard({ capacity: 10, ttlSeconds: 60 });
const seen: "fresh" | "duplicate" = guard.checkAndRecord("msg_1");
const n: number = guard.size;
const m: boolean = matchesSubscription({ events: ["post.failed"], integrationIds: [] }, EVENT_TYPES[0], null);
export { parsed, value, fetchHandler, seen, n, m };

// postwire/v1a: the same types, whpk_ public keys beside secrets.
import { Webhook as V1aWebhook } from "postwire/v1a";
const byKey = new V1aWebhook(["whpk_" + "A".repeat(44), secret]);
const fromKey: unknown = byKey.verify("{}", headers);
const v1aCode: ErrorCode = "invalid_public_key";
