//! Request and response objects of the bridge routes.

use super::*;

/// One login (remote account) at a bridge.
#[derive(Debug, Clone, Object)]
#[oai(rename = "BridgeLogin", rename_all = "camelCase")]
pub struct BridgeLogin {
    /// The bridge's login id (`user_login_id`), e.g. the WhatsApp phone number.
    pub id: String,
    /// Human-readable name of the remote account (phone number, username).
    pub remote_name: Option<String>,
    /// Profile of the remote account as the bridge reports it: `phone`, `email`,
    /// `username`, `name`, `avatar` (each optional).
    pub remote_profile: BTreeMap<String, Value>,
    /// False when the bridge reports `BAD_CREDENTIALS` or `LOGGED_OUT` (log in again,
    /// passing this id as `loginId` to `login/start`).
    pub logged_in: bool,
    /// The bridge state of the login: `CONNECTED`, `CONNECTING`, `BACKFILLING`,
    /// `TRANSIENT_DISCONNECT`, `BAD_CREDENTIALS`, `UNKNOWN_ERROR`, … (empty when the
    /// bridge has reported none yet).
    pub state_event: String,
    /// Human-readable problem reported with the state, if any.
    pub error: Option<String>,
    /// The network's error code for the state, e.g. `wa-logged-out`.
    pub error_code: Option<String>,
    /// When the local record of this login last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<LoginInfo> for BridgeLogin {
    fn from(l: LoginInfo) -> Self {
        Self {
            id: l.id,
            remote_name: l.remote_name,
            remote_profile: l.remote_profile.into_iter().collect(),
            logged_in: l.logged_in,
            state_event: l.state_event,
            error: l.error,
            error_code: l.error_code,
            updated_at: time(l.updated_at),
        }
    }
}

/// One platform's bridge as the caller sees it.
#[derive(Debug, Object)]
#[oai(rename = "Bridge", rename_all = "camelCase")]
pub struct BridgeStatus {
    /// `whatsapp`, `telegram` or `discord`.
    pub platform: String,
    /// `WhatsApp`, `Telegram` or `Discord`.
    pub name: String,
    /// Whether the server has a provisioning URL for this platform.
    pub configured: bool,
    /// Whether the bridge answered its whoami within the timeout at `lastCheckedAt`
    /// (read live, through a cache of at most 10 s).
    pub reachable: bool,
    /// Whether a login is `CONNECTED` (or `BACKFILLING`).
    pub connected: bool,
    /// The caller's logins; when the bridge is unreachable, as last recorded.
    pub logins: Vec<BridgeLogin>,
    /// When the bridge was last asked; null when unconfigured.
    pub last_checked_at: Option<DateTime<Utc>>,
    /// Why the bridge could not be read, when it could not.
    pub problem: Option<String>,
    /// For a platform that is not configured: where the documentation explains how to run
    /// its mautrix bridge and configure it here, `docs/operations.md#bridges` (in the source
    /// tree, and under `/usr/share/doc/switchboard/` from the Debian package). Null once
    /// configured. The web app shows it to administrators.
    pub setup_docs: Option<String>,
}

/// The section of the operations guide on running and configuring the bridges.
pub const BRIDGE_SETUP_DOCS: &str = "docs/operations.md#bridges";

impl From<PlatformStatus> for BridgeStatus {
    fn from(s: PlatformStatus) -> Self {
        Self {
            platform: s.platform.id().to_owned(),
            name: s.platform.name().to_owned(),
            configured: s.configured,
            reachable: s.reachable,
            connected: s.connected,
            logins: s.logins.into_iter().map(Into::into).collect(),
            last_checked_at: s.last_checked_at.map(time),
            problem: s.problem,
            setup_docs: (!s.configured).then(|| BRIDGE_SETUP_DOCS.to_owned()),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeList")]
pub struct BridgeList {
    /// WhatsApp, Telegram and Discord, in that order, configured or not.
    pub bridges: Vec<BridgeStatus>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeDashboard", rename_all = "camelCase")]
pub struct BridgeDashboard {
    /// WhatsApp, Telegram and Discord, in that order, configured or not.
    pub bridges: Vec<BridgeStatus>,
    /// The user's Matrix sync, which brings every bridged message in.
    pub matrix_sync: MatrixSyncHealth,
    pub generated_at: DateTime<Utc>,
}

#[derive(Debug, Object)]
#[oai(rename = "MatrixSyncHealth", rename_all = "camelCase")]
pub struct MatrixSyncHealth {
    /// False while the last sync attempt failed (the worker retries with backoff; from a
    /// minute up to an hour when end-to-end encryption cannot start).
    pub healthy: bool,
    /// The last successful sync; null before the first.
    pub last_sync_at: Option<DateTime<Utc>>,
    /// The error code of the failing attempt (e.g. `homeserver_unavailable`,
    /// `encryption_unavailable`); null while healthy.
    pub error_code: Option<String>,
}

impl From<crate::services::bridges::SyncHealth> for MatrixSyncHealth {
    fn from(h: crate::services::bridges::SyncHealth) -> Self {
        Self {
            healthy: h.error_code.is_none() && h.last_ok_at.is_some(),
            last_sync_at: crate::api::views::opt_time(h.last_ok_at),
            error_code: h.error_code,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConfiguredPlatform")]
pub struct ConfiguredPlatform {
    /// `whatsapp`, `telegram` or `discord`.
    pub id: String,
    /// `WhatsApp`, `Telegram` or `Discord`.
    pub name: String,
    pub configured: bool,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConfiguredPlatforms")]
pub struct ConfiguredPlatforms {
    pub platforms: Vec<ConfiguredPlatform>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeChatCount")]
pub struct ChatCount {
    /// `whatsapp`, `telegram` or `discord`; `matrix` for plain Matrix rooms (no bridge).
    pub platform: String,
    pub name: String,
    /// Visible non-archived conversations (joined or invited) of the platform: the filter
    /// of the room list.
    pub count: i64,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeChatCounts")]
pub struct ChatCounts {
    pub counts: Vec<ChatCount>,
    /// Sum of `counts`: every conversation the default room list shows.
    pub total: i64,
}

/// Live status read from the bridge.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLiveStatus", rename_all = "camelCase")]
pub struct LiveStatus {
    pub platform: String,
    /// Whether a login is `CONNECTED` (or `BACKFILLING`).
    pub connected: bool,
    pub logins: Vec<BridgeLogin>,
    /// When the bridge answered (the answer is reused for at most 10 s).
    pub checked_at: Option<DateTime<Utc>>,
}
