//! The database's layout: the tables (the SQLite store's, and a table of the queue heads
//! with their leases), the schema version row, the migrations run at start-up, and the
//! registration of workspaces without a store.

use super::*;

/// The layout's version, kept in the `postwire_schema` row; a database of a newer
/// version is refused rather than misread. Any change to the layout (a table, a column,
/// an index) takes a new version: a database at this version is not touched at start-up.
pub const SCHEMA_VERSION: i64 = 9;

/// Serialises start-ups: concurrent processes migrate one at a time.
const MIGRATION_LOCK: i64 = 0x706f_7374_7769_7265; // "postwire"

/// What turns a database of an older version into the next one, by version.
const MIGRATIONS: &[(i64, &str)] = &[
    // 1 → 2: leases indexed by subscription (`deliveries_leases`, in SCHEMA), so a claim
    // counts a subscription's leases without reading its whole queue.
    (1, "DROP INDEX IF EXISTS deliveries_leased"),
    // 2 → 3: leases move out of `deliveries` into a table of their own, so that a claim
    // no longer writes a new version of each delivery row (with an entry in each of its
    // indexes); the leases in flight move with them.
    (
        2,
        "CREATE TABLE IF NOT EXISTS leases (
             delivery_seq BIGINT PRIMARY KEY, sub_seq BIGINT NOT NULL, owner TEXT NOT NULL, until BIGINT NOT NULL);
         INSERT INTO leases (delivery_seq, sub_seq, owner, until)
             SELECT seq, sub_seq, lease_owner, lease_until FROM deliveries
             WHERE lease_until IS NOT NULL AND lease_owner IS NOT NULL AND finished_at IS NULL;
         DROP INDEX IF EXISTS deliveries_next;
         DROP INDEX IF EXISTS deliveries_leases;
         DROP INDEX IF EXISTS deliveries_leased_heads;
         ALTER TABLE deliveries DROP COLUMN IF EXISTS lease_owner, DROP COLUMN IF EXISTS lease_until;",
    ),
    // 3 → 4: the `v1a` extension. Each subscription says which signatures it gets
    // (existing ones keep the spec's `symmetric`); a workspace keeps its ed25519 signing
    // key (sealed like the secrets) and, during a rotation, the previous one.
    (
        3,
        "ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS signing TEXT NOT NULL DEFAULT 'symmetric';
         ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS signing_key_created_at BIGINT;
         ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS previous_signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS previous_signing_key_created_at BIGINT;
         ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS previous_signing_key_until BIGINT;",
    ),
    // 4 → 5: the claimable heads move into `queue_heads`, with their leases, so that a
    // claim reads a small table rather than an index of `deliveries` that keeps an
    // entry of every finished delivery until the big table is vacuumed. A leased head
    // keeps its lease (due again when it ends); a held delivery with an attempt in
    // flight keeps its lease too (its row is not claimable while its subscription is
    // paused).
    (
        4,
        "CREATE TABLE IF NOT EXISTS queue_heads (
             delivery_seq BIGINT PRIMARY KEY, sub_seq BIGINT NOT NULL, due_at BIGINT NOT NULL, owner TEXT,
             event_seq BIGINT NOT NULL, attempts BIGINT NOT NULL, created_at BIGINT NOT NULL);
         INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, owner, event_seq, attempts, created_at)
             SELECT d.seq, d.sub_seq, GREATEST(d.due_at, COALESCE(l.until, d.due_at)), l.owner,
                    d.event_seq, d.attempts, d.created_at
             FROM deliveries d LEFT JOIN leases l ON l.delivery_seq = d.seq
             WHERE d.finished_at IS NULL AND (d.state = 0 OR l.delivery_seq IS NOT NULL)
             ON CONFLICT (delivery_seq) DO NOTHING;
         DROP TABLE IF EXISTS leases;
         DROP INDEX IF EXISTS deliveries_due;",
    ),
    // 5 → 6: leases indexed by owner within their subscription (`queue_heads_leased`,
    // in SCHEMA), so a claim counts the other processes' leases without reading its own.
    (5, "DROP INDEX IF EXISTS queue_heads_leased"),
    // 6 → 7: erasure (`erasure.rs`). An account's events name it in `account_id` (taken
    // from the bodies of the events stored before), and an erased event keeps its row
    // with `erased_at` set and an empty body.
    (
        6,
        "ALTER TABLE events ADD COLUMN IF NOT EXISTS account_id TEXT;
         ALTER TABLE events ADD COLUMN IF NOT EXISTS erased_at BIGINT;
         UPDATE events SET account_id = body::jsonb #>> '{data,integration,id}'
             WHERE event_type LIKE 'integration.%';",
    ),
    // 7 → 8: operational notices (`crate::notices`). A subscription is a subscriber's or
    // an operator endpoint, and remembers whether its failing run was warned of; a
    // notification has a type, a `webhook-id` and a body, and is relayed once. The pause
    // notices stored before are kept as relayed (they were never sent).
    (
        7,
        "ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS purpose TEXT NOT NULL DEFAULT 'events';
         ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS pause_warned BOOLEAN NOT NULL DEFAULT FALSE;
         ALTER TABLE notifications ADD COLUMN IF NOT EXISTS kind TEXT NOT NULL DEFAULT 'endpoint.paused';
         ALTER TABLE notifications ADD COLUMN IF NOT EXISTS event_id TEXT;
         ALTER TABLE notifications ADD COLUMN IF NOT EXISTS body TEXT NOT NULL DEFAULT '';
         ALTER TABLE notifications ADD COLUMN IF NOT EXISTS relayed_at BIGINT;
         UPDATE notifications SET event_id = 'notice_' || id, relayed_at = created_at WHERE event_id IS NULL;
         ALTER TABLE notifications ALTER COLUMN event_id SET NOT NULL;
         ALTER TABLE notifications ALTER COLUMN subscription_id DROP NOT NULL;
         ALTER TABLE notifications ALTER COLUMN cause DROP NOT NULL;",
    ),
    // 8 → 9: published key sets. A workspace with a key pair gets the unguessable id of
    // its key set (`ks_` and 128 bits in hex: the SHA-256 of two `gen_random_uuid()`s,
    // 244 bits from the server's strong random source, cut to 32 digits); new ones are
    // made with the first key (`crate::signing::new_key_set_id`). The unique index is in
    // `SCHEMA`.
    (
        8,
        "ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS key_set_id TEXT;
         UPDATE workspaces SET key_set_id = 'ks_' || left(encode(sha256(convert_to(
                 gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'), 32)
             WHERE signing_key IS NOT NULL AND key_set_id IS NULL;",
    ),
];

const SCHEMA: &str = r#"
-- signing_key: the workspace's `v1a` (ed25519) `whsk_` key, sealed like the secrets;
-- made on first use. previous_*: the key a rotation replaced, signing until `_until`.
-- key_set_id: the unguessable id of its published key set, made with the first key.
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY, name TEXT NOT NULL,
    signing_key TEXT, signing_key_created_at BIGINT,
    previous_signing_key TEXT, previous_signing_key_created_at BIGINT, previous_signing_key_until BIGINT,
    key_set_id TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS workspaces_key_set ON workspaces (key_set_id);
CREATE TABLE IF NOT EXISTS integrations (
    workspace_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    provider_identifier TEXT NOT NULL, picture TEXT, PRIMARY KEY (workspace_id, id));
CREATE TABLE IF NOT EXISTS subscriptions (
    seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL,
    name TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, integrations TEXT NOT NULL,
    paused_reason TEXT, created_by_kind TEXT NOT NULL,
    consecutive_failures BIGINT NOT NULL DEFAULT 0, last_success_at BIGINT, failing_since BIGINT,
    created_at BIGINT NOT NULL, secret TEXT NOT NULL, previous_secret TEXT, previous_secret_until BIGINT,
    signing TEXT NOT NULL DEFAULT 'symmetric', purpose TEXT NOT NULL DEFAULT 'events',
    pause_warned BOOLEAN NOT NULL DEFAULT FALSE);
CREATE INDEX IF NOT EXISTS subscriptions_workspace ON subscriptions (workspace_id, seq);
CREATE TABLE IF NOT EXISTS events (
    seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL, workspace_id TEXT NOT NULL,
    event_type TEXT NOT NULL, post_id TEXT, created_at BIGINT NOT NULL, body TEXT NOT NULL,
    external_key BIGINT, account_id TEXT, erased_at BIGINT);
CREATE INDEX IF NOT EXISTS events_post ON events (workspace_id, post_id, seq) WHERE post_id IS NOT NULL;
-- An account's own events, for erasure by account (`erasure.rs`).
CREATE INDEX IF NOT EXISTS events_account ON events (workspace_id, account_id, seq) WHERE account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_external ON events (external_key, seq) WHERE external_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS idempotency_keys (
    scope TEXT NOT NULL, key TEXT NOT NULL, request_hash BYTEA NOT NULL,
    created_at BIGINT NOT NULL, lease_until BIGINT NOT NULL, response TEXT, resource TEXT,
    PRIMARY KEY (scope, key));
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_resource ON idempotency_keys (resource) WHERE resource IS NOT NULL;
CREATE TABLE IF NOT EXISTS deliveries (
    seq BIGSERIAL PRIMARY KEY, sub_seq BIGINT NOT NULL, event_seq BIGINT NOT NULL,
    okey BIGINT, state BIGINT NOT NULL, attempts BIGINT NOT NULL DEFAULT 0,
    due_at BIGINT NOT NULL, created_at BIGINT NOT NULL, finished_at BIGINT, resent_as BIGINT);
-- The queue heads (deliveries in state 0), with what a claim needs of them, and their
-- leases: all that a claim reads and writes. A row is added when a delivery becomes a
-- head and deleted when it ends or is held; `deliveries` stays the history. A claim
-- leases a head by setting `owner` and moving `due_at` to the lease's end, so a leased
-- head is out of the claimable range (`due_at <= now`) until its lease ends, when it is
-- claimable again with nothing to undo; the outcome deletes the row (or, for a retry,
-- sets the retry's time and clears the owner). Held deliveries have no row, except one
-- whose attempt was in flight when its subscription was paused: it keeps its lease
-- until the outcome, and claims skip paused subscriptions. A table of its own, and
-- small (the heads, not the history): claims step over the entries of rows that
-- churned since it was last vacuumed, and the store vacuums it every second while it
-- claims (`queue.rs`), which for a small table costs little. (Schema version 4 read
-- the heads through an index of `deliveries`, `deliveries_due`, which kept an entry of
-- every finished delivery until that big table was vacuumed, and leases from a table
-- of their own.)
CREATE TABLE IF NOT EXISTS queue_heads (
    delivery_seq BIGINT PRIMARY KEY, sub_seq BIGINT NOT NULL, due_at BIGINT NOT NULL, owner TEXT,
    event_seq BIGINT NOT NULL, attempts BIGINT NOT NULL, created_at BIGINT NOT NULL);
-- Claimable heads of a subscription, earliest due first.
CREATE INDEX IF NOT EXISTS queue_heads_due ON queue_heads (sub_seq, due_at, delivery_seq);
-- Leased heads of a subscription by owner and lease end: the per-subscription limit
-- counts the live ones (`due_at` after now) of the other owners, in two ranges around
-- the claiming one, whose own leases (hundreds with one busy subscription) are not read.
CREATE INDEX IF NOT EXISTS queue_heads_leased ON queue_heads (sub_seq, owner, due_at) WHERE owner IS NOT NULL;
-- Unfinished deliveries by ordering key (see the SQLite schema).
CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (sub_seq, okey, seq)
    WHERE finished_at IS NULL AND okey IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_held ON deliveries (sub_seq, seq) WHERE state = 1;
CREATE INDEX IF NOT EXISTS deliveries_subscription ON deliveries (sub_seq, seq);
-- Failed deliveries by finish time: what recover reads (`requeue.rs`).
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (sub_seq, finished_at, seq) WHERE state = 3;
-- Retention (`retention.rs`): finished deliveries by age, and whether an event is still
-- referred to.
CREATE INDEX IF NOT EXISTS deliveries_finished ON deliveries (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_event ON deliveries (event_seq);
CREATE TABLE IF NOT EXISTS attempts (
    delivery_seq BIGINT NOT NULL, number BIGINT NOT NULL, started_at BIGINT NOT NULL,
    duration_ms BIGINT NOT NULL, status BIGINT, error TEXT, body_prefix TEXT,
    PRIMARY KEY (delivery_seq, number));
-- Operational notices (`crate::notices`), written with the change they are about;
-- `relayed_at` is set by the transaction that queues one for the operator endpoints.
CREATE TABLE IF NOT EXISTS notifications (
    id BIGSERIAL PRIMARY KEY, workspace_id TEXT NOT NULL, subscription_id TEXT,
    cause TEXT, message TEXT NOT NULL, created_at BIGINT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'endpoint.paused', event_id TEXT NOT NULL, body TEXT NOT NULL DEFAULT '',
    relayed_at BIGINT);
CREATE INDEX IF NOT EXISTS notifications_workspace ON notifications (workspace_id, id);
CREATE INDEX IF NOT EXISTS notifications_unrelayed ON notifications (id) WHERE relayed_at IS NULL;
"#;

/// Brings the database up to [`SCHEMA_VERSION`] in one transaction (concurrent
/// start-ups wait for each other); refuses a newer one. A database at this version
/// already is left as it is: the layout's `CREATE INDEX IF NOT EXISTS` takes a lock on
/// its table even when the index exists, which waits for the writes of the processes
/// dispatching already and makes their next writes queue behind it (a process
/// starting stalled the others for a few hundred milliseconds each).
pub(super) async fn migrate(store: &PostgresStore) -> StoreResult<()> {
    store
        .run("migrate", |mut c: Client| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                    .await?;
                tx.batch_execute(
                    "CREATE TABLE IF NOT EXISTS postwire_schema (
                         id INT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
                )
                .await?;
                let version: Option<i64> = tx
                    .query_opt("SELECT version FROM postwire_schema WHERE id = 1", &[])
                    .await?
                    .map(|r| r.try_get(0))
                    .transpose()?;
                match version {
                    Some(v) if v > SCHEMA_VERSION => {
                        return Err(PgErr::Data(format!(
                            "the database has schema version {v}; this sender reads version {SCHEMA_VERSION} \
                             (a newer postwire wrote it: upgrade this one)"
                        )));
                    }
                    Some(SCHEMA_VERSION) => {
                        tx.commit().await.map_err(PgErr::Commit)?;
                        return Ok(());
                    }
                    Some(v) => {
                        for (_, sql) in MIGRATIONS.iter().filter(|(from, _)| *from >= v) {
                            tx.batch_execute(sql).await?;
                        }
                    }
                    None => {}
                }
                tx.batch_execute(SCHEMA).await?;
                tx.execute(
                    "INSERT INTO postwire_schema (id, version) VALUES (1, $1)
                     ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                    &[&SCHEMA_VERSION],
                )
                .await?;
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(())
            })
        })
        .await
}

/// Registers the workspaces of `workspaces` that the database at `url` does not have yet
/// (registered ones keep their name); returns the ids it added. Works beside running
/// stores (`postwire token create` beside `postwire serve`).
pub async fn register_workspaces(url: &str, workspaces: &[Workspace]) -> StoreResult<Vec<String>> {
    let store = PostgresStore::connect_with(
        url,
        PostgresOptions {
            pool_size: 1,
            // Registering a workspace reads no secret: no key needed.
            seal_on_connect: false,
            ..PostgresOptions::default()
        },
    )
    .await?;
    let workspaces = workspaces.to_vec();
    store
        .run("register workspaces", move |mut c: Client| {
            let workspaces = workspaces.clone();
            Box::pin(async move {
                let tx = c.transaction().await?;
                let mut added = Vec::new();
                for w in &workspaces {
                    let n = tx
                        .execute(
                            "INSERT INTO workspaces (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
                            &[&w.id, &w.name],
                        )
                        .await?;
                    if n > 0 {
                        added.push(w.id.clone());
                    }
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(added)
            })
        })
        .await
}
