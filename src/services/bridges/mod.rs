//! Bridges: a proxy onto each platform's mautrix provisioning API, acting for the user's
//! Matrix ID, plus the local record of the user's logins (`bridge_logins`).
//!
//! - Status reads go through a per-user, per-platform cache of the bridge's whoami that
//!   lives at most [`STATUS_CACHE_TTL`]. Each fresh whoami is reconciled into the local
//!   record; every change of a login's state (and every added or removed login) is
//!   published as `bridge.state` `{platform, loginId, stateEvent, error}`.
//! - Login processes are tracked in memory (moka, [`LOGIN_PROCESS_TTL`]) by the bridge's
//!   own process id, scoped to the user and platform that started them.
//! - `login/wait` never ties the bridge's `display_and_wait` long-poll to the client's
//!   request: the long-poll runs in a background task (one at a time per process) that
//!   records its result in the process; a client waits for that result at most
//!   [`WAIT_MAX`] and may come back. Older bridges cancel a login whose long-poll request
//!   is dropped, so dropping it whenever a client times out would kill QR logins.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use moka::future::Cache;
use serde_json::Value;
use tokio::sync::watch;

use crate::clients::provisioning::{
    BridgeClients, BridgeError, Failure, LoginFlow, LoginStep, Platform, WhoamiLogin,
};
use crate::clock::unix_now;
use crate::config::BridgesConfig;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::events::ChangeEvent;
use crate::services::upstream::bridge_error;
use crate::services::users;
use crate::services::Context;
use crate::store::bridge_logins::{self, BridgeLoginRow};
use crate::store::users::UserRow;

/// Login starts per user (all platforms together) per [`LOGIN_RATE_WINDOW`].
pub const LOGIN_RATE_LIMIT: u32 = 10;
pub const LOGIN_RATE_WINDOW: Duration = Duration::from_secs(600);
/// How long a login process lives: the bridgev2 login process timeout.
pub const LOGIN_PROCESS_TTL: Duration = Duration::from_secs(30 * 60);
/// Longest a client's `login/wait` waits for news.
pub const WAIT_MAX: Duration = Duration::from_secs(60);
/// Longest one background `display_and_wait` long-poll to the bridge is held open.
pub const BRIDGE_LONG_POLL_CAP: Duration = Duration::from_secs(300);
/// Longest a whoami answer is reused.
pub const STATUS_CACHE_TTL: Duration = Duration::from_secs(10);

/// State events in which a login counts as connected.
const CONNECTED_STATES: [&str; 2] = ["CONNECTED", "BACKFILLING"];
/// State events in which a login needs the user to log in again.
const LOGGED_OUT_STATES: [&str; 2] = ["BAD_CREDENTIALS", "LOGGED_OUT"];

/// The bridge clients and the caches of the bridges service, built once at startup.
pub struct Bridges {
    pub clients: BridgeClients,
    snapshots: Cache<(String, Platform), Arc<Snapshot>>,
    processes: Cache<(String, Platform, String), Arc<Process>>,
}

impl Bridges {
    pub fn new(config: &BridgesConfig) -> Result<Self, String> {
        Ok(Self {
            clients: BridgeClients::new(config)?,
            snapshots: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(STATUS_CACHE_TTL)
                .build(),
            processes: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(LOGIN_PROCESS_TTL + Duration::from_secs(60))
                .build(),
        })
    }
}

/// One whoami answer (or failure) and when it was fetched.
struct Snapshot {
    checked_at: i64,
    result: Result<crate::clients::provisioning::Whoami, BridgeError>,
}

/// A login of the user as the local record knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoginInfo {
    pub id: String,
    pub remote_name: Option<String>,
    /// The bridge's `profile` object (phone, email, username, name, avatar).
    pub remote_profile: serde_json::Map<String, Value>,
    pub logged_in: bool,
    /// `CONNECTED`, `CONNECTING`, `BACKFILLING`, `TRANSIENT_DISCONNECT`, `BAD_CREDENTIALS`,
    /// `UNKNOWN_ERROR`, …; empty when the bridge reported none yet.
    pub state_event: String,
    /// Human-readable problem (the state's message, else its code).
    pub error: Option<String>,
    /// The network's error code, e.g. `wa-logged-out`.
    pub error_code: Option<String>,
    pub updated_at: i64,
}

impl LoginInfo {
    pub fn is_connected(&self) -> bool {
        CONNECTED_STATES.contains(&self.state_event.as_str())
    }
}

/// One platform as the user sees it.
#[derive(Debug, Clone)]
pub struct PlatformStatus {
    pub platform: Platform,
    pub configured: bool,
    /// Whether the bridge answered whoami (within the request timeout) at `last_checked_at`.
    pub reachable: bool,
    pub connected: bool,
    pub logins: Vec<LoginInfo>,
    pub last_checked_at: Option<i64>,
    /// Why the bridge could not be read, when it could not.
    pub problem: Option<String>,
}

/// The expiry of a login process.
#[derive(Debug, Clone, Copy)]
pub struct ProcessTimeout {
    pub total_seconds: i64,
    pub remaining_seconds: i64,
    pub expires_at: i64,
}

#[derive(Debug, Clone)]
pub struct Completion {
    pub login_id: String,
    pub user_info: LoginInfo,
}

/// Where a login process stands after a call.
#[derive(Debug, Clone)]
pub enum LoginProgress {
    /// The next step to show or submit.
    Step(LoginStep),
    Complete(Completion),
    /// The process timed out; start a new login.
    Expired,
}

#[derive(Debug, Clone)]
pub struct LoginUpdate {
    pub process_id: String,
    pub progress: LoginProgress,
    pub timeout: ProcessTimeout,
}

/// A login process started here, keyed by the bridge's process id.
struct Process {
    user_id: String,
    platform: Platform,
    id: String,
    mxid: String,
    started_at: i64,
    expires_at: i64,
    /// When the bridge reported the process timed out (0: it did not).
    expired_at: AtomicI64,
    state: Mutex<ProcState>,
    /// Bumped whenever a background long-poll finished.
    changed: watch::Sender<u64>,
}

struct ProcState {
    step: LoginStep,
    completion: Option<Completion>,
    /// Terminal: the bridge refused the process.
    failure: Option<BridgeError>,
    expired: bool,
    /// Step id of the long-poll in flight.
    polling: Option<String>,
    /// Transient failure of the last long-poll (the next wait retries).
    poll_error: Option<BridgeError>,
    /// The long-poll brought a new step while no client was waiting: the next wait
    /// answers it at once.
    unseen: bool,
}

impl Process {
    fn timeout(&self) -> ProcessTimeout {
        ProcessTimeout {
            total_seconds: self.expires_at - self.started_at,
            remaining_seconds: (self.expires_at - unix_now() as i64).max(0),
            expires_at: self.expires_at,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ProcState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, progress: LoginProgress) -> LoginUpdate {
        let mut timeout = self.timeout();
        if matches!(progress, LoginProgress::Expired) {
            // Expired early at the bridge: nothing remains, whatever the local clock says.
            timeout.remaining_seconds = 0;
            let at = self.expired_at.load(Ordering::Relaxed);
            if at > 0 {
                timeout.expires_at = timeout.expires_at.min(at);
            }
        }
        LoginUpdate {
            process_id: self.id.clone(),
            progress,
            timeout,
        }
    }

    fn mark_expired(&self, s: &mut ProcState) {
        s.expired = true;
        let _ = self.expired_at.compare_exchange(
            0,
            unix_now() as i64,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The process's settled outcome, if it has one (completed, failed, expired).
    fn settled(&self, s: &mut ProcState) -> Option<AppResult<LoginProgress>> {
        if let Some(c) = &s.completion {
            return Some(Ok(LoginProgress::Complete(c.clone())));
        }
        if let Some(e) = &s.failure {
            return Some(Err(bridge_error(
                e.clone(),
                ErrorCode::LoginProcessNotFound,
            )));
        }
        if s.expired || unix_now() as i64 >= self.expires_at {
            self.mark_expired(s);
            return Some(Ok(LoginProgress::Expired));
        }
        None
    }
}

// ---------------------------------------------------------------------------------------
// Logout and the deprecated routes

/// Logs out one login (or all with `None`) at the bridge and removes it from the record.
/// A login the record knows but the bridge no longer has is just removed; one neither
/// knows is 404 `login_not_found`. Returns the removed login ids.
pub async fn logout(
    state: &Context,
    user_id: &str,
    platform: Platform,
    login_id: Option<&str>,
) -> AppResult<Vec<String>> {
    if let Some(id) = login_id {
        validate_id("loginId", id)?;
    }
    let client = state.bridges.clients.get(platform)?.clone();
    let (user, mxid) = acting_user(state, user_id).await?;
    match client.logout(&mxid, login_id).await {
        Ok(()) => {}
        Err(e) if e.failure() == Failure::NotFound => {
            let known = stored_logins(state, &user, platform).await?;
            if let Some(id) = login_id {
                if !known.iter().any(|l| l.id == id) {
                    return Err(bridge_error(e, ErrorCode::LoginNotFound));
                }
            }
        }
        Err(e) => return Err(bridge_error(e, ErrorCode::LoginNotFound)),
    }
    let mut removed = forget_logins(state, user_id, platform, login_id).await?;
    if let Some(id) = login_id {
        if removed.is_empty() {
            // Logged out at the bridge though never recorded here.
            publish_state(
                state,
                user_id,
                platform,
                StateChange {
                    login_id: id.to_owned(),
                    state_event: "LOGGED_OUT".into(),
                    error: None,
                },
            );
            removed.push(id.to_owned());
        }
    }
    Ok(removed)
}

/// `DELETE /api/bridges/{platform}`: logs out every login and forgets the user's login
/// processes on the platform.
pub async fn remove(state: &Context, user_id: &str, platform: Platform) -> AppResult<Vec<String>> {
    let removed = logout(state, user_id, platform, None).await?;
    let stale: Vec<_> = state
        .bridges
        .processes
        .iter()
        .filter(|(k, _)| k.0 == user_id && k.1 == platform)
        .map(|(k, _)| (*k).clone())
        .collect();
    for key in stale {
        state.bridges.processes.invalidate(&key).await;
    }
    Ok(removed)
}

/// Bridge ids go into the provisioning API's URL paths: besides their own limits they
/// must be path segments (`clients::segment`: no `.` or `..`), checked before any call.
fn validate_id(field: &str, value: &str) -> AppResult<()> {
    if value.trim().is_empty() {
        return Err(AppError::invalid(field, "must not be empty"));
    }
    crate::clients::segment::check(field, value)
        .map_err(|e| AppError::invalid(&e.field, e.reason))?;
    if value.len() > 255 || value.chars().any(char::is_control) {
        return Err(AppError::invalid(
            field,
            "must be at most 255 characters without control characters",
        ));
    }
    Ok(())
}

mod login;
mod login_wait;
mod record;
mod status;
pub use login::{connect, flows, pick_flow, start_login, submit_step, Connected};
pub use login_wait::wait_step;
pub use record::parse_platform;
use record::*;
use status::*;
pub use status::{
    all_statuses, chat_counts, live_status, platform_status, sync_health, SyncHealth,
};
