// postwire/stores/cloudflare: once-processing stores over a Worker's own bindings.
//   d1Store(env.DB)                 D1 (SQLite): strong. One row per id; claim is one batch
//                                   (a transaction) of INSERT … ON CONFLICT and a read of the row.
//   durableObjectStore(env.ONCE)    a Durable Object per id (`PostwireOnceObject`, exported
//                                   here for the Worker's `export`): strict, since one object
//                                   handles its requests one at a time; its alarm deletes the
//                                   id after keepMs.
//   kvStore(env.KV)                 Workers KV: best effort. KV has no compare-and-set and
//                                   takes up to 60 s to show a write in other locations, so
//                                   two copies that arrive within that window at different
//                                   locations can both run; use it only where that is acceptable.
// No imports beyond the protocol: the module runs in workerd (and Miniflare) as it is.
import { storeTimes } from "../once.js";

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** The D1 table's DDL (run once per store object, on first use). */
export function d1Schema(table) {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, token TEXT, expires_at INTEGER NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at)`,
  ];
}

/**
 * The store over a D1 database binding. Options: `leaseMs` (30 s), `keepMs` (25 h),
 * `table` (`"postwire_once"`), `sweepEvery` (1000 claims of this store object),
 * `sweepLimit` (1000 rows). Times are the Worker's clock (ms since the epoch).
 */
export function d1Store(db, options) {
  if (typeof db?.prepare !== "function" || typeof db?.batch !== "function") throw new TypeError("d1Store: expects a D1 database binding (env.DB)");
  const { leaseMs, keepMs } = storeTimes(options, "d1Store");
  const table = options?.table ?? "postwire_once";
  if (typeof table !== "string" || !IDENTIFIER.test(table)) throw new TypeError("d1Store: options.table must be lower-case letters, digits and _");
  const sweepEvery = options?.sweepEvery ?? 1000;
  const sweepLimit = options?.sweepLimit ?? 1000;
  let ready = null;
  let claims = 0;
  const schema = () => {
    ready ??= db.batch(d1Schema(table).map((sql) => db.prepare(sql))).catch((err) => {
      ready = null;
      throw err;
    });
    return ready;
  };
  const take = `INSERT INTO ${table} (id, token, expires_at) VALUES (?1, ?2, ?3)
    ON CONFLICT (id) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
    WHERE ${table}.expires_at <= ?4`;
  const read = `SELECT token, expires_at FROM ${table} WHERE id = ?1`;
  const complete = `INSERT INTO ${table} (id, token, expires_at) VALUES (?1, NULL, ?3)
    ON CONFLICT (id) DO UPDATE SET token = NULL, expires_at = excluded.expires_at
    WHERE ${table}.token = ?2 OR ${table}.expires_at <= ?4`;
  const sweep = `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE expires_at < ?1 LIMIT ?2)`;
  const renew = `UPDATE ${table} SET expires_at = ?3 WHERE id = ?1 AND token = ?2`;
  return {
    leaseMs,
    async claim(id, token) {
      await schema();
      const now = Date.now();
      if (++claims % sweepEvery === 0) await db.prepare(sweep).bind(now, sweepLimit).run();
      const [taken, result] = await db.batch([db.prepare(take).bind(id, token, now + leaseMs, now), db.prepare(read).bind(id)]);
      if (taken.meta.changes === 1) return { state: "claimed" };
      const row = result.results[0];
      if (row === undefined) return { state: "busy", retryAfterMs: 1000 };
      if (row.token === null) return { state: "done" };
      return { state: "busy", retryAfterMs: Math.max(1, row.expires_at - now) };
    },
    async complete(id, token) {
      await schema();
      const now = Date.now();
      const result = await db.prepare(complete).bind(id, token, now + keepMs, now).run();
      return result.meta.changes === 1;
    },
    async release(id, token) {
      await schema();
      const result = await db.prepare(`DELETE FROM ${table} WHERE id = ?1 AND token = ?2`).bind(id, token).run();
      return result.meta.changes === 1;
    },
    async renew(id, token) {
      await schema();
      const result = await db.prepare(renew).bind(id, token, Date.now() + leaseMs).run();
      return result.meta.changes === 1;
    },
  };
}

/**
 * The Durable Object class behind durableObjectStore: one object per `webhook-id`
 * (`idFromName(id)`), its state `{token, until}` in storage, deleted by its alarm once it
 * expires. Export it from the Worker and bind it (wrangler: `durable_objects.bindings`
 * with `class_name = "PostwireOnceObject"`, and a `new_sqlite_classes` migration).
 */
export class PostwireOnceObject {
  constructor(state) {
    this.storage = state.storage;
  }

  /** POST {op: "claim" | "complete" | "release" | "renew", token, ms} → {state, retryAfterMs} or {ok}. */
  async fetch(request) {
    const { op, token, ms } = await request.json();
    const now = Date.now();
    const entry = await this.storage.get("entry");
    const live = entry !== undefined && entry.until > now;
    if (op === "claim") {
      if (live) return Response.json(entry.token === null ? { state: "done" } : { state: "busy", retryAfterMs: entry.until - now });
      await this.put({ token, until: now + ms });
      return Response.json({ state: "claimed" });
    }
    if (op === "complete") {
      if (live && entry.token !== token) return Response.json({ ok: false });
      await this.put({ token: null, until: now + ms });
      return Response.json({ ok: true });
    }
    if (op === "release") {
      if (entry === undefined || entry.token !== token) return Response.json({ ok: false });
      await this.storage.deleteAll();
      return Response.json({ ok: true });
    }
    if (op === "renew") {
      if (entry === undefined || entry.token !== token) return Response.json({ ok: false });
      await this.put({ token, until: now + ms });
      return Response.json({ ok: true });
    }
    return Response.json({ error: "unknown op" }, { status: 400 });
  }

  async put(entry) {
    await this.storage.put("entry", entry);
    await this.storage.setAlarm(entry.until);
  }

  /** The id expired: nothing of it is kept. */
  async alarm() {
    const entry = await this.storage.get("entry");
    if (entry !== undefined && entry.until > Date.now()) await this.storage.setAlarm(entry.until);
    else await this.storage.deleteAll();
  }
}

/**
 * The store over a Durable Object namespace binding of `PostwireOnceObject`. Options:
 * `leaseMs` (30 s), `keepMs` (25 h), `prefix` (`""`: put before the id in `idFromName`, to
 * share one class between endpoints).
 */
export function durableObjectStore(namespace, options) {
  if (typeof namespace?.idFromName !== "function" || typeof namespace?.get !== "function") {
    throw new TypeError("durableObjectStore: expects a Durable Object namespace binding (env.ONCE) of PostwireOnceObject");
  }
  const { leaseMs, keepMs } = storeTimes(options, "durableObjectStore");
  const prefix = options?.prefix ?? "";
  const call = async (id, body) => {
    const stub = namespace.get(namespace.idFromName(prefix + id));
    const res = await stub.fetch("https://postwire-once/", { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`durableObjectStore: the object answered ${res.status}`);
    return res.json();
  };
  return {
    leaseMs,
    claim: (id, token) => call(id, { op: "claim", token, ms: leaseMs }),
    complete: async (id, token) => (await call(id, { op: "complete", token, ms: keepMs })).ok,
    release: async (id, token) => (await call(id, { op: "release", token })).ok,
    renew: async (id, token) => (await call(id, { op: "renew", token, ms: leaseMs })).ok,
  };
}

/** KV's least expirationTtl, in seconds. */
const KV_MIN_TTL_SECONDS = 60;

/**
 * Best effort (see above): the store over a Workers KV namespace binding. Options:
 * `leaseMs` (30 s), `keepMs` (25 h), `prefix` (`"postwire:once:"`). Each value is
 * `{token, until}`, written with an expirationTtl of at least 60 s (KV's least).
 */
export function kvStore(kv, options) {
  if (typeof kv?.get !== "function" || typeof kv?.put !== "function") throw new TypeError("kvStore: expects a KV namespace binding (env.KV)");
  const { leaseMs, keepMs } = storeTimes(options, "kvStore");
  const prefix = options?.prefix ?? "postwire:once:";
  const ttl = (ms) => Math.max(KV_MIN_TTL_SECONDS, Math.ceil(ms / 1000));
  const read = async (key, now) => {
    const entry = await kv.get(key, "json");
    return entry !== null && entry.until > now ? entry : null;
  };
  return {
    leaseMs,
    async claim(id, token) {
      const key = prefix + id;
      const now = Date.now();
      const entry = await read(key, now);
      if (entry !== null) return entry.token === null ? { state: "done" } : { state: "busy", retryAfterMs: entry.until - now };
      await kv.put(key, JSON.stringify({ token, until: now + leaseMs }), { expirationTtl: ttl(leaseMs) });
      return { state: "claimed" };
    },
    async complete(id, token) {
      const key = prefix + id;
      const now = Date.now();
      const entry = await read(key, now);
      if (entry !== null && entry.token !== token) return false;
      await kv.put(key, JSON.stringify({ token: null, until: now + keepMs }), { expirationTtl: ttl(keepMs) });
      return true;
    },
    async release(id, token) {
      const key = prefix + id;
      const entry = await kv.get(key, "json");
      if (entry === null || entry.token !== token) return false;
      await kv.delete(key);
      return true;
    },
    /** Best effort, as the rest: the claim is read, then written again with a new lease. */
    async renew(id, token) {
      const key = prefix + id;
      const now = Date.now();
      const entry = await read(key, now);
      if (entry === null || entry.token !== token) return false;
      await kv.put(key, JSON.stringify({ token, until: now + leaseMs }), { expirationTtl: ttl(leaseMs) });
      return true;
    },
  };
}
