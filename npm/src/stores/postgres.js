// postwire/stores/postgres: the once-processing store in a PostgreSQL table, over the
// application's own `pg` Pool or Client (node-postgres; this store never connects or
// disconnects it). One row per `webhook-id`, created on first use:
//
//   CREATE TABLE IF NOT EXISTS postwire_once (
//     id         text PRIMARY KEY,
//     token      text,                 -- the claim's token; NULL once done
//     expires_at timestamptz NOT NULL  -- the lease's end while claimed; when the id is forgotten once done
//   );
//   CREATE INDEX IF NOT EXISTS postwire_once_expires_at ON postwire_once (expires_at);
//
// claim is one INSERT … ON CONFLICT that takes the row over only when it has expired, then
// reads the row in the same statement; complete and release act only on the caller's
// token. Times are the database's clock (`clock_timestamp()`), so instances with skewed
// clocks agree. Every `sweepEvery` claims, up to `sweepLimit` expired rows are deleted
// (the expires_at index finds them) beside the claim, not before it: room to delete ten
// times the rows that claims add, so the table holds about the ids of the last keepMs.
import { storeTimes } from "../once.js";

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/** SQLSTATEs of a concurrent CREATE … IF NOT EXISTS: unique_violation, duplicate_table, duplicate_object. */
const SCHEMA_RACE = new Set(["23505", "42P07", "42710"]);

/** The table's DDL for `table` (run once, on first use). */
export function postgresSchema(table) {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, token text, expires_at timestamptz NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at)`,
  ];
}

/**
 * The store over `client` (a `pg` Pool or Client). Options: `leaseMs` (30 s), `keepMs`
 * (25 h), `table` (`"postwire_once"`: lower-case letters, digits, `_`), `sweepEvery`
 * (100 claims), `sweepLimit` (1000 rows). A failed sweep is left to the next one.
 */
export function postgresStore(client, options) {
  if (typeof client?.query !== "function") throw new TypeError("postgresStore: the client must be a pg Pool or Client");
  const { leaseMs, keepMs } = storeTimes(options, "postgresStore");
  const table = options?.table ?? "postwire_once";
  if (typeof table !== "string" || !IDENTIFIER.test(table)) {
    throw new TypeError("postgresStore: options.table must be lower-case letters, digits and _ (at most 63), starting with a letter or _");
  }
  const sweepEvery = options?.sweepEvery ?? 100;
  const sweepLimit = options?.sweepLimit ?? 1000;
  let ready = null;
  let claims = 0;
  const schema = () => {
    ready ??= (async () => {
      for (const sql of postgresSchema(table)) {
        // Two processes creating the table at once: IF NOT EXISTS can still collide in the
        // catalog (unique_violation, duplicate_table); the other one's table is there then.
        await client.query(sql).catch((err) => {
          if (!SCHEMA_RACE.has(err?.code)) throw err;
          return client.query(sql);
        });
      }
    })().catch((err) => {
      ready = null; // the next delivery tries again (the database may have been down)
      throw err;
    });
    return ready;
  };
  // The row after the insert: the CTE's row when it inserted or took over, otherwise the
  // existing row (NULL only when a concurrent insert is not yet visible: busy, briefly).
  const claimSql = {
    name: `postwire_once_claim_${table}`,
    text: `WITH taken AS (
        INSERT INTO ${table} AS t (id, token, expires_at)
        VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond')
        ON CONFLICT (id) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
          WHERE t.expires_at <= clock_timestamp()
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM taken) AS claimed,
        (SELECT token IS NULL FROM ${table} WHERE id = $1) AS done,
        (SELECT ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint FROM ${table} WHERE id = $1) AS ms_left`,
  };
  const completeSql = {
    name: `postwire_once_complete_${table}`,
    text: `INSERT INTO ${table} AS t (id, token, expires_at) VALUES ($1, NULL, clock_timestamp() + $3 * interval '1 millisecond')
      ON CONFLICT (id) DO UPDATE SET token = NULL, expires_at = EXCLUDED.expires_at
        WHERE t.token = $2 OR t.expires_at <= clock_timestamp()`,
  };
  const releaseSql = { name: `postwire_once_release_${table}`, text: `DELETE FROM ${table} WHERE id = $1 AND token = $2` };
  const sweepSql = {
    name: `postwire_once_sweep_${table}`,
    text: `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE expires_at < clock_timestamp() LIMIT $1)`,
  };
  return {
    async claim(id, token) {
      await schema();
      if (++claims % sweepEvery === 0) client.query({ ...sweepSql, values: [sweepLimit] }).catch(() => {});
      const { rows } = await client.query({ ...claimSql, values: [id, token, leaseMs] });
      const row = rows[0];
      if (row.claimed) return { state: "claimed" };
      if (row.done === true) return { state: "done" };
      return { state: "busy", retryAfterMs: row.ms_left === null ? 1000 : Math.max(1, Number(row.ms_left)) };
    },
    async complete(id, token) {
      await schema();
      return (await client.query({ ...completeSql, values: [id, token, keepMs] })).rowCount === 1;
    },
    async release(id, token) {
      await schema();
      return (await client.query({ ...releaseSql, values: [id, token] })).rowCount === 1;
    },
    /** Deletes up to `limit` expired rows now; resolves to how many. */
    async sweep(limit = sweepLimit) {
      await schema();
      return (await client.query({ ...sweepSql, values: [limit] })).rowCount;
    },
  };
}
