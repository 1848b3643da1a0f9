// A real origin for the tests: an HTTP server on loopback that records every request it
// receives (method, path, headers, raw body bytes) and answers as told: a status, after a
// delay, or by dropping the connection. Tests read `received` to assert what the Worker
// forwarded, and how many times.
import http from "node:http";

export async function startOrigin() {
  const received = [];
  // Behaviour for the next requests; each entry is used once, then `fallback` applies.
  const script = [];
  let fallback = { status: 200, delayMs: 0 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const record = {
        method: req.method,
        path: req.url,
        headers: { ...req.headers },
        body: Buffer.concat(chunks),
        at: Date.now(),
      };
      received.push(record);
      const plan = script.length ? script.shift() : fallback;
      const answer = () => {
        if (plan.destroy) {
          req.socket.destroy();
          return;
        }
        res.writeHead(plan.status, { "content-type": "text/plain" });
        res.end(`origin says ${plan.status}`);
      };
      if (plan.delayMs) setTimeout(answer, plan.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    /** Requests received for one webhook-id. */
    receivedFor: (id) => received.filter((r) => r.headers["webhook-id"] === id),
    /** Answer the next request(s) with these plans, in order ({status, delayMs, destroy}). */
    next: (...plans) => script.push(...plans),
    /** Answer every request not covered by `next` like this. */
    always: (plan) => {
      fallback = { status: 200, delayMs: 0, ...plan };
    },
    reset: () => {
      received.length = 0;
      script.length = 0;
      fallback = { status: 200, delayMs: 0 };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening (bound, then closed). */
export async function closedPortUrl() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/webhooks`;
}
