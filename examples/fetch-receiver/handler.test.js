// The Fetch handler over real loopback HTTP (served by @hono/node-server, as server.js
// does): the shared receiver contract, plus the handler called directly with a Request,
// the way Next.js, Bun, Deno and Workers call it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { serve } from "@hono/node-server";
import { receiverContract } from "../test-support/receiver-contract.mjs";
import { delivery, newSecret } from "../test-support/deliveries.mjs";
import { createWebhookHandler } from "./handler.js";

receiverContract("fetch", async ({ secret, onEvent, log }) => {
  const handler = createWebhookHandler({ secret, onEvent, log });
  const server = await new Promise((resolve) => {
    const s = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
});

test("fetch: called directly with a Request, as route handlers are", async () => {
  const secret = newSecret();
  const got = [];
  const handler = createWebhookHandler({ secret, onEvent: (e) => void got.push(e), log: () => {} });
  const d = delivery(secret, { type: "integration.disconnected" });
  const res = await handler(new Request("https://example.com/api/webhooks", { method: "POST", headers: d.headers, body: d.body }));
  assert.equal(res.status, 200);
  assert.equal(got.length, 1);
  assert.equal(got[0].type, "integration.disconnected");
  assert.equal(got[0].data.reason, "reconnect_required");
  const tampered = await handler(new Request("https://example.com/api/webhooks", { method: "POST", headers: d.headers, body: d.body.replace("reconnect_required", "deleted") }));
  assert.equal(tampered.status, 400);
  assert.equal((await tampered.json()).code, "invalid_signature");
});
