// Throwaway Redis and PostgreSQL servers for the store tests, from Debian's packages
// (scripts/setup.sh installs them): each in a temp directory, on loopback or a socket in
// it, stopped and removed at the end. Data survive stop() and start() (Redis with its
// append-only file), so a test can restart the server and see what was kept.
import { spawn, execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** A free TCP port on loopback (asked of the kernel, then released). */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await sleep(50);
  }
}

const canConnect = (port) =>
  new Promise((resolve) => {
    import("node:net").then(({ connect }) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
  });

/**
 * A Redis server (`redis-server`) on a free loopback port: `{ url, port, stop(), start(), close() }`.
 * `appendfsync`: "always" (the tests: nothing acknowledged is lost across a restart) or
 * Redis's default "everysec" (the benchmark: no fsync per write).
 */
export async function startRedis({ appendfsync = "always" } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "postwire-redis-"));
  const port = await freePort();
  let child = null;
  const server = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn("redis-server", [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
        "--appendonly", "yes", "--appendfsync", appendfsync, "--daemonize", "no", "--loglevel", "warning",
      ], { stdio: ["ignore", "ignore", "inherit"] });
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.exited = exited;
      await until("redis-server listening", () => canConnect(port));
    },
    /** SIGTERM: Redis closes its clients and exits; the append-only file keeps the keys. */
    async stop() {
      if (child === null) return;
      const c = child;
      child = null;
      c.kill("SIGTERM");
      await c.exited;
    },
    async close() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** The directory of PostgreSQL's server binaries (Debian: /usr/lib/postgresql/<major>/bin). */
function pgBin() {
  const root = "/usr/lib/postgresql";
  const major = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a))[0] : undefined;
  if (major === undefined) throw new Error("PostgreSQL's server is not installed: run scripts/setup.sh");
  return join(root, major, "bin");
}

/**
 * A PostgreSQL cluster in a temp directory, listening on loopback at a free port:
 * `{ config, stop(), start(), close() }` (`config` for `new pg.Pool(config)`). As root the
 * cluster belongs to the `postgres` user (initdb refuses root).
 */
export async function startPostgres() {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), "postwire-pg-"));
  chmodSync(dir, 0o755);
  const root = process.getuid?.() === 0;
  const as = (cmd, args) => (root ? ["runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]] : [join(bin, cmd), args]);
  if (root) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const data = join(dir, "data");
  execFileSync(...as("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]), { stdio: "ignore" });
  const ctl = (args) => execFileSync(...as("pg_ctl", ["-D", data, ...args]), { stdio: "ignore" });
  const server = {
    port,
    config: { host: "127.0.0.1", port, user: "postgres", database: "postgres" },
    async start() {
      ctl(["-o", `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off`, "-l", join(dir, "log"), "-w", "start"]);
      await until("postgres listening", () => canConnect(port));
    },
    async stop() {
      ctl(["-m", "fast", "-w", "stop"]);
    },
    async close() {
      try {
        await server.stop();
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}
