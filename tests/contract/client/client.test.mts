// A client generated from the public OpenAPI document (openapi-typescript for the types,
// openapi-fetch for the calls), driving a subscription's whole life against a real
// `postwire serve`: create, list, read, pause, resume, delete, then the post look-up
// with its either-or query. tsc type-checks this file against the generated types
// first (test.sh), so a document that stops describing these calls fails the build,
// and the `@ts-expect-error` lines fail it if the types stop refusing wrong calls.
//
// Environment: POSTWIRE_BASE_URL (e.g. http://127.0.0.1:8080), POSTWIRE_TOKEN (a
// webhooks:write token for POSTWIRE_WORKSPACE).
import assert from "node:assert/strict";
import { test } from "node:test";

import createClient from "openapi-fetch";

import type { paths } from "./generated/api.js";

const baseUrl = process.env.POSTWIRE_BASE_URL ?? "";
const token = process.env.POSTWIRE_TOKEN ?? "";
const workspaceId = process.env.POSTWIRE_WORKSPACE ?? "";

const client = createClient<paths>({
  baseUrl,
  headers: { Authorization: `Bearer ${token}` },
  // The look-up's parameters are one exploded `form` object in the document.
  querySerializer: { object: { style: "form", explode: true } },
});

test("a subscription's whole life through the generated client", async () => {
  assert.ok(baseUrl && token && workspaceId, "POSTWIRE_BASE_URL, POSTWIRE_TOKEN and POSTWIRE_WORKSPACE are set");
  const workspace = { workspaceId };

  const created = await client.POST("/public/v1/workspaces/{workspaceId}/webhooks", {
    params: { path: workspace },
    body: { name: "generated client", url: "https://hooks.postwire.invalid/in", events: ["post.published"] },
  });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  assert.ok(created.data);
  const sub = created.data;
  assert.match(sub.secret, /^whsec_/);
  assert.deepEqual(sub.events, ["post.published"]);
  assert.equal(sub.disabled, false);
  const one = { workspaceId, webhookId: sub.id };

  const list = await client.GET("/public/v1/workspaces/{workspaceId}/webhooks", { params: { path: workspace } });
  assert.equal(list.response.status, 200);
  assert.deepEqual(
    list.data?.data.map((s) => s.id),
    [sub.id],
  );
  assert.equal("secret" in (list.data?.data[0] ?? {}), false, "the list never carries the secret");

  const read = await client.GET("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}", { params: { path: one } });
  assert.equal(read.response.status, 200);
  assert.equal(read.data?.name, "generated client");
  assert.equal(read.data?.url, "https://hooks.postwire.invalid/in");

  const paused = await client.PUT("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}/enabled", {
    params: { path: one },
    body: { enabled: false },
  });
  assert.equal(paused.response.status, 200);
  assert.equal(paused.data?.disabled, true);
  assert.equal(paused.data?.disabledReason, "paused by request");

  const resumed = await client.PUT("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}/enabled", {
    params: { path: one },
    body: { enabled: true },
  });
  assert.equal(resumed.response.status, 200);
  assert.equal(resumed.data?.disabled, false);
  assert.equal(resumed.data?.disabledReason, null);

  const deleted = await client.DELETE("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}", {
    params: { path: one },
  });
  assert.equal(deleted.response.status, 204);

  const gone = await client.GET("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}", { params: { path: one } });
  assert.equal(gone.response.status, 404);
  assert.equal(gone.error?.code, "not_found");

  const lookup = await client.GET("/public/v1/workspaces/{workspaceId}/posts/lookup", {
    params: { path: workspace, query: { lookup: { postId: "post_1", limit: 5 } } },
  });
  assert.equal(lookup.response.status, 200, JSON.stringify(lookup.error));
  assert.deepEqual(lookup.data?.postIds, ["post_1"]);
  assert.ok(lookup.response.url.endsWith("/posts/lookup?postId=post_1&limit=5"), lookup.response.url);

  const invalid = await client.GET("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}", {
    params: { path: { workspaceId, webhookId: "wh_\u0007" } },
  });
  assert.equal(invalid.response.status, 400);
  assert.equal(invalid.error?.code, "invalid_request");
});

// Calls the document does not allow do not type-check (tsc fails if any of these stops
// being an error).
export async function refusedByTheTypes(): Promise<void> {
  await client.POST("/public/v1/workspaces/{workspaceId}/webhooks", {
    params: { path: { workspaceId } },
    // @ts-expect-error `nam` is not a field; `name` is required
    body: { nam: "x", url: "https://hooks.postwire.invalid/in" },
  });
  await client.GET("/public/v1/workspaces/{workspaceId}/posts/lookup", {
    // @ts-expect-error `postId` or `externalId` is required. (Both at once type-checks:
    // TypeScript's excess property check does not apply across a union's members; the
    // server refuses it, and the schema says so with oneOf of closed objects.)
    params: { path: { workspaceId }, query: { lookup: { since: "2026-11-22T10:00:00Z" } } },
  });
  await client.PUT("/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}/enabled", {
    params: { path: { workspaceId, webhookId: "wh_1" } },
    // @ts-expect-error `enabled` is a boolean
    body: { enabled: "no" },
  });
}
