// The typed events of the postwire webhooks API, checked in JavaScript.
//
// postwire-core parses events with serde; compiling that into the wasm module would
// roughly triple its size, so the package parses with the engine's own JSON.parse and
// checks the result here against the same rules (see crates/postwire-core/src/event.rs).
// tests/vectors/events.json pins both implementations to the same answers.

/** The nine event types, in the order of the spec. */
export const EVENT_TYPES = Object.freeze([
  "post.scheduled",
  "post.unscheduled",
  "post.publishing",
  "post.published",
  "post.failed",
  "post.deleted",
  "integration.disconnected",
  "integration.reconnected",
  "webhook.test",
]);

/** `data.error.code` on `post.failed`, in the order of the spec. */
export const FAILURE_CODES = Object.freeze([
  "quota_exceeded",
  "integration_disconnected",
  "content_rejected",
  "media_invalid",
  "rate_limited",
  "provider_error",
  "unknown",
]);
/** `data.reason` on `integration.disconnected`. */
export const DISCONNECT_REASONS = Object.freeze(["reconnect_required", "disabled", "deleted"]);
/** `data.deletedBy.kind` on `post.deleted`. */
export const ACTOR_KINDS = Object.freeze(["dashboard", "api_token", "oauth_client", "system"]);
// tests/vectors/catalogue.json is the source of these lists; npm/test/vectors.test.mjs
// checks them (and the TypeScript unions in types/index.d.ts) against it.
const FAILURE_CODE_SET = new Set(FAILURE_CODES);
const DISCONNECT_REASON_SET = new Set(DISCONNECT_REASONS);
const ACTOR_KIND_SET = new Set(ACTOR_KINDS);
const TYPES = new Set(EVENT_TYPES);

/** An event that does not follow the rules; the caller turns it into `invalid_payload`. */
export class EventShapeError extends Error {}

const fail = (what) => {
  throw new EventShapeError(what);
};
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const show = (v) => JSON.stringify(typeof v === "string" && v.length > 40 ? v.slice(0, 40) + "…" : v);

function str(obj, key, where) {
  const v = obj[key];
  if (typeof v !== "string") fail(`${where}.${key} must be a string`);
  return v;
}
function optStr(obj, key, where) {
  const v = obj[key];
  if (v !== undefined && v !== null && typeof v !== "string") fail(`${where}.${key} must be a string or null`);
  return v ?? null;
}
function obj(parent, key, where) {
  const v = parent[key];
  if (!isObject(v)) fail(`${where}.${key} must be an object`);
  return v;
}
function oneOf(set, obj, key, where, what) {
  const v = str(obj, key, where);
  if (!set.has(v)) fail(`unknown ${what} ${show(v)}; expected one of: ${[...set].join(", ")}`);
  return v;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[\x00-\x7f](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const MIN_MS = -62_167_219_200_000; // 0000-01-01T00:00:00Z
const MAX_MS = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

/** Whether `s` is an RFC 3339 timestamp within the years 0000..=9999 (as postwire-core's `Timestamp`). */
export function isRfc3339(s) {
  if (typeof s !== "string") return false;
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const offHour = m[10] === undefined ? 0 : Number(m[10]);
  const offMinute = m[11] === undefined ? 0 : Number(m[11]);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || offHour > 23 || offMinute > 59) return false;
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeap(year) ? 1 : 0);
  if (day > daysInMonth) return false;
  const sign = m[9] === "-" ? -1 : 1;
  const offsetMs = sign * (offHour * 60 + offMinute) * 60_000;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, Math.min(second, 59), 0);
  const utcMs = date.getTime() - offsetMs;
  if (second === 60) {
    // RFC 3339 allows a leap second, only as the last second of a UTC month.
    const utc = new Date(utcMs);
    const lastDay = new Date(Date.UTC(utc.getUTCFullYear(), utc.getUTCMonth() + 1, 0)).getUTCDate();
    if (!(utc.getUTCHours() === 23 && utc.getUTCMinutes() === 59 && utc.getUTCDate() === lastDay)) return false;
  } else if (second > 59) {
    return false;
  }
  return utcMs >= MIN_MS && utcMs <= MAX_MS;
}
function isLeap(y) {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}
function timestamp(o, key, where) {
  const v = str(o, key, where);
  if (!isRfc3339(v)) fail(`${where}.${key}: ${show(v)} is not an RFC 3339 timestamp`);
}

/** A `webhook-id`: 1 to 256 visible ASCII characters. */
export function isWebhookId(id) {
  return typeof id === "string" && id.length >= 1 && id.length <= 256 && /^[\x21-\x7e]+$/.test(id);
}

function integration(parent, key, where) {
  const i = obj(parent, key, where);
  const at = `${where}.${key}`;
  str(i, "id", at);
  str(i, "name", at);
  str(i, "providerIdentifier", at);
  optStr(i, "picture", at);
}

function post(data, type) {
  const p = obj(data, "post", "data");
  for (const k of ["id", "externalId", "group", "state"]) str(p, k, "data.post");
  timestamp(p, "publishDate", "data.post");
  integration(p, "integration", "data.post");
  const releaseURL = optStr(p, "releaseURL", "data.post");
  const releaseId = optStr(p, "releaseId", "data.post");
  optStr(p, "error", "data.post");
  if (type === "post.published" && (releaseURL === null || releaseId === null)) {
    fail("`post.published` must carry `releaseURL` and `releaseId`");
  }
  // The spec forbids the post content in events; postwire-core's type has no such field.
  delete p.content;
}

const DATA_CHECKS = {
  "post.scheduled": (d, t) => post(d, t),
  "post.unscheduled": (d, t) => post(d, t),
  "post.publishing": (d, t) => post(d, t),
  "post.published": (d, t) => post(d, t),
  "post.failed": (d, t) => {
    post(d, t);
    const e = obj(d, "error", "data");
    oneOf(FAILURE_CODE_SET, e, "code", "data.error", "failure code");
    str(e, "message", "data.error");
    if (typeof e.retryable !== "boolean") fail("data.error.retryable must be a boolean");
    if (e.code === "unknown" && e.retryable) {
      fail("a failure with code `unknown` is never retryable: the provider may already have accepted the post");
    }
  },
  "post.deleted": (d, t) => {
    post(d, t);
    const a = obj(d, "deletedBy", "data");
    oneOf(ACTOR_KIND_SET, a, "kind", "data.deletedBy", "actor kind");
    optStr(a, "id", "data.deletedBy");
  },
  "integration.disconnected": (d) => {
    integration(d, "integration", "data");
    oneOf(DISCONNECT_REASON_SET, d, "reason", "data", "disconnect reason");
  },
  "integration.reconnected": (d) => integration(d, "integration", "data"),
  "webhook.test": (d) => str(d, "message", "data"),
};

/**
 * Checks that `value` (a parsed body) is an event envelope of a known type whose `data`
 * has the shape of that type. Returns it (minus any `data.post.content`); throws
 * `EventShapeError` saying what is wrong.
 */
export function checkEvent(value) {
  if (!isObject(value)) fail("the body is not a JSON object");
  if (!isWebhookId(value.id)) fail("envelope `id` must be 1 to 256 visible ASCII characters");
  const type = value.type;
  if (typeof type !== "string" || !TYPES.has(type)) {
    fail(`unknown event type ${show(type)}; expected one of: ${EVENT_TYPES.join(", ")}`);
  }
  timestamp(value, "createdAt", "envelope");
  str(value, "workspaceId", "envelope");
  const data = obj(value, "data", "envelope");
  DATA_CHECKS[type](data, type);
  return value;
}

/** The connected account an event concerns (as postwire-core's `EventData::account_id`). */
export function accountIdOf(event) {
  const d = event.data;
  if (event.type === "webhook.test") return null;
  if (event.type.startsWith("integration.")) return d.integration.id;
  return d.post.integration.id;
}

/**
 * The spec's matching rule: a subscription receives an event when its `events` list is
 * empty or holds the event's type, and its `integrationIds` are empty or hold the
 * account concerned (an event about no account passes any account restriction).
 */
export function matchesSubscription(subscription, eventType, accountId) {
  if (!isObject(subscription)) fail("subscription must be an object");
  const events = subscription.events ?? [];
  const ids = subscription.integrationIds ?? [];
  if (!Array.isArray(events) || !Array.isArray(ids)) fail("`events` and `integrationIds` must be arrays");
  for (const t of [...events, eventType]) {
    if (typeof t !== "string" || !TYPES.has(t)) {
      fail(`unknown event type ${show(t)}; expected one of: ${EVENT_TYPES.join(", ")}`);
    }
  }
  const typeOk = events.length === 0 || events.includes(eventType);
  const accountOk = accountId === null || accountId === undefined || ids.length === 0 || ids.includes(accountId);
  return typeOk && accountOk;
}
