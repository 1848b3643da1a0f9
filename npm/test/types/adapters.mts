// The adapters' types against the real frameworks' types: the handlers are typed by their
// key, unknown keys fail, and each adapter's result fits its framework's route API.
import express from "express";
import { Hono } from "hono";
import { createHandler, memoryStore, type DeliveryStore } from "postwire/express";
import { createHandler as honoHandler } from "postwire/hono";
import { createHandler as nextHandler } from "postwire/next";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const app = express();
app.post(
  "/webhooks",
  createHandler(
    {
      "post.published": (event) => event.data.post.releaseURL.toUpperCase(), // narrowed: a string
      "integration.disconnected": async (event) => {
        const reason: "reconnect_required" | "disabled" | "deleted" = event.data.reason;
        return reason;
      },
    },
    { secret, store: memoryStore(), limit: 1 << 20 },
  ),
);
createHandler(
  {
    // @ts-expect-error: webhook.test carries no post
    "webhook.test": (event) => event.data.post,
  },
  { secret },
);
// @ts-expect-error: not an event type
createHandler({ "post.publishd": () => {} }, { secret });
// @ts-expect-error: the secret is required
createHandler({}, {});

const redis: DeliveryStore = { claim: async (id) => id.length > 0, release: async () => {} };
const hono = new Hono();
hono.post("/webhooks", honoHandler({ "post.failed": (e) => e.data.error.code }, { secret, store: redis }));

export const POST: (request: Request) => Promise<Response> = nextHandler({ "webhook.test": (e) => e.data.message }, { secret });

// A published key set instead of a secret (postwire/v1a), not both.
import { RemoteKeySet } from "postwire/v1a";
const keySet = new RemoteKeySet("https://api.example.com/v1/key-sets/ws.jwks", { minRefreshIntervalMs: 60_000, timeoutMs: 5_000 });
export const KEYED: (request: Request) => Promise<Response> = nextHandler({ "webhook.test": (e) => e.data.message }, { keySet });
app.post("/keyed", createHandler({}, { keySet, limit: 1024 }));
// @ts-expect-error: a secret or a key set, not both
nextHandler({}, { keySet, secret });
const refreshed: Promise<boolean> = keySet.refresh();
const keyTexts: string[] = keySet.publicKeys;
void refreshed;
void keyTexts;
