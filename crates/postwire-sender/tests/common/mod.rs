//! Shared test parts: real HTTP receivers on loopback (`postwire_testkit::scripted`), a
//! sender on a real database (a SQLite file, or with `POSTWIRE_TEST_BACKEND=postgres` a fresh database in a throwaway
//! PostgreSQL cluster) with a manual clock, and domain-change builders.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use postwire_core::{CreatedByKind, Integration, ManualClock, PostState, Secret, Timestamp};
use postwire_sender::{
    AccountChange, AccountChangeKind, NewSubscription, PostChange, PostChangeKind, PostRecord, Sender, SenderConfig,
    Workspace,
};

#[allow(unused_imports)] // not every test file names all three
pub use postwire_testkit::scripted::{Receiver, Recorded, Reply};

pub const T0: i64 = 1_800_000_000_000;
pub const WS: &str = "ws_test";

/// Test config: insecure local allowed (loopback receivers), no jitter.
pub fn test_config() -> SenderConfig {
    SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        attempt_timeout: Duration::from_secs(2),
        idle_poll: Duration::from_millis(200),
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls()
}

/// Where a test's sender keeps its state: the backend the suite runs against, chosen by
/// `POSTWIRE_TEST_BACKEND` (`sqlite`, the default, or `postgres`). The same tests run
/// against both (`scripts/test-all.sh` runs them twice).
pub enum Db {
    /// A SQLite file in a temp dir.
    Sqlite(tempfile::TempDir),
    /// A fresh database in the test process's throwaway cluster.
    Postgres(postwire_testpg::TestDatabase),
}

impl Db {
    /// A new, empty database of the suite's backend.
    pub fn new() -> Db {
        match std::env::var("POSTWIRE_TEST_BACKEND").as_deref() {
            Ok("postgres") => Db::Postgres(postwire_testpg::database()),
            Ok("sqlite") | Err(_) => Db::Sqlite(tempfile::tempdir().unwrap()),
            Ok(other) => panic!("POSTWIRE_TEST_BACKEND={other}: expected sqlite or postgres"),
        }
    }

    /// A SQLite file, whatever the suite's backend (tests of SQLite's own rules).
    pub fn sqlite() -> Db {
        Db::Sqlite(tempfile::tempdir().unwrap())
    }

    /// The SQLite file's path (panics for PostgreSQL).
    pub fn sqlite_path(&self) -> std::path::PathBuf {
        match self {
            Db::Sqlite(dir) => dir.path().join("sender.db"),
            Db::Postgres(_) => panic!("not a SQLite database"),
        }
    }

    /// Opens a sender on it (again).
    pub async fn open(&self, config: SenderConfig, clock: Arc<dyn postwire_core::Clock>) -> Sender {
        match self {
            Db::Sqlite(_) => Sender::open_sqlite(self.sqlite_path(), config, clock).await.unwrap(),
            Db::Postgres(db) => Sender::open_postgres(db.url(), config, clock).await.unwrap(),
        }
    }
}

pub struct Harness {
    pub sender: Sender,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
    pub db: Db,
    pub dispatcher: Option<postwire_sender::DispatcherHandle>,
}

impl Harness {
    pub async fn new() -> Harness {
        Harness::with_config(test_config()).await
    }

    pub async fn with_config(config: SenderConfig) -> Harness {
        let mut h = Harness::stopped(config).await;
        h.dispatcher = Some(h.sender.start());
        h
    }

    /// A harness whose dispatcher is not started yet: publishes queue up until
    /// `h.dispatcher = Some(h.sender.start())`.
    pub async fn stopped(config: SenderConfig) -> Harness {
        Harness::stopped_on(Db::new(), config).await
    }

    /// A stopped harness on `db`.
    pub async fn stopped_on(db: Db, config: SenderConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(T0)));
        let sender = db.open(config, clock.clone()).await;
        sender
            .upsert_workspace(Workspace {
                id: WS.into(),
                name: "Test".into(),
            })
            .await
            .unwrap();
        for acc in ["acc-1", "acc-2"] {
            sender.upsert_integration(WS, integration(acc)).await.unwrap();
        }
        Harness {
            sender,
            clock,
            dir,
            db,
            dispatcher: None,
        }
    }

    pub async fn subscribe(&self, url: &str) -> (String, Secret) {
        self.subscribe_with(url, vec![], vec![]).await
    }

    pub async fn subscribe_with(
        &self,
        url: &str,
        events: Vec<postwire_core::EventType>,
        integration_ids: Vec<String>,
    ) -> (String, Secret) {
        let created = self
            .sender
            .create_subscription(NewSubscription {
                workspace_id: WS.into(),
                name: "test".into(),
                url: url.into(),
                events,
                integration_ids,
                created_by_kind: CreatedByKind::ApiToken,
                signing: Default::default(),
            })
            .await
            .unwrap();
        (created.subscription.id, created.secret)
    }

    /// Moves the clock by `ms` and lets the dispatcher run until idle.
    pub async fn advance(&self, ms: i64) {
        self.clock.advance_millis(ms);
        self.idle().await;
    }

    pub async fn idle(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.sender.wait_idle())
            .await
            .expect("dispatcher idle in time")
            .unwrap();
    }

    pub fn now_secs(&self) -> i64 {
        use postwire_core::Clock;
        self.clock.now().unix_time().as_secs()
    }

    pub async fn shutdown(mut self) {
        if let Some(d) = self.dispatcher.take() {
            d.shutdown().await;
        }
    }
}

/// A new endpoint of workspace [`WS`] named `name` at `url`, with no filters (every event
/// for a subscription; what an operator endpoint must have), made through an API token.
pub fn unfiltered(name: &str, url: &str) -> NewSubscription {
    NewSubscription {
        workspace_id: WS.into(),
        name: name.into(),
        url: url.into(),
        events: vec![],
        integration_ids: vec![],
        created_by_kind: CreatedByKind::ApiToken,
        signing: Default::default(),
    }
}

pub fn integration(id: &str) -> Integration {
    Integration {
        id: id.into(),
        name: format!("Account {id}"),
        provider_identifier: "x".into(),
        picture: None,
    }
}

pub fn post(id: &str, account: &str) -> PostRecord {
    PostRecord {
        id: id.into(),
        external_id: format!("ext-{id}"),
        group: "g".into(),
        state: PostState::Queue,
        is_draft: false,
        publish_date: Timestamp::from_unix_millis(T0 + 3_600_000),
        integration: integration(account),
        release_url: None,
        release_id: None,
        error: None,
        content: "CONTENT-MUST-NOT-LEAK".into(),
    }
}

pub fn scheduled(post_id: &str) -> PostChange {
    PostChange {
        workspace_id: WS.into(),
        post: post(post_id, "acc-1"),
        kind: PostChangeKind::Scheduled,
    }
}

pub fn change(post_id: &str, account: &str, kind: PostChangeKind) -> PostChange {
    PostChange {
        workspace_id: WS.into(),
        post: post(post_id, account),
        kind,
    }
}

pub fn disconnected(account: &str) -> AccountChange {
    AccountChange {
        workspace_id: WS.into(),
        integration: integration(account),
        kind: AccountChangeKind::Disconnected {
            reason: postwire_core::DisconnectReason::ReconnectRequired,
        },
    }
}

/// Verifies a recorded delivery with a trust list of `whsec_` secrets and `whpk_` public
/// keys (any one suffices), at the request's own timestamp.
pub fn verify_with_keys(r: &Recorded, keys: &[&str]) -> Result<postwire_core::Event, postwire_core::Error> {
    let v = postwire_core::Verifier::parse_keys(keys.iter())?;
    v.verify_event(&r.headers, &r.body, postwire_core::UnixTime::from_secs(r.timestamp()))
}

/// The versions of a recorded delivery's `webhook-signature` entries, in order.
pub fn signature_versions(r: &Recorded) -> Vec<String> {
    r.header("webhook-signature")
        .unwrap_or_default()
        .split(' ')
        .filter(|e| !e.is_empty())
        .map(|e| e.split(',').next().unwrap_or_default().to_owned())
        .collect()
}
