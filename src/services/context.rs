//! What the services and workers work with: the store, keys, caches, outbound clients,
//! the event hub and the wake-ups, built once by `state.rs` (the composition root).
//!
//! One shared context rather than one per domain area: nearly every service reads the
//! store with the master key and announces changes on the event hub, and services call
//! each other (rooms → messages → history → e2ee) passing it along, so per-area structs
//! would each hold most of these fields. What it holds is typed from this layer or below;
//! the workers' pieces it carries (the AI rescorer, the history ingest) are traits defined
//! in `services` and implemented in `workers`.

use std::ops::Deref;
use std::sync::Arc;

use moka::future::Cache;

use crate::clients::mail::Mailer;
use crate::clients::matrix::e2ee::E2ee;
use crate::clients::matrix::MatrixClient;
use crate::clients::push::PushClient;
use crate::config::Config;
use crate::crypto::{MasterKey, ServerKeys};
use crate::error::AppResult;
use crate::events::{EventHub, Shutdown};
use crate::ratelimit::RateLimiter;
use crate::services::bridges::Bridges;
use crate::services::history::TimelineSink;
use crate::services::importance::Rescorer;
use crate::services::pages::PageCache;
use crate::services::session::{AuthCache, JwtKeys};
use crate::store::{Conn, Store};

/// Everything a service may use; reached through [`Context`].
pub struct Resources {
    pub config: Config,
    pub store: Store,
    pub master: Arc<MasterKey>,
    pub server_keys: ServerKeys,
    /// The body of `GET /api/attestation`, rendered at start (see
    /// [`crate::services::attestation::rendered`]).
    pub attestation_body: bytes::Bytes,
    pub limiter: RateLimiter,
    pub jwt: JwtKeys,
    /// Recently verified credentials (see [`crate::services::session::AuthCache`]).
    pub auth_cache: AuthCache,
    /// Rendered read pages: history, room lists, statistics (see [`crate::services::pages`]).
    pub pages: PageCache,
    pub mailer: Mailer,
    pub matrix: Option<MatrixClient>,
    /// Each user's end-to-end encryption machine (the sync device's; `services::e2ee`).
    pub e2ee: E2ee,
    /// Provisioning clients of the configured bridges, their status cache and login processes.
    pub bridges: Bridges,
    /// General outbound client (AI service); upstreams with their own needs have their own.
    pub http: reqwest::Client,
    /// Refines message scores with the AI service; `None` without an `[ai]` section.
    pub ai_scorer: Option<Arc<dyn Rescorer>>,
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
    /// APNs client; `None` without `[push] key_file`.
    pub push: Option<PushClient>,
    /// Web Push to browsers, and the VAPID key once loaded (see [`crate::services::push`]).
    pub web_push: crate::services::push::WebPush,
    /// Stores history paged back from the homeserver through the sync's ingest (see
    /// [`crate::services::history`]).
    pub history: Arc<dyn TimelineSink>,
    /// The users' own mailboxes: sync wake-ups, locks, progress.
    pub email: crate::services::email::Runtime,
    /// Shared flags being changed here, which a sync response begun earlier must not undo
    /// (see [`crate::services::conversation::local_writes`]).
    pub local_writes: crate::services::conversation::local_writes::LocalWrites,
}

/// A cheap handle on the shared [`Resources`]; clone it into spawned tasks.
#[derive(Clone)]
pub struct Context(Arc<Resources>);

impl Context {
    pub fn new(resources: Resources) -> Self {
        Self(Arc::new(resources))
    }

    /// [`Store::run`] for a job that fails with [`crate::error::AppError`]:
    /// `state.db(move |c| { …; Ok(x) })` without naming the error type at each call.
    pub async fn db<T, F>(&self, job: F) -> AppResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn) -> AppResult<T> + Send + 'static,
    {
        self.store.run(job).await
    }
}

impl Deref for Context {
    type Target = Resources;
    fn deref(&self) -> &Resources {
        &self.0
    }
}
