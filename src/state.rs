//! Shared application state, built once at startup and handed to every handler.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::clients::mail::Mailer;
use crate::clients::matrix::MatrixClient;
use crate::config::Config;
use crate::crypto::{MasterKey, ServerKeys};
use crate::events::{EventHub, Shutdown};
use crate::ratelimit::RateLimiter;
use crate::services::session::JwtKeys;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Crypto(#[from] crate::crypto::CryptoError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Other(String),
}

pub struct Inner {
    pub config: Config,
    pub store: Store,
    pub master: Arc<MasterKey>,
    pub server_keys: ServerKeys,
    pub limiter: RateLimiter,
    pub jwt: JwtKeys,
    /// Recently verified credentials (see [`crate::services::session::AuthCache`]).
    pub auth_cache: crate::services::session::AuthCache,
    /// Rendered read pages: history, room lists, statistics (see [`crate::services::pages`]).
    pub pages: crate::services::pages::PageCache,
    pub mailer: Mailer,
    pub matrix: Option<MatrixClient>,
    /// Each user's end-to-end encryption machine (the sync device's; `services::e2ee`).
    pub e2ee: crate::clients::matrix::e2ee::E2ee,
    /// Provisioning clients of the configured bridges, their status cache and login processes.
    pub bridges: crate::services::bridges::Bridges,
    /// General outbound client (AI service); upstreams with their own needs have their own.
    pub http: reqwest::Client,
    /// Refines message scores with the AI service; `None` without an `[ai]` section.
    pub ai_scorer: Option<crate::workers::scorer::Scorer>,
    /// Probed by the health check to prove the cache works.
    pub health_cache: Cache<&'static str, u64>,
    /// Change notifications for `GET /api/sync`.
    pub events: EventHub,
    /// Triggered when the process is asked to stop.
    pub shutdown: Shutdown,
    /// Wakes the sync supervisor when a user gets (or changes) its Matrix account.
    pub sync_wakeup: tokio::sync::Notify,
    /// Wakes the scheduler when scheduled messages or reminders change.
    pub scheduler_wakeup: tokio::sync::Notify,
    /// APNs client; `None` without a `[push]` section.
    pub push: Option<crate::clients::push::PushClient>,
    /// Stores history paged back from the homeserver through the sync's ingest (see
    /// [`crate::services::history`]).
    pub history: Arc<dyn crate::services::history::TimelineSink>,
    /// The users' own mailboxes: sync wake-ups, locks, progress.
    pub email: crate::services::email::Runtime,
}

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// Loads keys, opens and migrates the database, and builds the clients.
    pub fn build(config: Config) -> Result<Self, StartupError> {
        crate::store::create_private_dir(&config.storage.data_dir)?;
        let master = Arc::new(MasterKey::load_or_create(
            &config.storage.master_key_path(),
        )?);
        let server_keys = ServerKeys::load_or_create(&config.storage.data_dir)?;
        let store = Store::open(&config.storage)?;
        let matrix = match &config.matrix {
            Some(m) => Some(MatrixClient::new(m).map_err(|e| StartupError::Other(e.to_string()))?),
            None => None,
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| StartupError::Other(format!("HTTP client: {e}")))?;
        let jwt = JwtKeys::new(
            &master.jwt_secret(),
            config.auth.access_token_ttl.0.as_secs(),
        );
        let bridges =
            crate::services::bridges::Bridges::new(&config.bridges).map_err(StartupError::Other)?;
        let push = match &config.push {
            Some(p) => Some(crate::clients::push::PushClient::new(p).map_err(StartupError::Other)?),
            None => None,
        };
        let auth_cache = crate::services::session::AuthCache::new(store.epoch());
        let pages =
            crate::services::pages::PageCache::new(store.epoch(), config.storage.history_cache_mb);
        let mailer = Mailer::new(&config.mail).map_err(|e| StartupError::Other(e.to_string()))?;
        Ok(Self(Arc::new(Inner {
            mailer,
            store,
            master,
            server_keys,
            limiter: RateLimiter::new(),
            jwt,
            auth_cache,
            pages,
            e2ee: crate::clients::matrix::e2ee::E2ee::new(&config.storage.data_dir),
            matrix,
            bridges,
            ai_scorer: crate::workers::scorer::Scorer::new(config.ai.as_ref(), &http),
            http,
            health_cache: Cache::builder().max_capacity(16).build(),
            events: EventHub::new(),
            shutdown: Shutdown::new(),
            sync_wakeup: tokio::sync::Notify::new(),
            scheduler_wakeup: tokio::sync::Notify::new(),
            push,
            history: Arc::new(crate::workers::sync::HistoryIngest::new(&config.bridges)),
            email: Default::default(),
            config,
        })))
    }
}
