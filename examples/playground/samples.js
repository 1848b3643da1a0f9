// Realistic sample events, one per event type of the postwire webhooks API, shaped
// exactly as the sender sends them (compact JSON, `createdAt` in UTC with milliseconds,
// the post summary without content). The playground loads them, and the example
// receivers' tests send them, so every example works on the same data.
//
// Plain ES module with no DOM or Node APIs: it runs in browsers and in Node alike.

/** The nine event types, in the order of the spec. */
export const SAMPLE_TYPES = [
  "post.scheduled",
  "post.unscheduled",
  "post.publishing",
  "post.published",
  "post.failed",
  "post.deleted",
  "integration.disconnected",
  "integration.reconnected",
  "webhook.test",
];

const ACCOUNTS = {
  linkedin: { id: "int_7Qm2LkR9", providerIdentifier: "linkedin", name: "Northwind Coffee on LinkedIn" },
  x: { id: "int_3Hc8VpTz", providerIdentifier: "x", name: "@northwindcoffee" },
};

/** A fresh `msg_…` id like the sender's (22 URL-safe random characters). */
export function newEventId() {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return "msg_" + btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function post(now, overrides = {}) {
  return {
    id: "post_01JD8Z6K4W",
    externalId: "cms-article-2231",
    group: "grp_launch_week",
    state: "QUEUE",
    publishDate: new Date(now + 2 * 3600_000).toISOString(),
    integration: { ...ACCOUNTS.linkedin },
    releaseURL: null,
    releaseId: null,
    error: null,
    ...overrides,
  };
}

/**
 * The sample event of `type`, as an object.
 * @param {string} type one of SAMPLE_TYPES
 * @param {{ id?: string, now?: number, workspaceId?: string }} [options]
 */
export function sampleEvent(type, { id = newEventId(), now = Date.now(), workspaceId = "ws_northwind" } = {}) {
  let data;
  switch (type) {
    case "post.scheduled":
      data = { post: post(now) };
      break;
    case "post.unscheduled":
      data = { post: post(now, { state: "QUEUE" }) };
      break;
    case "post.publishing":
      data = { post: post(now, { state: "PUBLISHING", publishDate: new Date(now).toISOString() }) };
      break;
    case "post.published":
      data = {
        post: post(now, {
          state: "PUBLISHED",
          publishDate: new Date(now - 60_000).toISOString(),
          releaseURL: "https://www.linkedin.com/feed/update/urn:li:share:7265119532011",
          releaseId: "urn:li:share:7265119532011",
        }),
      };
      break;
    case "post.failed":
      data = {
        post: post(now, {
          state: "ERROR",
          integration: { ...ACCOUNTS.x },
          error: "The provider rejected the image: larger than 5 MB",
        }),
        error: { code: "media_invalid", message: "The provider rejected the image: larger than 5 MB", retryable: false },
      };
      break;
    case "post.deleted":
      data = { post: post(now), deletedBy: { kind: "dashboard", id: "usr_5TnqW2" } };
      break;
    case "integration.disconnected":
      data = { integration: { ...ACCOUNTS.x, picture: null }, reason: "reconnect_required" };
      break;
    case "integration.reconnected":
      data = { integration: { ...ACCOUNTS.x, picture: null } };
      break;
    case "webhook.test":
      data = { message: "Hello from postwire: your endpoint is set up." };
      break;
    default:
      throw new Error(`unknown event type: ${type}`);
  }
  return { id, type, createdAt: new Date(now).toISOString(), workspaceId, data };
}

/** The sample event of `type` as the raw body the sender would send (compact JSON). */
export function sampleBody(type, options) {
  return JSON.stringify(sampleEvent(type, options));
}
