//! The composition root: builds the keys, store, clients, caches and workers' handles
//! once at startup into the services' [`Context`] that every handler and worker uses.

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
use crate::services::context::{Context, Resources};
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

/// The application: the services' shared [`Context`], handed to every handler. Handlers
/// pass `&state` where a service takes `&Context` (it dereferences to it).
#[derive(Clone)]
pub struct AppState(Context);

impl Deref for AppState {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.0
    }
}

impl AppState {
    /// The services' context, for a task that outlives the request (workers, spawned jobs).
    pub fn context(&self) -> &Context {
        &self.0
    }

    /// Loads keys, opens and migrates the database, and builds the clients.
    pub fn build(config: Config) -> Result<Self, StartupError> {
        crate::store::create_private_dir(&config.storage.data_dir)?;
        let master = Arc::new(MasterKey::load_or_create(
            &config.storage.master_key_path(),
        )?);
        let server_keys = ServerKeys::load_or_create(&config.storage.data_dir)?;
        let attestation_body = crate::services::attestation::rendered(&server_keys)
            .map_err(|e| StartupError::Other(format!("cannot render the attestation: {e}")))?;
        let store = Store::open(&config.storage)?;
        let matrix = match &config.matrix {
            Some(m) => Some(MatrixClient::new(m).map_err(|e| StartupError::Other(e.to_string()))?),
            None => None,
        };
        let http = http_client()?;
        let jwt = JwtKeys::new(
            &master.jwt_secret(),
            config.auth.access_token_ttl.0.as_secs(),
        );
        let bridges =
            crate::services::bridges::Bridges::new(&config.bridges).map_err(StartupError::Other)?;
        let push = match config.push.as_ref().filter(|p| p.apns()) {
            Some(p) => Some(crate::clients::push::PushClient::new(p).map_err(StartupError::Other)?),
            None => None,
        };
        let web_push = crate::services::push::build_client(&config).map_err(StartupError::Other)?;
        let auth_cache = crate::services::session::AuthCache::new(store.epoch());
        let pages =
            crate::services::pages::PageCache::new(store.epoch(), config.storage.history_cache_mb);
        let mailer = Mailer::new(&config.mail).map_err(|e| StartupError::Other(e.to_string()))?;
        let ai_scorer = crate::workers::scorer::Scorer::new(config.ai.as_ref(), &http)
            .map(|s| Arc::new(s) as Arc<dyn crate::services::importance::Rescorer>);
        Ok(Self(Context::new(Resources {
            mailer,
            store,
            master,
            server_keys,
            attestation_body,
            limiter: RateLimiter::new(),
            jwt,
            auth_cache,
            pages,
            e2ee: crate::clients::matrix::e2ee::E2ee::new(&config.storage.data_dir),
            matrix,
            bridges,
            ai_scorer,
            http,
            health_cache: Cache::builder().max_capacity(16).build(),
            events: EventHub::new(),
            shutdown: Shutdown::new(),
            sync_wakeup: tokio::sync::Notify::new(),
            scheduler_wakeup: tokio::sync::Notify::new(),
            push,
            web_push,
            history: Arc::new(crate::workers::sync::HistoryIngest::new(&config.bridges)),
            email: Default::default(),
            local_writes: Default::default(),
            config,
        })))
    }
}

/// The shared outbound HTTP client (AI service, link previews): our user agent, short
/// connect and overall timeouts.
fn http_client() -> Result<reqwest::Client, StartupError> {
    reqwest::Client::builder()
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(3))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| StartupError::Other(format!("HTTP client: {e}")))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod mail_tests;
