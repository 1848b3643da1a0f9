// `postwire edge` (the CLI, POSTWIRE_CLI) against the built Worker in inbox mode, in workerd
// through Miniflare on loopback: what an on-call engineer runs during an origin outage.
// status, list (one page, --all, --json), show, pause and resume, replay of one delivery and
// of every dead one, erase by id, post and account; a wrong token and a pending delivery's
// replay fail with the Worker's code.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker, delivery, newSecret, newId, sleep } from "../support/worker.mjs";
import { postEvent } from "../support/events.mjs";

const FILE = "wrangler.inbox.toml";
const TOKEN = "edge-cli-admin-token-0123456789abcdef";
const secret = newSecret();
const CLI = process.env.POSTWIRE_CLI;

/** Runs `postwire edge <args>` with the token in its variable; {code, stdout, stderr}. */
function edge(worker, args, { token = TOKEN } = {}) {
  return new Promise((resolve, reject) => {
    execFile(
      CLI,
      ["edge", "--worker", worker.url().toString(), ...args],
      { env: { ...process.env, POSTWIRE_EDGE_TOKEN: token }, timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") return reject(error);
        resolve({ code: error ? error.code : 0, stdout, stderr });
      },
    );
  });
}

async function edgeJson(worker, args) {
  const r = await edge(worker, ["--json", ...args]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** An origin answering 503 to the ids in `refused`, 200 to the rest; records accepted ids. */
async function startOrigin() {
  const refused = new Set();
  const accepted = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const id = req.headers["webhook-id"];
      const status = refused.has(id) ? 503 : 200;
      if (status === 200) accepted.push(id);
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(`origin says ${status}`);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/webhooks`,
    refused,
    accepted,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

/** A signed post event ordered by `post:<postId>`. */
function postDelivery(postId) {
  const id = newId("edge");
  return delivery({ secrets: [secret], id, body: postEvent(id, postId) });
}

describe("postwire edge drives the inbox's admin API", () => {
  let origin, worker, dir;
  before(async () => {
    assert.ok(CLI, "POSTWIRE_CLI (the postwire binary) is set by worker/test.sh");
    origin = await startOrigin();
    worker = await startWorker(
      { WEBHOOK_SECRETS: secret, ORIGIN_URL: origin.url, ADMIN_TOKEN: TOKEN, ORIGIN_RETRY_HORIZON_SECS: "2" },
      { file: FILE },
    );
    dir = mkdtempSync(path.join(tmpdir(), "postwire-edge-"));
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("an outage: status and list show the dead delivery, show gives its answers, replay --dead-since delivers it", async () => {
    const doomed = postDelivery("p_dead");
    const fine = [postDelivery("p_a"), postDelivery("p_b"), postDelivery("p_c")];
    origin.refused.add(doomed.id);
    for (const d of [doomed, ...fine]) {
      assert.equal((await worker.send({ headers: d.headers, body: d.body })).status, 202);
    }
    await until(async () => (await edgeJson(worker, ["status"])).counts.dead === 1, 20_000, "the dead one");
    await until(() => fine.every((d) => origin.accepted.includes(d.id)), 10_000, "the others");

    const status = await edge(worker, ["status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /delivery to the origin: running/);
    assert.match(status.stdout, /^delivered\s+3$/m);
    assert.match(status.stdout, /^dead\s+1$/m);

    const dead = await edge(worker, ["list", "--state", "dead"]);
    assert.equal(dead.code, 0, dead.stderr);
    const rows = dead.stdout.trim().split("\n");
    assert.equal(rows.length, 2, dead.stdout); // the header and the one dead delivery
    assert.ok(rows[1].startsWith(`${doomed.id} `) && rows[1].includes("post:p_dead") && rows[1].includes("503"), rows[1]);

    // One per page: without --all a cursor is offered; with --all every page is printed.
    const first = await edge(worker, ["list", "--state", "delivered", "--limit", "1"]);
    assert.equal(first.stdout.trim().split("\n").length, 2, first.stdout);
    assert.match(first.stderr, /more: --cursor s\d+/);
    const all = await edge(worker, ["list", "--state", "delivered", "--limit", "1", "--all"]);
    assert.deepEqual(
      all.stdout.trim().split("\n").slice(1).map((r) => r.split(" ")[0]),
      fine.map((d) => d.id),
    );
    const pages = (await edge(worker, ["--json", "list", "--state", "delivered", "--limit", "2", "--all"])).stdout;
    assert.deepEqual(pages.trim().split("\n").map((l) => JSON.parse(l).deliveries.length), [2, 1]);

    const shown = await edge(worker, ["show", doomed.id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^state\s+dead$/m);
    assert.match(shown.stdout, /^attempt 1 at \S+Z: refused 503 in \d+ ms: origin says 503$/m);
    assert.ok(!shown.stdout.includes(secret.slice(6)) && !shown.stdout.includes(TOKEN), "no secret printed");

    origin.refused.clear();
    const replayed = await edge(worker, ["replay", "--dead-since", "1h"]);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.equal(replayed.stdout.trim(), "replayed 1 delivery");
    await until(() => origin.accepted.includes(doomed.id), 10_000, "the replayed one");

    const again = await edge(worker, ["replay", fine[0].id]);
    assert.equal(again.stdout.trim(), "replayed 1 delivery", again.stderr);
    await until(() => origin.accepted.filter((id) => id === fine[0].id).length === 2, 10_000, "the replay by id");
  });

  it("pause holds deliveries at the edge, resume sends them in order", async () => {
    const paused = await edge(worker, ["pause"]);
    assert.equal(paused.code, 0, paused.stderr);
    assert.match((await edge(worker, ["status"])).stdout, /PAUSED/);
    const held = [postDelivery("p_held"), postDelivery("p_held"), postDelivery("p_held")];
    for (const d of held) assert.equal((await worker.send({ headers: d.headers, body: d.body })).status, 202);
    await sleep(1000);
    assert.ok(held.every((d) => !origin.accepted.includes(d.id)), "held while paused");
    const pending = await edgeJson(worker, ["list", "--state", "pending"]);
    assert.deepEqual(pending.deliveries.map((d) => d.id), held.map((d) => d.id));
    // A pending one cannot be replayed: the Worker's code comes through, exit 2.
    const busy = await edge(worker, ["replay", held[0].id]);
    assert.equal(busy.code, 2);
    assert.match(busy.stderr, /409 delivery_in_progress/);

    assert.equal((await edge(worker, ["resume"])).code, 0);
    await until(() => held.every((d) => origin.accepted.includes(d.id)), 10_000, "the held ones");
    assert.deepEqual(origin.accepted.filter((id) => held.some((d) => d.id === id)), held.map((d) => d.id));
  });

  it("erase by id, --post and --account: held deliveries are never sent, listed as erased; a replay of one fails", async () => {
    assert.equal((await edge(worker, ["pause"])).code, 0);
    const byId = postDelivery("p_erase_id");
    const byPost = [postDelivery("p_erase_post"), postDelivery("p_erase_post")];
    const account = `acc_erase_${Date.now()}`;
    const accountEvent = (() => {
      const id = newId("edge_acc");
      const body = JSON.stringify({
        id,
        type: "integration.disconnected",
        createdAt: "2026-11-22T09:00:00.000Z",
        workspaceId: "ws1",
        data: { integration: { id: account, name: "A", providerIdentifier: "x" }, reason: "reconnect_required" },
      });
      return delivery({ secrets: [secret], id, body });
    })();
    const kept = postDelivery("p_erase_kept");
    for (const d of [byId, ...byPost, accountEvent, kept]) {
      assert.equal((await worker.send({ headers: d.headers, body: d.body })).status, 202);
    }
    const one = await edge(worker, ["erase", byId.id]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(one.stdout.trim(), "erased 1 delivery (1 of them not delivered yet, now never sent)");
    const post = await edge(worker, ["erase", "--post", "p_erase_post"]);
    assert.equal(post.stdout.trim(), "erased 2 deliveries (2 of them not delivered yet, now never sent)", post.stderr);
    assert.deepEqual(await edgeJson(worker, ["erase", "--account", account]), { erased: 1, cancelled: 1 });
    const none = await edge(worker, ["erase"]);
    assert.equal(none.code, 2);

    const status = await edge(worker, ["status"]);
    assert.match(status.stdout, /^erased\s+4$/m);
    const erased = await edgeJson(worker, ["list", "--state", "erased"]);
    assert.deepEqual(erased.deliveries.map((d) => d.id), [byId, ...byPost, accountEvent].map((d) => d.id));
    assert.ok(erased.deliveries.every((d) => d.body_bytes === 0));
    const replay = await edge(worker, ["replay", byId.id]);
    assert.equal(replay.code, 2);
    assert.match(replay.stderr, /404 not_found: this delivery's body was erased/);

    assert.equal((await edge(worker, ["resume"])).code, 0);
    await until(() => origin.accepted.includes(kept.id), 10_000, "the one kept");
    await sleep(300);
    for (const d of [byId, ...byPost, accountEvent]) assert.ok(!origin.accepted.includes(d.id), `${d.id} never sent`);
  });

  it("a wrong token or none fails with a hint and prints no token; the token file works", async () => {
    const wrong = await edge(worker, ["status"], { token: "not-the-admin-token-at-all" });
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /404 not_found/);
    assert.match(wrong.stderr, /DELIVERY_MODE = "inbox"/);
    assert.ok(!wrong.stderr.includes("not-the-admin-token-at-all") && !wrong.stderr.includes(TOKEN));

    const none = await new Promise((resolve) => {
      const env = { ...process.env };
      delete env.POSTWIRE_EDGE_TOKEN;
      execFile(CLI, ["edge", "--worker", worker.url().toString(), "status"], { env }, (error, stdout, stderr) =>
        resolve({ code: error?.code ?? 0, stderr }),
      );
    });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /POSTWIRE_EDGE_TOKEN/);

    const file = path.join(dir, "token");
    writeFileSync(file, `${TOKEN}\n`);
    const fromFile = await edge(worker, ["--token-file", file, "status"], { token: "ignored-when-a-file-is-given" });
    assert.equal(fromFile.code, 0, fromFile.stderr);
  });
});
