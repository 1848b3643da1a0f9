// @ts-check
// Runs the Fetch handler under Node with @hono/node-server (Bun, Deno, Next.js and
// Workers serve the same handler natively; see handler.js):
//   POSTWIRE_WEBHOOK_SECRET=whsec_... PORT=3000 node server.js
import { serve } from "@hono/node-server";
import { createWebhookHandler } from "./handler.js";
import { describe } from "../shared/describe-event.js";

const secret = process.env.POSTWIRE_WEBHOOK_SECRET;
if (!secret) {
  console.error("set POSTWIRE_WEBHOOK_SECRET to the subscription's whsec_… secret");
  process.exit(1);
}
const handler = createWebhookHandler({
  secret,
  onEvent: (event) => {
    // Your handling goes here; `event` is typed: switch on event.type.
    console.log(describe(event));
  },
});
const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, port, hostname: "127.0.0.1" }, (info) => console.log(`listening on http://127.0.0.1:${info.port}/`));
