// Every case of the shared tests/vectors/verify.json through the built Worker in workerd.
//
// The cases carry a fixed `now`, and workerd's clock is the real one, so each case is moved
// to the present: its timestamp is shifted by (real now - case now), and every signature
// entry that was a valid signature of the case (by one of its secrets, over its id, original
// timestamp and body) is replaced by the same secret's signature over the shifted timestamp,
// keeping its padding style. Everything else (malformed entries, signatures by other
// secrets or over other ids/timestamps, malformed timestamps) is sent unchanged. So each
// case keeps its meaning and its expected outcome. The same cases also run natively against
// the Worker's checks with their fixed `now` (worker/tests/vectors.rs).
//
// A case that passes verification but whose body is not a JSON object (the empty and the
// non-UTF-8 body) is answered 400 invalid_payload by the Worker's default settings: it
// passed the signature check (not 401) and is still not forwarded.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startOrigin } from "./support/origin.mjs";
import { startWorker, sign, REPO_ROOT, assertErrorBody, sleep } from "./support/worker.mjs";

const { cases } = JSON.parse(readFileSync(path.join(REPO_ROOT, "tests/vectors/verify.json"), "utf8"));

const STATUS = {
  missing_header: 400,
  invalid_header: 400,
  timestamp_too_old: 401,
  timestamp_too_new: 401,
  invalid_signature: 401,
};

function isJsonObject(buf) {
  try {
    const v = JSON.parse(buf.toString("utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const bodyOf = (c) => (c.body_base64 !== undefined ? Buffer.from(c.body_base64, "base64") : Buffer.from(c.body, "utf8"));

function headerKey(headers, name) {
  return Object.keys(headers).find((k) => k.toLowerCase() === name);
}

/** The case's headers moved from `c.now` to `realNow` (see the file comment). */
export function shiftToNow(c, realNow) {
  const headers = { ...c.headers };
  const tsKey = headerKey(headers, "webhook-timestamp");
  const m = tsKey ? /^(\s*)(\d+)(\s*)$/.exec(headers[tsKey]) : null;
  if (!m) return headers; // absent or malformed: not time-dependent, fails before any clock
  const oldTs = m[2];
  const newTs = String(BigInt(oldTs) + BigInt(realNow - c.now));
  headers[tsKey] = `${m[1]}${newTs}${m[3]}`;
  const idKey = headerKey(headers, "webhook-id");
  const sigKey = headerKey(headers, "webhook-signature");
  if (!idKey || !sigKey) return headers;
  const id = headers[idKey].trim();
  const body = bodyOf(c);
  // An entry may end with one comma (a header joined from two lines): it keeps it.
  headers[sigKey] = headers[sigKey].replace(/(^|\s)v1,([A-Za-z0-9+/]+={0,2})(,?)(?=\s|$)/g, (entry, lead, b64, comma) => {
    const bare = b64.replace(/=+$/, "");
    for (const secret of c.secrets) {
      if (sign(secret, id, oldTs, body).slice(3).replace(/=+$/, "") === bare) {
        const fresh = sign(secret, id, newTs, body).slice(3);
        return `${lead}v1,${b64.endsWith("=") ? fresh : fresh.replace(/=+$/, "")}${comma}`;
      }
    }
    return entry;
  });
  return headers;
}

// One Worker configuration per distinct (secrets, tolerance) of the cases.
const groups = new Map();
for (const c of cases) {
  const key = JSON.stringify([c.secrets, c.tolerance ?? null]);
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(c);
}

describe(`tests/vectors/verify.json through workerd (${cases.length} cases)`, () => {
  let origin, worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({ WEBHOOK_SECRETS: cases[0].secrets.join(" "), ORIGIN_URL: origin.url });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  it("has cases of every outcome", () => {
    assert.ok(cases.length >= 30);
    assert.ok(cases.some((c) => c.ok) && cases.some((c) => !c.ok));
  });

  for (const [key, group] of groups) {
    const [secrets, tolerance] = JSON.parse(key);
    describe(`secrets ×${secrets.length}, tolerance ${tolerance ?? "default"}`, () => {
      before(async () => {
        await worker.reconfigure({
          WEBHOOK_SECRETS: secrets.join(" "),
          ORIGIN_URL: origin.url,
          ...(tolerance !== null ? { TIMESTAMP_TOLERANCE_SECS: String(tolerance) } : {}),
        });
      });

      for (const c of group) {
        it(c.name, async () => {
          await worker.clearStore();
          origin.reset();
          // Keep clear of a second boundary, so "300 s old" does not become 301 in transit.
          const ms = Date.now() % 1000;
          if (ms > 600) await sleep(1000 - ms + 20);
          const realNow = Math.floor(Date.now() / 1000);
          const body = bodyOf(c);
          const res = await worker.send({ headers: shiftToNow(c, realNow), body });
          if (c.ok && !isJsonObject(body)) {
            assertErrorBody(assert, res, 400, "invalid_payload");
            assert.equal(origin.received.length, 0, "a body that is not a JSON object was forwarded");
          } else if (c.ok) {
            assert.equal(res.status, 200, res.text);
            assert.equal(res.json.code, "delivered");
            assert.equal(origin.received.length, 1);
            assert.ok(origin.received[0].body.equals(body), "body forwarded unchanged");
          } else {
            assertErrorBody(assert, res, STATUS[c.error], c.error);
            assert.equal(origin.received.length, 0, "a rejected delivery was forwarded");
          }
        });
      }
    });
  }
});
