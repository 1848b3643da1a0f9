// A Cloudflare Worker that uses the package as a user would: `import ... from "postwire"`,
// bundled with the conditions wrangler uses (workerd, worker, browser), run in workerd by
// Miniflare. /hook verifies a delivery; /checks runs the portable checks inside workerd.
import * as postwire from "postwire";
import { Webhook, ReplayGuard, WebhookVerificationError } from "postwire";
import { runChecks } from "../portable/checks.js";

const guard = new ReplayGuard();

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/checks") {
      const passed = await runChecks(postwire);
      return Response.json({ passed });
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
