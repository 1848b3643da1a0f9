// A stand-in origin for `wrangler dev`: prints every request the Worker forwards and
// answers 200. Node 18 or newer, no dependencies:
//   node examples/local-origin.mjs [port]        (default 3000, as in .dev.vars.example)
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 3000);
createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    console.log(`${request.method} ${request.url} webhook-id=${request.headers["webhook-id"]} ${Buffer.concat(chunks)}`);
    response.writeHead(200).end();
  });
}).listen(port, "127.0.0.1", () => console.log(`origin listening on http://127.0.0.1:${port}/webhooks`));
