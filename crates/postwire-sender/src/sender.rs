//! [`Sender`]: the embeddable API the host (and the HTTP server) calls.
//!
//! Every method validates its input and returns a typed [`SenderError`] with a stable
//! code; none panics on any input. Writes reach the store before the method returns.
//! The dispatcher runs only after [`Sender::start`].

use std::sync::Arc;

use postwire_core::{
    Clock, CreatedSubscription, Event, EventType, Integration, OperationalData, Secret, SigningMode, Subscription,
    SubscriptionRef, SubscriptionStatus, Timestamp,
};

use crate::config::{DUAL_SIGNATURE_WINDOW_MS, HOLD_LIMIT_MS, SenderConfig};
use crate::dispatch::{self, Dispatcher, DispatcherHandle};
use crate::error::{Resource, SenderError, Violations};
use crate::events::{DomainChange, build_event, check_id, check_text};
use crate::idempotency::{Completion, Decision, IdempotencyKey, Idempotent, Response};
use crate::model::{
    DeliveryCursor, DeliveryId, DeliveryRecord, Erased, ErasureSubject, NewSubscription, Notification,
    PAUSED_BY_REQUEST, Page, Published, Purpose, ResumeSummary, RotatedSecret, RotatedSigningKey, SignedSample,
    SigningKeyInfo, StoredSubscription, SubscriptionChanges, SubscriptionRecord, SubscriptionUpdate, Workspace,
    WorkspaceKeys,
};
use crate::notices;
use crate::signals::{Owners, Signals};
use crate::signing;
use crate::ssrf::{Blocked, LOCAL_DEVELOPMENT_HINT, resolve_checked};
use crate::store::sqlite::SqliteStore;
use crate::store::{DeliveryCounts, RequeueError, Store};

/// Most operator endpoints a workspace may have.
pub const MAX_OPERATOR_ENDPOINTS: u64 = 10;
/// Longest subscription name, in characters.
pub const MAX_NAME_LEN: usize = 200;
/// Most account ids in one subscription's restriction.
pub const MAX_INTEGRATION_IDS: usize = 100;
/// Largest page of deliveries.
pub const MAX_PAGE_SIZE: usize = 100;
/// Most deliveries one [`Sender::recover`] call queues; call again for more.
pub const MAX_RECOVER: usize = 1_000;
/// Most changes in one [`Sender::publish_many`] call.
pub const MAX_PUBLISH_BATCH: usize = 10_000;

/// What every clone of a [`Sender`] shares. The dispatcher has its own [`Dispatcher`]
/// (with clones of the store, clock and settings) and talks to the sender only through
/// the [`Signals`].
struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: SenderConfig,
    signals: Arc<Signals>,
    dispatcher: Arc<Dispatcher>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("owner", &self.dispatcher.owner())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The webhook sender. Cheap to clone; all clones share one store and one dispatcher.
///
/// ```no_run
/// # async fn demo() -> Result<(), postwire_sender::SenderError> {
/// use std::sync::Arc;
/// use postwire_core::SystemClock;
/// use postwire_sender::{Sender, SenderConfig};
/// let sender = Sender::open_sqlite("webhooks.db", SenderConfig::default(), Arc::new(SystemClock)).await?;
/// let dispatcher = sender.start();
/// // ... sender.create_subscription(..), sender.publish(..) ...
/// dispatcher.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Sender {
    inner: Arc<Inner>,
    owners: Arc<Owners>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

fn random_token(prefix: &str) -> Result<String, SenderError> {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| SenderError::storage("no secure random source is available"))?;
    let mut s = String::with_capacity(prefix.len() + 32);
    s.push_str(prefix);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    Ok(s)
}

impl Sender {
    /// A sender over `store`, with time from `clock`. Its leases are taken under an owner
    /// name unique to this run (`pid-<pid>-<random>`), and whatever that owner holds is
    /// released first ([`Store::recover`]; the SQLite store releases every lease, which
    /// it keeps in memory; on PostgreSQL a crashed run's leases end by themselves and
    /// others take its deliveries over). Does not start the dispatcher. A config
    /// that cannot work (zero limits or timeouts, a lease not longer than the attempt
    /// timeout) is `invalid_request`.
    pub async fn open(
        config: SenderConfig,
        clock: Arc<dyn Clock>,
        store: Arc<dyn Store>,
    ) -> Result<Sender, SenderError> {
        let mut v = Violations::default();
        if config.max_in_flight == 0 || config.max_in_flight_per_subscription == 0 {
            v.push("`max_in_flight` and `max_in_flight_per_subscription` must be at least 1");
        }
        if config.attempt_timeout.is_zero() {
            v.push("`attempt_timeout` must be longer than zero");
        }
        if config.lease <= config.attempt_timeout {
            v.push("`lease` must be longer than `attempt_timeout`, or attempts still running would be claimed again");
        }
        if config.idle_poll.is_zero() {
            v.push("`idle_poll` must be longer than zero");
        }
        v.into_result()?;
        // Unique to this process and run: on a store shared by several processes (on
        // several machines, whose pids may be equal), each releases only its own leases.
        let owner = random_token(&format!("pid-{}-", std::process::id()))?;
        let signals = Arc::new(Signals::new());
        let dispatcher = Arc::new(Dispatcher::new(
            store.clone(),
            clock.clone(),
            config.clone(),
            owner.clone(),
            signals.clone(),
        )?);
        let released = store.recover(owner.clone()).await?;
        if released > 0 {
            tracing::info!(
                released,
                "released leases left by a previous run; those deliveries are due again"
            );
        }
        Ok(Sender {
            owners: Arc::new(Owners(signals.clone())),
            inner: Arc::new(Inner {
                store,
                clock,
                config,
                signals,
                dispatcher,
            }),
        })
    }

    /// A sender over the SQLite file at `path` (created if absent). Only one store may
    /// be open on a file at a time ([`SqliteStore::open`] takes the lock): a second
    /// one, in this process or another, fails with a clear error until the first is
    /// dropped (with every clone of its sender, and its dispatcher's requests in
    /// flight) or its process ends.
    pub async fn open_sqlite(
        path: impl AsRef<std::path::Path>,
        config: SenderConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Sender, SenderError> {
        let path = path.as_ref().to_path_buf();
        let options = crate::store::sqlite::SqliteOptions {
            secret_cipher: config.secret_cipher.clone(),
            ..Default::default()
        };
        let store = tokio::task::spawn_blocking(move || SqliteStore::open_with(path, options))
            .await
            .map_err(SenderError::storage)??;
        Sender::open(config, clock, Arc::new(store)).await
    }

    /// A sender over the PostgreSQL database at `url` (`postgres://…`), whose schema is
    /// created or brought up to date. Any number of senders, in any number of processes,
    /// may share one database: each claims with leases of its own (see
    /// [`PostgresStore`](crate::store::postgres::PostgresStore)).
    pub async fn open_postgres(url: &str, config: SenderConfig, clock: Arc<dyn Clock>) -> Result<Sender, SenderError> {
        let options = crate::store::postgres::PostgresOptions {
            secret_cipher: config.secret_cipher.clone(),
            ..Default::default()
        };
        let store = crate::store::postgres::PostgresStore::connect_with(url, options).await?;
        Sender::open(config, clock, Arc::new(store)).await
    }

    /// A registered workspace, if there is one.
    pub async fn workspace(&self, id: &str) -> Result<Option<Workspace>, SenderError> {
        self.inner.store.workspace(id.to_owned()).await
    }

    /// The clock the sender uses.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// Starts the dispatcher on the current Tokio runtime. A second call starts nothing
    /// and returns another handle to the same dispatcher (shutting down through either
    /// stops it).
    pub fn start(&self) -> DispatcherHandle {
        if self.inner.signals.mark_started() {
            tracing::warn!("Sender::start called twice; the dispatcher is already running");
            return dispatch::handle_without_task(self.inner.signals.clone(), self.owners.clone());
        }
        dispatch::start(self.inner.dispatcher.clone(), self.owners.clone())
    }

    /// Wakes the dispatcher and waits until it has nothing in flight and nothing due at
    /// the clock's current time. For tests with a [`ManualClock`](postwire_core::ManualClock);
    /// returns at once with `unavailable` if the dispatcher was never started.
    pub async fn wait_idle(&self) -> Result<(), SenderError> {
        if !self.inner.signals.is_started() || self.inner.signals.is_shutting_down() {
            return Err(SenderError::Unavailable);
        }
        self.inner
            .signals
            .wait_idle()
            .await
            .map_err(|_| SenderError::Unavailable)
    }

    /// How many subscriptions are paused, over all workspaces (for metrics).
    pub async fn paused_subscription_count(&self) -> Result<u64, SenderError> {
        self.inner.store.paused_subscriptions().await
    }

    /// Retention, one run: removes every finished delivery (with its attempts),
    /// unreferenced event and relayed operational notice older than `policy.keep` at the sender clock's now, in
    /// batches of `policy.batch`, pausing between batches so dispatch goes first. See
    /// [`crate::retention`].
    pub async fn purge_expired(
        &self,
        policy: &crate::retention::RetentionPolicy,
    ) -> Result<crate::store::Purged, SenderError> {
        let keep_ms = i64::try_from(policy.keep.as_millis()).unwrap_or(i64::MAX);
        let cutoff =
            postwire_core::Timestamp::from_unix_millis(self.inner.clock.now().unix_millis().saturating_sub(keep_ms));
        let mut total = crate::store::Purged::default();
        loop {
            let batch = self.inner.store.purge(cutoff, cutoff, policy.batch).await?;
            total += batch;
            let full = [batch.deliveries, batch.events, batch.notifications]
                .iter()
                .any(|n| *n >= policy.batch as u64);
            if !full {
                return Ok(total);
            }
            tokio::time::sleep(crate::retention::PAUSE_BETWEEN_BATCHES).await;
        }
    }

    /// Reads the key file of the at-rest cipher again (see [`crate::secret_box`]):
    /// returns the new current key id when a `postwire keys rotate` changed it, after
    /// which new secrets are sealed under that key and
    /// [`reseal_secrets`](Self::reseal_secrets) moves the stored ones. `None` when
    /// nothing changed or secrets are not encrypted from a key file.
    pub fn reload_secret_key(&self) -> Result<Option<String>, SenderError> {
        match &self.inner.config.secret_cipher {
            Some(cipher) => cipher.reload().map_err(|e| SenderError::storage(e.to_string())),
            None => Ok(None),
        }
    }

    /// Seals every stored secret that is not under the cipher's current key again under
    /// it, [`RESEAL_BATCH`](crate::secret_box::RESEAL_BATCH) values per short
    /// transaction with a pause between batches so dispatch goes first. Returns how many
    /// values were sealed again.
    pub async fn reseal_secrets(&self) -> Result<u64, SenderError> {
        let mut total = 0;
        loop {
            let n = self.inner.store.reseal_secrets(crate::secret_box::RESEAL_BATCH).await?;
            if n == 0 {
                return Ok(total);
            }
            total += n;
            tokio::time::sleep(crate::retention::PAUSE_BETWEEN_BATCHES).await;
        }
    }

    /// Wakes the dispatcher (e.g. after moving a manual clock).
    pub fn wake(&self) {
        self.inner.signals.wake();
    }

    // ----- registry -------------------------------------------------------------------

    /// Registers (or renames) a workspace. Subscriptions can only be made in registered
    /// workspaces.
    pub async fn upsert_workspace(&self, workspace: Workspace) -> Result<(), SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "id", &workspace.id);
        check_text(&mut v, "name", &workspace.name);
        v.into_result()?;
        self.inner.store.upsert_workspace(workspace).await
    }

    /// Registers (or updates) a connected account of a workspace.
    pub async fn upsert_integration(&self, workspace_id: &str, integration: Integration) -> Result<(), SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        check_id(&mut v, "id", &integration.id);
        check_text(&mut v, "name", &integration.name);
        check_id(&mut v, "providerIdentifier", &integration.provider_identifier);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        self.inner
            .store
            .upsert_integration(workspace_id.to_owned(), integration)
            .await
    }

    async fn require_workspace(&self, id: &str) -> Result<(), SenderError> {
        match self.inner.store.workspace(id.to_owned()).await? {
            Some(_) => Ok(()),
            None => Err(SenderError::not_found(Resource::Workspace, id)),
        }
    }

    // ----- subscriptions --------------------------------------------------------------

    /// Checks a URL: form and scheme, then every address its host resolves to.
    ///
    /// A host name that does not resolve now is accepted: DNS may be down for a minute
    /// and is not the client's fault. Its deliveries then fail (`dns`) and retry like
    /// any unreachable endpoint; the address check runs again on every attempt. A name
    /// that resolves only into refused ranges is still rejected here.
    ///
    /// Returns the URL as it will be called (parsed and normalised: lower-case scheme and
    /// host, default port dropped, path percent-encoded), which is what is stored and
    /// shown, or `None` after recording a violation.
    async fn check_url(&self, v: &mut Violations, url: &str) -> Option<String> {
        let policy = self.inner.config.address_policy;
        let refused = |v: &mut Violations, e: Blocked| {
            if e.allowed_for_local_development(url) {
                v.push(format!("`url`: {e} ({LOCAL_DEVELOPMENT_HINT})"));
            } else {
                v.push(format!("`url`: {e}"));
            }
        };
        match policy.check_url(url) {
            Err(e) => {
                refused(v, e);
                None
            }
            Ok(parsed) => {
                if let Some(url::Host::Domain(host)) = parsed.host() {
                    match resolve_checked(policy, host).await {
                        Ok(_) | Err(Blocked::Unresolvable) => {}
                        Err(e) => {
                            refused(v, e);
                            return None;
                        }
                    }
                }
                Some(String::from(parsed))
            }
        }
    }

    fn check_name(v: &mut Violations, name: &str) {
        if name.trim().is_empty() {
            v.push("`name` must not be empty");
        } else if name.chars().count() > MAX_NAME_LEN {
            // Characters, as JSON Schema's `maxLength` counts them in the API's document.
            v.push(format!("`name` must be at most {MAX_NAME_LEN} characters"));
        } else if name.chars().any(char::is_control) {
            v.push("`name` must not contain control characters");
        }
    }

    async fn resolve_integrations(
        &self,
        v: &mut Violations,
        workspace_id: &str,
        ids: &[String],
    ) -> Result<Vec<Integration>, SenderError> {
        if ids.len() > MAX_INTEGRATION_IDS {
            v.push(format!("`integrationIds` may hold at most {MAX_INTEGRATION_IDS} ids"));
            return Ok(Vec::new());
        }
        let mut unique: Vec<String> = Vec::with_capacity(ids.len());
        let mut id_errors = Violations::default();
        for id in ids {
            check_id(&mut id_errors, "integrationIds[]", id);
            if !unique.contains(id) {
                unique.push(id.clone());
            }
        }
        if let Err(SenderError::InvalidRequest { messages }) = id_errors.into_result() {
            messages.into_iter().for_each(|m| v.push(m));
            return Ok(Vec::new());
        }
        let found = self
            .inner
            .store
            .integrations(workspace_id.to_owned(), unique.clone())
            .await?;
        for id in &unique {
            if !found.iter().any(|i| &i.id == id) {
                v.push(format!(
                    "`integrationIds`: `{}` is not a connected account of this workspace",
                    truncate(id)
                ));
            }
        }
        Ok(found)
    }

    /// Creates a subscription: enabled, `consecutiveFailures` 0, with a fresh `whsec_`
    /// secret that this response carries and no other ever will.
    pub async fn create_subscription(&self, new: NewSubscription) -> Result<CreatedSubscription, SenderError> {
        self.create_keyed(new, None, Purpose::Events)
            .await
            .map(Idempotent::into_inner)
    }

    /// Creates an operator endpoint of `new.workspace_id`: a subscription that receives
    /// the workspace's operational notices ([`crate::notices`]) about its other
    /// subscriptions, and nothing else; `new.events` and `new.integration_ids` must be
    /// empty. Signed with its own fresh `whsec_` secret, returned this once; checked like
    /// any endpoint (SSRF rules); at most [`MAX_OPERATOR_ENDPOINTS`] per workspace.
    pub async fn create_operator_endpoint(&self, new: NewSubscription) -> Result<CreatedSubscription, SenderError> {
        if !new.events.is_empty() || !new.integration_ids.is_empty() {
            return Err(operator_filters_refused());
        }
        self.create_keyed(new, None, Purpose::Operator)
            .await
            .map(Idempotent::into_inner)
    }

    /// [`create_subscription`](Self::create_subscription) guarded by an idempotency key:
    /// the same key with the same request within 24 h returns the first response (the
    /// same subscription and secret) without creating another (see
    /// [`crate::idempotency`]); the key is stored in the transaction that stores the
    /// subscription. The stored response holds the secret for those 24 h, in the same
    /// file as the subscription's own secret.
    pub async fn create_subscription_idempotent(
        &self,
        new: NewSubscription,
        key: IdempotencyKey,
    ) -> Result<Idempotent<CreatedSubscription>, SenderError> {
        self.create_keyed(new, Some(key), Purpose::Events).await
    }

    async fn create_keyed(
        &self,
        new: NewSubscription,
        key: Option<IdempotencyKey>,
        purpose: Purpose,
    ) -> Result<Idempotent<CreatedSubscription>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", &new.workspace_id);
        v.into_result()?;
        self.require_workspace(&new.workspace_id).await?;
        let mut v = Violations::default();
        Self::check_name(&mut v, &new.name);
        let url = self.check_url(&mut v, &new.url).await;
        let integrations = self
            .resolve_integrations(&mut v, &new.workspace_id, &new.integration_ids)
            .await?;
        v.into_result()?;
        let secret = Secret::generate().map_err(|_| SenderError::storage("no secure random source is available"))?;
        let subscription = Subscription {
            id: random_token("wh_")?,
            name: new.name,
            url: url.unwrap_or(new.url),
            events: dedup_events(new.events),
            integrations,
            status: SubscriptionStatus::Enabled,
            created_by_kind: new.created_by_kind,
            consecutive_failures: 0,
            last_success_at: None,
            created_at: self.inner.clock.now(),
            signing: new.signing,
        };
        if new.signing.asymmetric() {
            self.workspace_keys(&new.workspace_id).await?;
        }
        let created = CreatedSubscription { subscription, secret };
        let lease = match self.begin(key).await? {
            Begun::Replay(stored) => return Ok(Idempotent::Replayed(stored)),
            Begun::Start(lease) => lease,
        };
        let response = match &lease {
            Some(_) => match self.seal_response(stored_form(&created)) {
                Ok(r) => Some(r),
                Err(e) => {
                    self.abandon(lease).await;
                    return Err(e);
                }
            },
            None => None,
        };
        let completion = lease
            .as_ref()
            .zip(response)
            .map(|((key, lease_until_ms), response)| Completion {
                key: key.clone(),
                lease_until_ms: *lease_until_ms,
                response: Response::Ready(response),
                created: Some(created.subscription.id.clone()),
            });
        let stored = StoredSubscription {
            workspace_id: new.workspace_id,
            subscription: created.subscription.clone(),
            secret: created.secret.clone(),
            previous_secret: None,
            failing_since: None,
            purpose,
        };
        let limit = match purpose {
            Purpose::Events => self.inner.config.max_subscriptions_per_workspace,
            Purpose::Operator => Some(MAX_OPERATOR_ENDPOINTS),
        };
        match self.inner.store.insert_subscription(stored, completion, limit).await {
            Ok(true) => {}
            Ok(false) => {
                self.abandon(lease).await;
                return Err(SenderError::PlanLimit {
                    limit: limit.unwrap_or_default(),
                });
            }
            Err(e) => {
                self.abandon(lease).await;
                return Err(e);
            }
        }
        Ok(Idempotent::Fresh(created))
    }

    async fn load(&self, id: &str) -> Result<StoredSubscription, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "id", id);
        v.into_result()?;
        self.inner
            .store
            .subscription(id.to_owned())
            .await?
            .ok_or_else(|| SenderError::not_found(Resource::Subscription, id))
    }

    /// One subscription (never its secret).
    pub async fn subscription(&self, id: &str) -> Result<SubscriptionRecord, SenderError> {
        Ok(self.load(id).await?.record())
    }

    /// The subscriptions of a workspace, oldest first (its subscribers' endpoints; the
    /// operator endpoints are [`list_operator_endpoints`](Self::list_operator_endpoints)).
    pub async fn list_subscriptions(&self, workspace_id: &str) -> Result<Vec<SubscriptionRecord>, SenderError> {
        self.list_endpoints(workspace_id, Purpose::Events).await
    }

    /// The operator endpoints of a workspace, oldest first.
    pub async fn list_operator_endpoints(&self, workspace_id: &str) -> Result<Vec<SubscriptionRecord>, SenderError> {
        self.list_endpoints(workspace_id, Purpose::Operator).await
    }

    /// Every subscription of a workspace, subscribers' and operator endpoints alike,
    /// oldest first, in one read (for a view of the whole workspace's health).
    pub async fn list_all_endpoints(&self, workspace_id: &str) -> Result<Vec<SubscriptionRecord>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        Ok(self
            .inner
            .store
            .list_subscriptions(workspace_id.to_owned())
            .await?
            .iter()
            .map(|s| s.record())
            .collect())
    }

    /// The endpoints of a workspace of one `purpose` (its subscribers' subscriptions, or
    /// its operator endpoints), oldest first.
    pub async fn list_endpoints(
        &self,
        workspace_id: &str,
        purpose: Purpose,
    ) -> Result<Vec<SubscriptionRecord>, SenderError> {
        let mut all = self.list_all_endpoints(workspace_id).await?;
        all.retain(|s| s.purpose == purpose);
        Ok(all)
    }

    /// Changes name, URL, event types or account restriction, checked like at creation.
    /// An operator endpoint takes no event types or accounts (`invalid_request`).
    pub async fn update_subscription(
        &self,
        id: &str,
        update: SubscriptionUpdate,
    ) -> Result<SubscriptionRecord, SenderError> {
        let current = self.load(id).await?;
        let filtered = update.events.as_ref().is_some_and(|e| !e.is_empty())
            || update.integration_ids.as_ref().is_some_and(|i| !i.is_empty());
        if current.purpose == Purpose::Operator && filtered {
            return Err(operator_filters_refused());
        }
        let mut v = Violations::default();
        if let Some(name) = &update.name {
            Self::check_name(&mut v, name);
        }
        let url = match &update.url {
            Some(url) => self.check_url(&mut v, url).await,
            None => None,
        };
        let integrations = match &update.integration_ids {
            Some(ids) => Some(self.resolve_integrations(&mut v, &current.workspace_id, ids).await?),
            None => None,
        };
        v.into_result()?;
        if update.signing.is_some_and(SigningMode::asymmetric) {
            self.workspace_keys(&current.workspace_id).await?;
        }
        let changes = SubscriptionChanges {
            name: update.name,
            url,
            events: update.events.map(dedup_events),
            integrations,
            signing: update.signing,
        };
        if !self.inner.store.update_subscription(id.to_owned(), changes).await? {
            return Err(SenderError::not_found(Resource::Subscription, id));
        }
        self.subscription(id).await
    }

    /// Deletes a subscription with its deliveries and their records.
    pub async fn delete_subscription(&self, id: &str) -> Result<(), SenderError> {
        self.load(id).await?;
        if self.inner.store.delete_subscription(id.to_owned()).await? {
            Ok(())
        } else {
            Err(SenderError::not_found(Resource::Subscription, id))
        }
    }

    /// Pauses a subscription by request: its events are held, not attempted.
    pub async fn pause(&self, id: &str) -> Result<SubscriptionRecord, SenderError> {
        let current = self.load(id).await?;
        if !current.subscription.status.is_paused()
            && !self
                .inner
                .store
                .pause(id.to_owned(), PAUSED_BY_REQUEST.to_owned())
                .await?
        {
            return Err(SenderError::not_found(Resource::Subscription, id));
        }
        self.subscription(id).await
    }

    /// Resumes a subscription (paused by request or by failures): events held during
    /// the last 7 days are delivered, in order; older ones are marked expired. Resets
    /// `consecutiveFailures`. Resuming an enabled subscription changes nothing.
    pub async fn resume(&self, id: &str) -> Result<(SubscriptionRecord, ResumeSummary), SenderError> {
        let current = self.load(id).await?;
        if !current.subscription.status.is_paused() {
            return Ok((current.record(), ResumeSummary::default()));
        }
        let now = self.inner.clock.now();
        let summary = self
            .inner
            .store
            .resume(id.to_owned(), now, now.add_millis(-HOLD_LIMIT_MS))
            .await?
            .ok_or_else(|| SenderError::not_found(Resource::Subscription, id))?;
        self.relay_notices().await;
        self.inner.signals.wake();
        Ok((self.subscription(id).await?, summary))
    }

    /// `PUT …/enabled`: resume when `enabled`, pause otherwise.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<SubscriptionRecord, SenderError> {
        if enabled {
            Ok(self.resume(id).await?.0)
        } else {
            self.pause(id).await
        }
    }

    /// Replaces the signing secret. For 24 hours every delivery carries two signatures,
    /// one with the old and one with the new secret; then only the new one. Rotating
    /// again within the window drops the oldest secret.
    pub async fn rotate_secret(&self, id: &str) -> Result<RotatedSecret, SenderError> {
        let current = self.load(id).await?;
        let secret = Secret::generate().map_err(|_| SenderError::storage("no secure random source is available"))?;
        let now = self.inner.clock.now();
        let until = now.add_millis(DUAL_SIGNATURE_WINDOW_MS);
        let data = OperationalData::EndpointSecretRotated {
            subscription: subscription_ref(&current),
            previous_secret_expires_at: until,
        };
        let notice = notices::new_notice(&current.workspace_id, data, now)?;
        if !self
            .inner
            .store
            .rotate_secret(id.to_owned(), secret.clone(), until, notice)
            .await?
        {
            return Err(SenderError::not_found(Resource::Subscription, id));
        }
        self.relay_notices().await;
        Ok(RotatedSecret {
            secret,
            previous_valid_until: until,
        })
    }

    /// The workspace's `v1a` key pair, made now if it has none yet (first use); every
    /// caller, in every process, gets the same one.
    async fn workspace_keys(&self, workspace_id: &str) -> Result<WorkspaceKeys, SenderError> {
        if let Some(keys) = self.inner.store.signing_keys(workspace_id.to_owned()).await? {
            return Ok(keys);
        }
        let custody = &self.inner.config.key_custody;
        let key = custody.generate().await?;
        let key_set_id = signing::new_key_set_id()?;
        let stored = self
            .inner
            .store
            .ensure_signing_key(workspace_id.to_owned(), key.clone(), key_set_id, self.inner.clock.now())
            .await;
        // Another caller (in any process) stored its key first, or nothing was stored:
        // a key made in a module for nothing is removed from it.
        if !matches!(&stored, Ok(Some(keys)) if keys.current == key) {
            custody.discard(key).await;
        }
        stored?.ok_or_else(|| SenderError::not_found(Resource::Workspace, workspace_id))
    }

    /// The id of the workspace's published key set (`ks_…`, see
    /// [`signing::new_key_set_id`]), for the link to it; the key pair is made on first
    /// use, and the id with it.
    pub async fn key_set_id(&self, workspace_id: &str) -> Result<String, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        Ok(self.workspace_keys(workspace_id).await?.key_set_id)
    }

    /// The public keys published under the key-set id `key_set_id` at this moment, as
    /// [`Sender::signing_keys`] lists them (current first; the previous one with its
    /// `expires_at` during a rotation's window). `None` for an id of another form or one
    /// no workspace has, without telling the two apart. One indexed read; no write.
    pub async fn published_key_set(&self, key_set_id: &str) -> Result<Option<Vec<SigningKeyInfo>>, SenderError> {
        if !signing::is_key_set_id(key_set_id) {
            return Ok(None);
        }
        let keys = self.inner.store.key_set(key_set_id.to_owned()).await?;
        Ok(keys.map(|keys| signing::published_keys(&keys, self.inner.clock.now())))
    }

    /// The public keys that verify the workspace's `v1a` signatures: the current one,
    /// then, during a rotation's 24 h window, the previous one with the window's end.
    /// The key pair is made on first use, so this always lists at least one key.
    pub async fn signing_keys(&self, workspace_id: &str) -> Result<Vec<SigningKeyInfo>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        let keys = self.workspace_keys(workspace_id).await?;
        Ok(signing::published_keys(&keys, self.inner.clock.now()))
    }

    /// A `webhook.test` delivery with `message`, signed now by the workspace's current
    /// `v1a` key alone, for a page that shows verification with the published public key
    /// (the Settings screen's verify box). Nothing is stored or sent; the body is always a
    /// test event, so this signs nothing a caller chooses beyond its message.
    pub async fn signed_sample(&self, workspace_id: &str, message: &str) -> Result<SignedSample, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        let keys = self.workspace_keys(workspace_id).await?;
        let now = self.inner.clock.now();
        let change = DomainChange::from(crate::events::TestEvent {
            workspace_id: workspace_id.to_owned(),
            subscription_id: None,
            message: message.to_owned(),
        });
        let id = Event::generate_id(now).map_err(|_| SenderError::storage("no secure random source is available"))?;
        let built = build_event(&change, id.clone(), now)?
            .map_err(|_| SenderError::invalid("a test event could not be built"))?;
        let timestamp = now.unix_time();
        let signer = crate::signer::DeliverySigner::new(Vec::new(), vec![keys.current])?;
        let signature = signer
            .sign(&*self.inner.config.key_custody, &id, timestamp, built.body.as_bytes())
            .await
            .map_err(|e| SenderError::storage(format!("the sample could not be signed: {e}")))?;
        Ok(SignedSample {
            id,
            timestamp: timestamp.as_secs(),
            signature,
            body: built.body,
        })
    }

    /// Replaces the workspace's `v1a` signing key. For 24 hours every `v1a` delivery
    /// carries two `v1a` signatures, one by the old and one by the new key; then only the
    /// new one. Rotating again within the window drops the oldest key.
    pub async fn rotate_signing_key(&self, workspace_id: &str) -> Result<RotatedSigningKey, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        self.workspace_keys(workspace_id).await?;
        let custody = &self.inner.config.key_custody;
        let key = custody.generate().await?;
        let now = self.inner.clock.now();
        let until = now.add_millis(DUAL_SIGNATURE_WINDOW_MS);
        let data = OperationalData::SigningKeyRotated {
            previous_key_expires_at: until,
        };
        let notice = notices::new_notice(workspace_id, data, now)?;
        let rotated = self
            .inner
            .store
            .rotate_signing_key(workspace_id.to_owned(), key.clone(), now, until, notice)
            .await;
        if !matches!(rotated, Ok(true)) {
            custody.discard(key).await;
        }
        if !rotated? {
            return Err(SenderError::not_found(Resource::Workspace, workspace_id));
        }
        self.relay_notices().await;
        let keys = self.workspace_keys(workspace_id).await?;
        Ok(RotatedSigningKey {
            keys: signing::published_keys(&keys, now),
            previous_valid_until: until,
        })
    }

    // ----- events ---------------------------------------------------------------------

    /// Accepts one domain change. When it is an event, the event and one delivery per
    /// matching subscription are on disk when this returns.
    pub async fn publish(&self, change: impl Into<DomainChange>) -> Result<Published, SenderError> {
        let mut out = self.publish_many(vec![change.into()]).await?;
        out.pop()
            .ok_or_else(|| SenderError::storage("publish produced no result"))
    }

    /// Accepts many changes in one transaction (all or none), in order.
    pub async fn publish_many(&self, changes: Vec<DomainChange>) -> Result<Vec<Published>, SenderError> {
        self.publish_keyed(changes, None).await.map(Idempotent::into_inner)
    }

    /// [`publish_many`](Self::publish_many) guarded by an idempotency key: the same key
    /// with the same request within 24 h returns the first call's results without
    /// publishing anything again (see [`crate::idempotency`]); the key is stored in the
    /// transaction that stores the events.
    pub async fn publish_many_idempotent(
        &self,
        changes: Vec<DomainChange>,
        key: IdempotencyKey,
    ) -> Result<Idempotent<Vec<Published>>, SenderError> {
        self.publish_keyed(changes, Some(key)).await
    }

    async fn publish_keyed(
        &self,
        changes: Vec<DomainChange>,
        key: Option<IdempotencyKey>,
    ) -> Result<Idempotent<Vec<Published>>, SenderError> {
        if self.inner.signals.is_shutting_down() {
            return Err(SenderError::Unavailable);
        }
        if changes.len() > MAX_PUBLISH_BATCH {
            return Err(SenderError::invalid(format!(
                "at most {MAX_PUBLISH_BATCH} changes per call"
            )));
        }
        let now = self.inner.clock.now();
        let mut results = Vec::with_capacity(changes.len());
        let mut built = Vec::with_capacity(changes.len());
        for change in &changes {
            if let DomainChange::Test(t) = change
                && let Some(id) = &t.subscription_id
            {
                let sub = self.load(id).await?;
                if sub.workspace_id != t.workspace_id {
                    return Err(SenderError::not_found(Resource::Subscription, id));
                }
            }
            let id =
                Event::generate_id(now).map_err(|_| SenderError::storage("no secure random source is available"))?;
            match build_event(change, id, now)? {
                Ok(b) => {
                    results.push(Published::Event {
                        event_id: b.id().to_owned(),
                        deliveries: 0,
                    });
                    built.push(b);
                }
                Err(reason) => results.push(Published::NoEvent(reason)),
            }
        }
        let lease = match self.begin(key).await? {
            Begun::Replay(stored) => return Ok(Idempotent::Replayed(stored)),
            Begun::Start(lease) => lease,
        };
        if built.is_empty() && lease.is_none() {
            return Ok(Idempotent::Fresh(results));
        }
        let completion = lease.as_ref().map(|(key, lease_until_ms)| {
            let skeleton = results.clone();
            Completion {
                key: key.clone(),
                lease_until_ms: *lease_until_ms,
                response: Response::FromCounts(Box::new(move |counts| stored_form(&with_counts(skeleton, counts)))),
                created: None,
            }
        });
        let counts = match self.inner.store.enqueue(built, now, completion).await {
            Ok(counts) => counts,
            Err(e) => {
                self.abandon(lease).await;
                return Err(e);
            }
        };
        let results = with_counts(results, &counts);
        if counts.iter().any(|n| *n > 0) {
            self.inner.signals.wake();
        }
        Ok(Idempotent::Fresh(results))
    }

    /// Begins a request under `key`, if it has one: its stored result to replay, or the
    /// key with the lease to do it under (`None` without a key).
    async fn begin<T: serde::de::DeserializeOwned>(
        &self,
        key: Option<IdempotencyKey>,
    ) -> Result<Begun<T>, SenderError> {
        let Some(key) = key else { return Ok(Begun::Start(None)) };
        match self
            .inner
            .store
            .begin_idempotent(key.clone(), self.inner.clock.now())
            .await?
        {
            Decision::Start { lease_until_ms } => Ok(Begun::Start(Some((key, lease_until_ms)))),
            Decision::Replay(stored) => serde_json::from_str(&self.open_response(&stored)?)
                .map(Begun::Replay)
                .map_err(|e| SenderError::storage(format!("a stored idempotent response is unreadable: {e}"))),
            Decision::Reused => Err(SenderError::IdempotencyKeyReused),
            Decision::InProgress => Err(SenderError::IdempotencyInProgress),
        }
    }

    /// A stored response that carries a secret, sealed when a cipher is configured.
    fn seal_response(&self, response: String) -> Result<String, SenderError> {
        match &self.inner.config.secret_cipher {
            Some(c) => c.seal_text(&response).map_err(SenderError::storage),
            None => Ok(response),
        }
    }

    /// A stored response as it was before [`seal_response`](Self::seal_response).
    fn open_response(&self, stored: &str) -> Result<String, SenderError> {
        if !crate::secret_box::is_sealed(stored) {
            return Ok(stored.to_owned());
        }
        match &self.inner.config.secret_cipher {
            Some(c) => c.open_text(stored).map_err(SenderError::storage),
            None => Err(SenderError::storage(
                "a stored idempotent response is encrypted and no key was given",
            )),
        }
    }

    /// Frees the key of a request that failed, so its retry is judged afresh. Best
    /// effort: a key not freed is free again when its lease ends.
    async fn abandon(&self, lease: Option<(IdempotencyKey, i64)>) {
        if let Some((key, lease_until_ms)) = lease
            && let Err(e) = self.inner.store.abandon_idempotent(key, lease_until_ms).await
        {
            tracing::warn!(error = %e, "could not free an idempotency key; it frees itself when its lease ends");
        }
    }

    /// The posts of `workspace_id` whose events carried `external_id` (the client's own
    /// reference), most recent first, at most `limit` (1 to 100).
    pub async fn posts_with_external_id(
        &self,
        workspace_id: &str,
        external_id: &str,
        limit: usize,
    ) -> Result<Vec<String>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        check_limit(&mut v, limit);
        if external_id.is_empty() {
            v.push("`externalId` must not be empty");
        }
        v.into_result()?;
        self.inner
            .store
            .posts_with_external_id(workspace_id.to_owned(), external_id.to_owned(), limit)
            .await
    }

    /// Recent events about a post, newest first (at most `limit`, 1 to 100): for
    /// `GET /posts/lookup`, to reconcile events a receiver missed.
    pub async fn events_for_post(
        &self,
        workspace_id: &str,
        post_id: &str,
        limit: usize,
    ) -> Result<Vec<Event>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        check_id(&mut v, "postId", post_id);
        check_limit(&mut v, limit);
        v.into_result()?;
        self.inner
            .store
            .events_for_post(workspace_id.to_owned(), post_id.to_owned(), limit)
            .await
    }

    // ----- deliveries and notifications ------------------------------------------------

    /// A subscription's deliveries with their attempts, newest first: `limit` (1 to 100)
    /// of them after `cursor` (the previous page's `next_cursor`; a client's text form
    /// parses with `str::parse::<DeliveryCursor>`).
    pub async fn list_deliveries(
        &self,
        subscription_id: &str,
        cursor: Option<DeliveryCursor>,
        limit: usize,
    ) -> Result<Page<DeliveryRecord>, SenderError> {
        let mut v = Violations::default();
        check_limit(&mut v, limit);
        v.into_result()?;
        let before = cursor.map(|c| c.0);
        self.load(subscription_id).await?;
        let mut items = self
            .inner
            .store
            .list_deliveries(subscription_id.to_owned(), before, limit + 1)
            .await?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|d| DeliveryCursor(d.id.0))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    /// Queues the stored notices not relayed yet for the operator endpoints
    /// ([`crate::notices`]). A failure is logged, not returned: the notice is stored, and
    /// the dispatcher's periodic relay queues it.
    async fn relay_notices(&self) {
        match self.inner.store.relay_notices(self.inner.clock.now()).await {
            Ok(n) if n > 0 => self.inner.signals.wake(),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "relaying operational notices failed; the dispatcher retries"),
        }
    }

    /// The operational notices of a workspace ([`crate::notices`]: failing, pause
    /// warnings, automatic pauses, resumes, recoveries, rotations), newest first.
    pub async fn notifications(&self, workspace_id: &str, limit: usize) -> Result<Vec<Notification>, SenderError> {
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        check_limit(&mut v, limit);
        v.into_result()?;
        self.inner.store.notifications(workspace_id.to_owned(), limit).await
    }

    /// Resends a finished delivery (delivered, failed or expired): a new attempt series
    /// of the same event to the same subscription, with the same `webhook-id` and body.
    /// It respects ordering like a new delivery: it waits behind unfinished deliveries of
    /// its post or account, and is held while the subscription is paused. Returns the
    /// new delivery's id. A delivery still pending or held is `delivery_unfinished` (it
    /// will be attempted anyway); one of another subscription is `not_found`.
    pub async fn resend(&self, subscription_id: &str, delivery: DeliveryId) -> Result<DeliveryId, SenderError> {
        if self.inner.signals.is_shutting_down() {
            return Err(SenderError::Unavailable);
        }
        self.load(subscription_id).await?;
        let now = self.inner.clock.now();
        match self
            .inner
            .store
            .resend(subscription_id.to_owned(), delivery, now)
            .await?
        {
            Ok(id) => {
                self.inner.signals.wake();
                Ok(id)
            }
            Err(RequeueError::NoSubscription) => Err(SenderError::not_found(Resource::Subscription, subscription_id)),
            Err(RequeueError::NoDelivery) => Err(SenderError::not_found(Resource::Delivery, &delivery.to_string())),
            Err(RequeueError::Unfinished) => Err(SenderError::DeliveryUnfinished {
                delivery: delivery.to_string(),
            }),
            Err(RequeueError::Erased) => Err(SenderError::PayloadErased {
                delivery: delivery.to_string(),
            }),
        }
    }

    /// Erases the stored payloads of one subject of a workspace (a post, or a connected
    /// account), for a data-protection request: in one transaction, the body of every
    /// event about it is replaced by a tombstone (an empty body, marked erased), and its
    /// unfinished deliveries are cancelled (state `cancelled`, never attempted again),
    /// the next delivery of the same key in each subscription taking their place in the
    /// order. Ids, times, states and attempt outcomes stay for audit; the deliveries
    /// list shows the payload as erased, and a resend of an erased delivery is
    /// `payload_erased`; recover skips them. Idempotent: a repeat erases nothing more
    /// and answers zeros. An attempt already in flight when the erasure commits may
    /// still reach its endpoint (its body was read before); its outcome is ignored.
    pub async fn erase_payloads(&self, workspace_id: &str, subject: ErasureSubject) -> Result<Erased, SenderError> {
        if self.inner.signals.is_shutting_down() {
            return Err(SenderError::Unavailable);
        }
        let mut v = Violations::default();
        check_id(&mut v, "workspaceId", workspace_id);
        match &subject {
            ErasureSubject::Post(id) => check_id(&mut v, "postId", id),
            ErasureSubject::Integration(id) => check_id(&mut v, "integrationId", id),
        }
        v.into_result()?;
        self.require_workspace(workspace_id).await?;
        let now = self.inner.clock.now();
        let erased = self
            .inner
            .store
            .erase_payloads(workspace_id.to_owned(), subject, now)
            .await?;
        if erased.cancelled > 0 {
            // A queue may have a new head.
            self.inner.signals.wake();
        }
        Ok(erased)
    }

    /// Recovers a subscription's failures: resends (see [`resend`](Self::resend)) every
    /// delivery that failed for good at or after `since` and was not resent already, in
    /// publish order, at most [`MAX_RECOVER`] per call; returns how many it queued (0
    /// when there is nothing left to recover, so calling until 0 recovers everything).
    /// A `since` in the future recovers nothing (0), like any time after the last failure.
    pub async fn recover(&self, subscription_id: &str, since: Timestamp) -> Result<u64, SenderError> {
        if self.inner.signals.is_shutting_down() {
            return Err(SenderError::Unavailable);
        }
        self.load(subscription_id).await?;
        let now = self.inner.clock.now();
        if since > now {
            return Ok(0);
        }
        let queued = self
            .inner
            .store
            .recover_failed(subscription_id.to_owned(), since, now, MAX_RECOVER)
            .await?
            .ok_or_else(|| SenderError::not_found(Resource::Subscription, subscription_id))?;
        if queued > 0 {
            self.inner.signals.wake();
        }
        Ok(queued)
    }

    /// Unfinished deliveries per state, over all subscriptions: cheap whatever the
    /// history kept (it reads the queue, not the finished deliveries), so fit for a
    /// gauge read every few seconds.
    pub async fn queue_counts(&self) -> Result<crate::store::QueueCounts, SenderError> {
        self.inner.store.queue_counts().await
    }

    /// Deliveries per state, finished ones included, for one subscription or all. It
    /// counts every delivery kept, so it costs more as the history grows: for tests and
    /// tools; a gauge reads [`queue_counts`](Self::queue_counts).
    pub async fn delivery_counts(&self, subscription_id: Option<&str>) -> Result<DeliveryCounts, SenderError> {
        self.inner
            .store
            .delivery_counts(subscription_id.map(str::to_owned))
            .await
    }
}

/// What beginning a request found.
enum Begun<T> {
    /// Do it, under the key's lease if it has a key.
    Start(Option<(IdempotencyKey, i64)>),
    /// Done before: this is its result.
    Replay(T),
}

/// What an idempotency key stores of a result: its serde form.
fn stored_form<T: serde::Serialize>(result: &T) -> String {
    serde_json::to_string(result).unwrap_or_default()
}

/// `results` with each event's delivery count, in order.
fn with_counts(mut results: Vec<Published>, counts: &[usize]) -> Vec<Published> {
    let mut counts = counts.iter();
    for r in &mut results {
        if let Published::Event { deliveries, .. } = r {
            *deliveries = counts.next().copied().unwrap_or(0);
        }
    }
    results
}

fn check_limit(v: &mut Violations, limit: usize) {
    if !(1..=MAX_PAGE_SIZE).contains(&limit) {
        v.push(format!("`limit` must be between 1 and {MAX_PAGE_SIZE}"));
    }
}

/// An operator endpoint given subscriber filters: it receives every operational notice
/// of its workspace, and routing has no place for its filters
/// ([`EndpointRole`](crate::routing::EndpointRole)).
fn operator_filters_refused() -> SenderError {
    SenderError::invalid(
        "an operator endpoint receives every operational notice: `events` and `integrationIds` must be empty",
    )
}

fn dedup_events(events: Vec<EventType>) -> Vec<EventType> {
    let mut out: Vec<EventType> = Vec::with_capacity(events.len());
    for e in events {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn truncate(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The id and name of `s`, as a notice names it.
fn subscription_ref(s: &StoredSubscription) -> SubscriptionRef {
    SubscriptionRef {
        id: s.subscription.id.clone(),
        name: s.subscription.name.clone(),
    }
}
