// postwire/stores/postgres: once-processing in a PostgreSQL table over the application's `pg` Pool or Client.
import type { OnceStore, StoreTimes } from "postwire";

export type { OnceStore, StoreTimes };

/** The part of a `pg` Pool or Client the store uses. */
export interface PgQueryable {
  query(config: { name?: string; text: string; values?: unknown[] }): Promise<{ rows: any[]; rowCount: number | null }>;
  query(text: string): Promise<unknown>;
}

export interface PostgresStoreOptions extends StoreTimes {
  /** The table (created on first use): lower-case letters, digits and `_`. Default `"postwire_once"`. */
  table?: string;
  /** Every this many claims of this store object, expired rows are deleted (beside the claim, not awaited). Default 100. */
  sweepEvery?: number;
  /** The most expired rows one sweep deletes. Default 1000. */
  sweepLimit?: number;
}

/** A PostgreSQL store, with `sweep()` to delete expired rows on demand. */
export interface PostgresStore extends OnceStore {
  /** Deletes up to `limit` (default `sweepLimit`) expired rows now; resolves to how many. */
  sweep(limit?: number): Promise<number>;
}

/** The SQL that creates `table` and its index (run by the store on first use). */
export declare function postgresSchema(table: string): string[];

/**
 * The store over `client` (never connected or closed here): one row per id, claimed with
 * `INSERT … ON CONFLICT … WHERE expires_at <= clock_timestamp()`. Strong.
 */
export declare function postgresStore(client: PgQueryable, options?: PostgresStoreOptions): PostgresStore;
