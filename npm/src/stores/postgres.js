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
// reads the row in the same statement; complete, release and renew act only on the
// caller's token. Times are the database's clock (`clock_timestamp()`), so instances with
// skewed clocks agree. Every `sweepEvery` claims, up to `sweepLimit` expired rows are
// deleted (the expires_at index finds them) beside the claim, not before it: room to
// delete ten times the rows that claims add, so the table holds about the ids of the last
// keepMs. The sweep checks expiry again on each row it deletes, so a claim that takes an
// expired row over while the sweep runs is kept.
// The statements are the Rust receiver's too: one file each in
// crates/postwire-receiver/protocol/postgres/ (`{table}` for the table's name), inlined
// into the package by npm/build.sh.
import { storeTimes } from "../once.js";
import CREATE_TABLE from "../../../crates/postwire-receiver/protocol/postgres/create_table.sql";
import CREATE_INDEX from "../../../crates/postwire-receiver/protocol/postgres/create_index.sql";
import CLAIM from "../../../crates/postwire-receiver/protocol/postgres/claim.sql";
import COMPLETE from "../../../crates/postwire-receiver/protocol/postgres/complete.sql";
import RELEASE from "../../../crates/postwire-receiver/protocol/postgres/release.sql";
import RENEW from "../../../crates/postwire-receiver/protocol/postgres/renew.sql";
import SWEEP from "../../../crates/postwire-receiver/protocol/postgres/sweep.sql";

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/** SQLSTATEs of a concurrent CREATE … IF NOT EXISTS: unique_violation, duplicate_table, duplicate_object. */
const SCHEMA_RACE = new Set(["23505", "42P07", "42710"]);

/** A shared statement for `table` (a name IDENTIFIER accepted). */
const forTable = (statement, table) => statement.replaceAll("{table}", table);

/** The table's DDL for `table` (run once, on first use). */
export function postgresSchema(table) {
  return [forTable(CREATE_TABLE, table), forTable(CREATE_INDEX, table)];
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
  const statement = (name, text) => ({ name: `postwire_once_${name}_${table}`, text: forTable(text, table) });
  const claimSql = statement("claim", CLAIM);
  const completeSql = statement("complete", COMPLETE);
  const releaseSql = statement("release", RELEASE);
  const renewSql = statement("renew", RENEW);
  const sweepSql = statement("sweep", SWEEP);
  return {
    leaseMs,
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
    async renew(id, token) {
      await schema();
      return (await client.query({ ...renewSql, values: [id, token, leaseMs] })).rowCount === 1;
    },
    /** Deletes up to `limit` expired rows now; resolves to how many. */
    async sweep(limit = sweepLimit) {
      await schema();
      return (await client.query({ ...sweepSql, values: [limit] })).rowCount;
    },
  };
}
