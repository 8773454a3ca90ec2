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
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::clients::provisioning::{
    BridgeClients, BridgeError, Failure, LoginFlow, LoginStep, Platform, WhoamiLogin,
};
use crate::clock::unix_now;
use crate::config::BridgesConfig;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::events;
use crate::services::users;
use crate::state::AppState;
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
            return Some(Err(e.clone().into_app("login_process_not_found")));
        }
        if s.expired || unix_now() as i64 >= self.expires_at {
            self.mark_expired(s);
            return Some(Ok(LoginProgress::Expired));
        }
        None
    }
}

// ---------------------------------------------------------------------------------------
// Users and the local record

/// Parses a `{platform}` path value: 400 `invalid_platform` outside the three.
pub fn parse_platform(value: &str) -> AppResult<Platform> {
    Platform::parse(value).ok_or_else(|| {
        AppError::bad_request(
            "invalid_platform",
            format!("platform: {value:?} is not one of whatsapp, telegram, discord"),
        )
    })
}

/// The user and the Matrix ID the bridge acts for (created first if missing).
async fn acting_user(state: &AppState, user_id: &str) -> AppResult<(UserRow, String)> {
    let mut user = users::load(state, user_id).await?;
    if user.matrix_user_id.is_none() {
        user = crate::services::auth::ensure_matrix_account(state, user).await?;
    }
    match user.matrix_user_id.clone() {
        Some(mxid) => Ok((user, mxid)),
        None => Err(AppError::Unavailable {
            code: "matrix_account_missing",
            message: "the account has no Matrix user (no homeserver is configured), so no \
                      bridge can act for it"
                .into(),
        }),
    }
}

fn row_key(user_id: &str, platform: Platform, login_id: &str) -> String {
    format!("{user_id}/{}/{login_id}", platform.id())
}

fn open_row(dek: Option<&DataKey>, row: &BridgeLoginRow) -> LoginInfo {
    let key = format!("{}/{}/{}", row.user_id, row.platform, row.login_id);
    let open = |column: &str, sealed: Option<&Vec<u8>>| -> Option<String> {
        dek?.open_string(sealed?, &Aad::new("bridge_logins", column, &key))
            .ok()
    };
    let remote_profile = open("remote_profile", row.remote_profile_enc.as_ref())
        .and_then(|s| serde_json::from_str::<serde_json::Map<String, Value>>(&s).ok())
        .unwrap_or_default();
    LoginInfo {
        id: row.login_id.clone(),
        remote_name: open("remote_name", row.remote_name_enc.as_ref()).filter(|n| !n.is_empty()),
        remote_profile,
        logged_in: !LOGGED_OUT_STATES.contains(&row.state_event.as_str()),
        state_event: row.state_event.clone(),
        error: row.error.clone().or_else(|| row.error_code.clone()),
        error_code: row.error_code.clone(),
        updated_at: row.updated_at,
    }
}

/// The stored logins of the user on a platform.
async fn stored_logins(
    state: &AppState,
    user: &UserRow,
    platform: Platform,
) -> AppResult<Vec<LoginInfo>> {
    let uid = user.id.clone();
    let rows = state
        .store
        .run(move |c| Ok::<_, AppError>(bridge_logins::list(c, &uid, platform.id())?))
        .await?;
    let dek = users::data_key(&state.master, user).ok();
    Ok(rows.iter().map(|r| open_row(dek.as_ref(), r)).collect())
}

/// What the bridge says about one login, in the record's terms.
struct Observed {
    login_id: String,
    remote_name: String,
    remote_profile: serde_json::Map<String, Value>,
    state_event: String,
    error_code: Option<String>,
    error: Option<String>,
    state_ts: Option<i64>,
}

impl Observed {
    fn from_whoami(l: &WhoamiLogin) -> Self {
        let state = l.state.clone().unwrap_or_default();
        let nonempty = |s: Option<String>| s.filter(|v| !v.trim().is_empty());
        let profile = match &l.profile {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        };
        Self {
            login_id: l.id.clone(),
            remote_name: l.name.clone(),
            remote_profile: profile,
            state_event: l.state_event().to_owned(),
            error_code: nonempty(state.error),
            error: nonempty(state.message),
            state_ts: state.timestamp.filter(|t| *t > 0.0).map(|t| t as i64),
        }
    }
}

/// A `bridge.state` change to publish.
struct StateChange {
    login_id: String,
    state_event: String,
    error: Option<String>,
}

/// Writes `observed` into the local record of `platform` and publishes a `bridge.state`
/// event per changed or added login; with `complete` (`observed` is the bridge's whole
/// whoami list) logins missing from it are removed and published as `LOGGED_OUT`.
async fn reconcile(
    state: &AppState,
    user: &UserRow,
    platform: Platform,
    observed: Vec<Observed>,
    complete: bool,
) -> AppResult<()> {
    let master = state.master.clone();
    let uid = user.id.clone();
    let now = unix_now() as i64;
    let changes = state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Sealed under the data key as it is in this transaction (`user` was read before
            // the bridge round trip; the keys may have been deleted since).
            let current =
                crate::store::users::find(&tx, &uid)?.ok_or_else(|| AppError::not_found("user"))?;
            let dek = users::data_key(&master, &current)?;
            let old = bridge_logins::list(&tx, &uid, platform.id())?;
            let mut changes = Vec::new();
            for o in &observed {
                let key = row_key(&uid, platform, &o.login_id);
                let prev = old.iter().find(|r| r.login_id == o.login_id);
                let same_state = prev.is_some_and(|p| {
                    p.state_event == o.state_event
                        && p.error == o.error
                        && p.error_code == o.error_code
                });
                let same_info = prev.is_some_and(|p| {
                    let info = open_row(Some(&dek), p);
                    info.remote_name.unwrap_or_default() == o.remote_name
                        && info.remote_profile == o.remote_profile
                        && p.state_ts == o.state_ts
                });
                if !same_state {
                    changes.push(StateChange {
                        login_id: o.login_id.clone(),
                        state_event: o.state_event.clone(),
                        error: o.error.clone().or_else(|| o.error_code.clone()),
                    });
                }
                if same_state && same_info {
                    continue;
                }
                bridge_logins::upsert(
                    &tx,
                    &BridgeLoginRow {
                        user_id: uid.clone(),
                        platform: platform.id().to_owned(),
                        login_id: o.login_id.clone(),
                        remote_name_enc: Some(dek.seal_str(
                            &o.remote_name,
                            &Aad::new("bridge_logins", "remote_name", &key),
                        )),
                        remote_profile_enc: Some(dek.seal_str(
                            &Value::Object(o.remote_profile.clone()).to_string(),
                            &Aad::new("bridge_logins", "remote_profile", &key),
                        )),
                        state_event: o.state_event.clone(),
                        error_code: o.error_code.clone(),
                        error: o.error.clone(),
                        state_ts: o.state_ts,
                        created_at: prev.map_or(now, |p| p.created_at),
                        updated_at: now,
                    },
                )?;
            }
            let missing = old
                .iter()
                .filter(|r| complete && !observed.iter().any(|o| o.login_id == r.login_id));
            for gone in missing {
                bridge_logins::delete(&tx, &uid, platform.id(), &gone.login_id)?;
                changes.push(StateChange {
                    login_id: gone.login_id.clone(),
                    state_event: "LOGGED_OUT".into(),
                    error: None,
                });
            }
            tx.commit()?;
            Ok::<_, AppError>(changes)
        })
        .await?;
    for change in changes {
        publish_state(state, &user.id, platform, change);
    }
    Ok(())
}

fn publish_state(state: &AppState, user_id: &str, platform: Platform, change: StateChange) {
    state.events.publish(
        user_id,
        events::kind::BRIDGE_STATE,
        json!({
            "platform": platform.id(),
            "loginId": change.login_id,
            "stateEvent": change.state_event,
            "error": change.error,
        }),
    );
}

/// Removes logins from the record (after a logout) and publishes them as `LOGGED_OUT`.
async fn forget_logins(
    state: &AppState,
    user_id: &str,
    platform: Platform,
    login_id: Option<&str>,
) -> AppResult<Vec<String>> {
    let uid = user_id.to_owned();
    let only = login_id.map(str::to_owned);
    let removed = state
        .store
        .run(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let ids: Vec<String> = bridge_logins::list(&tx, &uid, platform.id())?
                .into_iter()
                .map(|r| r.login_id)
                .filter(|id| only.as_ref().is_none_or(|o| o == id))
                .collect();
            for id in &ids {
                bridge_logins::delete(&tx, &uid, platform.id(), id)?;
            }
            tx.commit()?;
            Ok::<_, AppError>(ids)
        })
        .await?;
    state
        .bridges
        .snapshots
        .invalidate(&(user_id.to_owned(), platform))
        .await;
    for id in &removed {
        publish_state(
            state,
            user_id,
            platform,
            StateChange {
                login_id: id.clone(),
                state_event: "LOGGED_OUT".into(),
                error: None,
            },
        );
    }
    Ok(removed)
}

// ---------------------------------------------------------------------------------------
// Status

/// The bridge's whoami for the user, through the cache; a fresh answer is reconciled into
/// the record. `fresh` skips the cache.
async fn snapshot(
    state: &AppState,
    user: &UserRow,
    mxid: &str,
    platform: Platform,
    fresh: bool,
) -> Arc<Snapshot> {
    let key = (user.id.clone(), platform);
    if fresh {
        state.bridges.snapshots.invalidate(&key).await;
    }
    state
        .bridges
        .snapshots
        .get_with(key, async {
            let result = match state.bridges.clients.get(platform) {
                Ok(client) => client.whoami(mxid).await,
                Err(e) => Err(e),
            };
            if let Ok(whoami) = &result {
                let observed = whoami.logins.iter().map(Observed::from_whoami).collect();
                if let Err(e) = reconcile(state, user, platform, observed, true).await {
                    tracing::warn!(platform = platform.id(), error = %e, "could not record bridge logins");
                }
            } else if let Err(e) = &result {
                tracing::warn!(platform = platform.id(), error = %e, "bridge whoami failed");
            }
            Arc::new(Snapshot {
                checked_at: unix_now() as i64,
                result,
            })
        })
        .await
}

async fn status_of(
    state: &AppState,
    user: &UserRow,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    let configured = state.bridges.clients.is_configured(platform);
    let (reachable, last_checked_at, problem) = match (&user.matrix_user_id, configured) {
        (_, false) => (false, None, None),
        (None, true) => (
            false,
            None,
            Some("the account has no Matrix user yet".to_owned()),
        ),
        (Some(mxid), true) => {
            let snap = snapshot(state, user, mxid, platform, false).await;
            match &snap.result {
                Ok(_) => (true, Some(snap.checked_at), None),
                Err(e) => (false, Some(snap.checked_at), Some(e.public_message())),
            }
        }
    };
    let logins = stored_logins(state, user, platform).await?;
    Ok(PlatformStatus {
        platform,
        configured,
        reachable,
        connected: logins.iter().any(LoginInfo::is_connected),
        logins,
        last_checked_at,
        problem,
    })
}

/// One platform: configuration, reachability (live whoami through the cache) and the
/// logins; degrades to the stored logins when the bridge cannot be read.
pub async fn platform_status(
    state: &AppState,
    user_id: &str,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    let user = users::load(state, user_id).await?;
    status_of(state, &user, platform).await
}

/// All three platforms, read concurrently.
pub async fn all_statuses(state: &AppState, user_id: &str) -> AppResult<Vec<PlatformStatus>> {
    let user = users::load(state, user_id).await?;
    let reads = Platform::ALL.map(|p| status_of(state, &user, p));
    futures_util::future::join_all(reads)
        .await
        .into_iter()
        .collect()
}

/// The live status: errors (503/502) when the bridge cannot be read.
pub async fn live_status(
    state: &AppState,
    user_id: &str,
    platform: Platform,
) -> AppResult<PlatformStatus> {
    state.bridges.clients.get(platform)?;
    let (user, mxid) = acting_user(state, user_id).await?;
    let snap = snapshot(state, &user, &mxid, platform, false).await;
    if let Err(e) = &snap.result {
        return Err(e.clone().into());
    }
    let mut status = status_of(state, &user, platform).await?;
    status.last_checked_at = Some(snap.checked_at);
    Ok(status)
}

/// Visible non-archived conversations per platform, counted by the room list's own
/// filter ([`crate::services::rooms::visible_room_counts_by_platform`]).
pub async fn chat_counts(state: &AppState, user_id: &str) -> AppResult<Vec<(Platform, i64)>> {
    let counts = crate::services::rooms::visible_room_counts_by_platform(state, user_id).await?;
    Ok(Platform::ALL
        .into_iter()
        .map(|p| (p, counts.get(p.id()).copied().unwrap_or(0)))
        .collect())
}

// ---------------------------------------------------------------------------------------
// Logout and the deprecated routes

/// Logs out one login (or all with `None`) at the bridge and removes it from the record.
/// A login the record knows but the bridge no longer has is just removed; one neither
/// knows is 404 `login_not_found`. Returns the removed login ids.
pub async fn logout(
    state: &AppState,
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
                    return Err(e.into_app("login_not_found"));
                }
            }
        }
        Err(e) => return Err(e.into_app("login_not_found")),
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
pub async fn remove(state: &AppState, user_id: &str, platform: Platform) -> AppResult<Vec<String>> {
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

fn validate_id(field: &str, value: &str) -> AppResult<()> {
    if value.trim().is_empty() {
        return Err(AppError::invalid(field, "must not be empty"));
    }
    if value.len() > 255 || value.chars().any(char::is_control) {
        return Err(AppError::invalid(
            field,
            "must be at most 255 characters without control characters",
        ));
    }
    Ok(())
}

mod login;
pub use login::{connect, flows, pick_flow, start_login, submit_step, wait_step, Connected};
