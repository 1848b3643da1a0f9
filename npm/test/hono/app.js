// One Hono app with postwire/hono, run unchanged in Node (@hono/node-server), Bun
// (Bun.serve), Deno (Deno.serve) and workerd (Miniflare) by adapters.test.mjs, which sends
// it the same deliveries over HTTP in each. Web-standard APIs only. Besides the webhook
// route it answers what the test needs to see inside the runtime: the events the handlers
// saw (`GET /seen`), a switch that makes the next handler call throw (`POST /fail-next`),
// and which postwire build the runtime's export conditions chose (`GET /info`).
import { Hono } from "hono";
import { Webhook } from "postwire";
import { createHandler } from "postwire/hono";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

export function makeApp() {
  const seen = [];
  let failNext = false;
  const handlers = {
    "webhook.test": async (e) => {
      if (failNext) {
        failNext = false;
        throw new Error("database down");
      }
      seen.push([e.type, e.id, e.data.message.slice(0, 16)]);
    },
    "integration.disconnected": (e) => {
      seen.push([e.type, e.id, e.data.reason]);
    },
  };
  const app = new Hono();
  app.use("/webhooks", async (c, next) => {
    await c.req.json().catch(() => null); // a logging middleware that read the body first
    await next();
  });
  app.post("/webhooks", createHandler(handlers, { secret: SECRET, onError: () => {} }));
  app.get("/seen", (c) => c.json(seen));
  app.post("/fail-next", (c) => {
    failNext = true;
    return c.body(null, 204);
  });
  app.get("/info", (c) => {
    const internals = Webhook[Symbol.for("postwire.internals")];
    const runtime =
      typeof Deno !== "undefined" ? "deno" : typeof Bun !== "undefined" ? "bun"
      : globalThis.navigator?.userAgent === "Cloudflare-Workers" ? "workerd" : "node";
    return c.json({ runtime, nativeHmac: internals.nativeHmac, webCryptoHmac: internals.webCryptoHmac });
  });
  return app;
}
