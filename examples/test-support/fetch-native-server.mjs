// The Fetch example's handler served natively by Bun (`Bun.serve`) or Deno (`Deno.serve`),
// for fetch-receiver/runtimes.test.js: the receiver contract runs against it over real
// loopback HTTP.
// The contract's business logic stays in the Node test process: each verified event is
// POSTed to HOOK_URL, and a non-2xx answer there makes `onEvent` throw, as a failing
// database would. Log lines and the listening port are written to stdout as JSON lines.
import { createWebhookHandler } from "../fetch-receiver/handler.js";

const env = (name) => (globalThis.Deno ? globalThis.Deno.env.get(name) : globalThis.process.env[name]);
const say = (message) => console.log(JSON.stringify(message));

const handler = createWebhookHandler({
  secret: env("POSTWIRE_WEBHOOK_SECRET") ?? "",
  onEvent: async (event) => {
    const res = await fetch(env("HOOK_URL") ?? "", { method: "POST", body: JSON.stringify(event) });
    if (!res.ok) throw new Error(`the business logic answered ${res.status}`);
  },
  log: (line) => say({ log: String(line) }),
});

if (globalThis.Bun) {
  const server = globalThis.Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: handler });
  say({ runtime: "bun", port: server.port });
} else if (globalThis.Deno) {
  globalThis.Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: ({ port }) => say({ runtime: "deno", port }) }, handler);
} else {
  throw new Error("run this with Bun or Deno");
}
