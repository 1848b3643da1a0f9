// Serves app.js's Hono app on a free loopback port in Bun or Deno and prints
// `{"url": ...}` once listening; adapters.test.mjs kills the process when done.
import { makeApp } from "./app.js";

const app = makeApp();
if (typeof Bun !== "undefined") {
  const server = Bun.serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
} else {
  Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: ({ port }) => console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` })) }, app.fetch);
}
