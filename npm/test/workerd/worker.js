// A Cloudflare Worker that uses the package as a user would: `import ... from "postwire"`,
// bundled with the conditions wrangler uses (workerd, worker, browser), run in workerd by
// Miniflare. /hook verifies a delivery; /hook-v1a verifies a v1a one with postwire/v1a and a
// public key; /checks runs the portable checks inside workerd.
import * as postwire from "postwire";
import { Webhook, ReplayGuard, WebhookVerificationError } from "postwire";
import { Webhook as V1aWebhook } from "postwire/v1a";
import { runChecks } from "../portable/checks.js";

const guard = new ReplayGuard();

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/checks") {
      const passed = await runChecks(postwire);
      return Response.json({ passed });
    }
    if (url.pathname === "/hook-v1a") {
      // postwire/v1a: a public key only, synchronous verify.
      try {
        const event = new V1aWebhook(env.WEBHOOK_PUBLIC_KEY).verify(await request.text(), request.headers);
        return Response.json({ id: event.id });
      } catch (e) {
        return Response.json({ code: e.code, message: e.message }, { status: 400 });
      }
    }
    if (url.pathname === "/hook") {
      const webhook = new Webhook(env.WEBHOOK_SECRET);
      try {
        const event = await webhook.verifyRequest(request);
        const seen = guard.checkAndRecord(event.id);
        return Response.json({ type: event.type, id: event.id, seen });
      } catch (e) {
        if (e instanceof WebhookVerificationError) {
          return Response.json({ code: e.code, message: e.message, isError: e instanceof Error }, { status: 400 });
        }
        return Response.json({ unexpected: String(e) }, { status: 500 });
      }
    }
    return new Response("not found", { status: 404 });
  },
};
