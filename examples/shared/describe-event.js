// @ts-check
// Your business logic: what to do with each verified, first-time event. Events are typed
// (`import("postwire").WebhookEvent`): switching on `event.type` narrows `event.data`,
// so `event.data.error` only exists on `post.failed`, and so on. `tsc` checks this file
// in CI (examples/tsconfig.json).
//
// Shared by the Express and the Fetch examples (examples/shared/).

/** @typedef {import("postwire").WebhookEvent} WebhookEvent */

/**
 * A one-line description of an event, e.g. for a log or a notification.
 * @param {WebhookEvent} event
 * @returns {string}
 */
export function describe(event) {
  switch (event.type) {
    case "post.scheduled":
    case "post.unscheduled":
    case "post.publishing":
      return `${event.type}: post ${event.data.post.id} on ${event.data.post.integration.name} (${event.data.post.state})`;
    case "post.published":
      // releaseURL is a string here (PublishedPostSummary), never null.
      return `post ${event.data.post.id} is live at ${event.data.post.releaseURL}`;
    case "post.failed": {
      const { code, retryable } = event.data.error;
      return `post ${event.data.post.id} failed: ${code}${retryable ? " (will retry)" : ""}`;
    }
    case "post.deleted":
      return `post ${event.data.post.id} deleted by ${event.data.deletedBy.kind}`;
    case "integration.disconnected":
      return `account ${event.data.integration.name} disconnected: ${event.data.reason}`;
    case "integration.reconnected":
      return `account ${event.data.integration.name} reconnected`;
    case "webhook.test":
      return `test event: ${event.data.message}`;
    default: {
      // Compile-time check that every type is handled: adding a type to the union
      // without a case above makes this assignment an error.
      /** @type {never} */
      const unhandled = event;
      return `unknown event ${JSON.stringify(unhandled)}`;
    }
  }
}
