// The Express receiver over real loopback HTTP: the shared receiver contract
// (signed, duplicate, tampered, stale, failing handler, oversized, logs without secrets).
import { receiverContract } from "../test-support/receiver-contract.mjs";
import { createApp } from "./app.js";

receiverContract("express", async ({ secret, onEvent, log }) => {
  const app = createApp({ secret, onEvent, log });
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks/postwire`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
});
