// @ts-check
// Runs the Express receiver: POSTWIRE_WEBHOOK_SECRET=whsec_... PORT=3000 node server.js
// Point a subscription at http(s)://<host>:<port>/webhooks/postwire.
import { createApp } from "./app.js";

const secret = process.env.POSTWIRE_WEBHOOK_SECRET;
if (!secret) {
  console.error("set POSTWIRE_WEBHOOK_SECRET to the subscription's whsec_… secret");
  process.exit(1);
}
const port = Number(process.env.PORT ?? 3000);
const app = createApp({
  secret,
  onEvent: async (event) => {
    // Your handling goes here: update your records, notify someone, enqueue a job...
  },
});
app.listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}/webhooks/postwire`));
