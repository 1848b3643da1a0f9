// The Fetch handler served natively by Bun and by Deno (test-support/fetch-native-server.mjs),
// each run by the binaries the root package.json installs from the npm registry, against
// the same receiver contract as every other example, over real loopback HTTP.
import { describe } from "node:test";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { receiverContract } from "../test-support/receiver-contract.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const script = fileURLToPath(new URL("../test-support/fetch-native-server.mjs", import.meta.url));
const BUN = join(root, "node_modules/@oven/bun-linux-x64/bin/bun");
const DENO = join(root, "node_modules/@deno/linux-x64-glibc/deno");

/** Deno resolves the bare `postwire` import through an import map to the package's web build. */
function denoArgs() {
  const dir = mkdtempSync(join(tmpdir(), "postwire-deno-"));
  const map = join(dir, "import_map.json");
  writeFileSync(map, JSON.stringify({ imports: { postwire: "file://" + join(root, "npm/dist/web/index.js") } }));
  return ["run", "--no-remote", "--no-npm", "--no-config", `--import-map=${map}`, "--allow-net=127.0.0.1", "--allow-env", script];
}

const RUNTIMES = [
  ["bun", BUN, () => [script]],
  ["deno", DENO, denoArgs],
];

for (const [name, binary, args] of RUNTIMES) {
  describe(`fetch handler served by ${name}`, { skip: !existsSync(binary) && `${name} binary not installed (optional dependency)` }, () => {
    receiverContract(`fetch (${name})`, ({ secret, onEvent, log }) => start(name, binary, args(), { secret, onEvent, log }));
  });
}

/** Starts the business-logic endpoint, then the runtime's server; resolves to `{ url, close }`. */
async function start(runtime, binary, args, { secret, onEvent, log }) {
  const logic = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    try {
      await onEvent(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(204).end();
    } catch {
      res.writeHead(500).end();
    }
  });
  await new Promise((resolve) => logic.listen(0, "127.0.0.1", resolve));
  const child = spawn(binary, args, {
    cwd: root,
    env: {
      ...process.env,
      POSTWIRE_WEBHOOK_SECRET: secret,
      HOOK_URL: `http://127.0.0.1:${logic.address().port}/event`,
      NO_COLOR: "1",
      DENO_NO_UPDATE_CHECK: "1",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${binary} did not start listening in 30 s`)), 30_000);
    child.once("exit", (code) => reject(new Error(`${binary} exited with ${code} before listening`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        return log(line);
      }
      if (message.log !== undefined) log(message.log);
      if (message.port !== undefined) {
        clearTimeout(timer);
        // The server says which runtime it is, so a fallback to another one cannot pass.
        if (message.runtime === runtime) resolve(message.port);
        else reject(new Error(`expected ${runtime}, the server says ${message.runtime}`));
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: async () => {
      child.kill();
      await new Promise((resolve) => logic.close(resolve));
    },
  };
}
