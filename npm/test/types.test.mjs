// The shipped TypeScript types, checked by `tsc` on consumer files (ESM and CommonJS)
// that resolve the package by name; their `@ts-expect-error` lines make loose types fail.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const npmDir = fileURLToPath(new URL("..", import.meta.url));
const tsc = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url));

test("tsc accepts the consumer files against dist/index.d.ts and dist/index.d.cts", () => {
  const r = spawnSync(process.execPath, [tsc, "-p", "test/types/tsconfig.json", "--listFiles"], { cwd: npmDir, encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /npm\/dist\/index\.d\.ts/);
  assert.match(r.stdout, /npm\/dist\/index\.d\.cts/);
  for (const types of ["once.d.ts", "once.d.cts", "stores/redis.d.ts", "stores/redis.d.cts", "stores/postgres.d.cts", "stores/cloudflare.d.ts", "stores/cloudflare.d.cts"]) {
    assert.ok(r.stdout.includes(`npm/dist/${types}`), `${types} checked`);
  }
});
