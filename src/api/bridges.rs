//! `/api/bridges/*`: the caller's connections to WhatsApp, Telegram and Discord through
//! the mautrix bridges' provisioning API, and the interactive login flows.
//!
//! Personal API tokens may use the read-only routes `GET /api/bridges`,
//! `/api/bridges/configured`, `/api/bridges/dashboard` and `/api/bridges/chat-counts`;
//! every other route answers them 403 `forbidden_for_api_token`.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use serde_json::Value;

use super::security::BearerAuth;
use super::views::{time, MessageResponse};
use super::ApiTags;
use crate::bridges::{LoginStep, Platform};
use crate::error::AppError;
use crate::services::bridges::{
    self as service, LoginInfo, LoginProgress, LoginUpdate, PlatformStatus, ProcessTimeout,
    WAIT_MAX,
};
use crate::state::AppState;

/// Value of the `Deprecation` header on the deprecated routes.
const DEPRECATED: &str = "true";

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
}

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
    pub generated_at: DateTime<Utc>,
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
    /// `whatsapp`, `telegram` or `discord`.
    pub platform: String,
    pub name: String,
    /// Visible non-archived conversations bridged from the platform (the filter of the
    /// room list).
    pub count: i64,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeChatCounts")]
pub struct ChatCounts {
    pub counts: Vec<ChatCount>,
    /// Sum of `counts`.
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

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginFlow")]
pub struct LoginFlow {
    /// Pass as `flowId` to `login/start`, e.g. `qr`, `phone`, `token`.
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginFlows")]
pub struct LoginFlows {
    pub flows: Vec<LoginFlow>,
}

/// What a `display_and_wait` step shows.
#[derive(Debug, Object)]
#[oai(rename = "BridgeDisplayAndWait", rename_all = "camelCase")]
pub struct DisplayAndWait {
    /// `qr` (render `data` as a QR code), `emoji`, `code` (show `data` to type in
    /// elsewhere) or `nothing`.
    #[oai(rename = "type")]
    pub display_type: String,
    pub data: Option<String>,
    /// An image of the thing to show; preferred over `data` when present.
    pub image_url: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeStepComplete", rename_all = "camelCase")]
pub struct StepComplete {
    /// The new login's id.
    pub user_login_id: String,
}

/// One step of a login process. Exactly one of `displayAndWait`, `userInput`, `cookies`
/// and `complete` is set, by `type`.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStep", rename_all = "camelCase")]
pub struct LoginStepObject {
    /// Stable id of the step, e.g. `fi.mau.whatsapp.login.qr`; send it back with the step.
    pub step_id: String,
    /// `display_and_wait` (show, then call `login/wait`), `user_input` or `cookies`
    /// (collect the fields, then call `login/step`), `complete`; `webauthn` and
    /// `client_http` steps are not supported by this API.
    #[oai(rename = "type")]
    pub step_type: String,
    /// Human-readable instructions for the step (may be empty).
    pub instructions: String,
    pub display_and_wait: Option<DisplayAndWait>,
    /// The bridge's `user_input` object as is: `{"fields": [{"type", "id", "name",
    /// "description", "pattern"?, "default_value"?, "options"?}], "attachments"?}`. Submit
    /// `data` keyed by the field ids.
    pub user_input: Option<BTreeMap<String, Value>>,
    /// The bridge's `cookies` object as is: `{"url", "user_agent"?, "fields": [{"id",
    /// "required", "sources": [{"type", "name", …}]}], "extract_js"?}`. Submit `data`
    /// keyed by the field ids.
    pub cookies: Option<BTreeMap<String, Value>>,
    pub complete: Option<StepComplete>,
}

fn object(value: Option<Value>) -> Option<BTreeMap<String, Value>> {
    match value? {
        Value::Object(map) => Some(map.into_iter().collect()),
        _ => None,
    }
}

impl From<LoginStep> for LoginStepObject {
    fn from(s: LoginStep) -> Self {
        let display_and_wait = s.display_and_wait.as_ref().map(|d| DisplayAndWait {
            display_type: d["type"].as_str().unwrap_or_default().to_owned(),
            data: d["data"].as_str().map(str::to_owned),
            image_url: d["image_url"].as_str().map(str::to_owned),
        });
        Self {
            step_id: s.step_id,
            step_type: s.step_type,
            instructions: s.instructions,
            display_and_wait,
            user_input: object(s.user_input),
            cookies: object(s.cookies),
            complete: s.complete.map(|c| StepComplete {
                user_login_id: c.user_login_id,
            }),
        }
    }
}

/// The expiry of a login process.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginTimeout", rename_all = "camelCase")]
pub struct LoginTimeout {
    /// Lifetime of the login process (30 minutes).
    pub total_seconds: i64,
    /// Seconds left; 0 once expired.
    pub remaining_seconds: i64,
    pub expires_at: DateTime<Utc>,
}

impl From<ProcessTimeout> for LoginTimeout {
    fn from(t: ProcessTimeout) -> Self {
        Self {
            total_seconds: t.total_seconds,
            remaining_seconds: t.remaining_seconds,
            expires_at: time(t.expires_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStartRequest", rename_all = "camelCase")]
pub struct LoginStartRequest {
    /// A flow id from `GET /api/bridges/{platform}/flows`.
    pub flow_id: String,
    /// To re-authenticate an existing login (e.g. after `BAD_CREDENTIALS`), its id.
    pub login_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStarted", rename_all = "camelCase")]
pub struct LoginStarted {
    /// The bridge's login process id; pass it to `login/step` and `login/wait`.
    pub login_process_id: String,
    /// The first step.
    pub step: LoginStepObject,
    pub timeout: LoginTimeout,
}

#[derive(Debug, Enum)]
#[oai(rename = "BridgeSubmitStepType", rename_all = "snake_case")]
pub enum SubmitStepType {
    UserInput,
    Cookies,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginStepRequest", rename_all = "camelCase")]
pub struct LoginStepRequest {
    pub login_process_id: String,
    /// The `stepId` of the step being submitted.
    pub step_id: String,
    /// The `type` of the step being submitted.
    pub step_type: SubmitStepType,
    /// Field values keyed by field id (the ids in `userInput.fields` / `cookies.fields`).
    pub data: BTreeMap<String, String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginWaitRequest", rename_all = "camelCase")]
pub struct LoginWaitRequest {
    pub login_process_id: String,
    /// The `stepId` of the `display_and_wait` step being shown.
    pub step_id: String,
    /// How long to wait for news, 1 to 60 seconds (default 60).
    pub timeout_seconds: Option<i64>,
}

/// Where a login process stands.
#[derive(Debug, Object)]
#[oai(rename = "BridgeLoginProgress", rename_all = "camelCase")]
pub struct LoginProgressObject {
    /// True once the login succeeded (`loginId` and `userInfo` set).
    pub complete: bool,
    /// True when the login process timed out (at the bridge or after `timeout.totalSeconds`);
    /// start a new login.
    pub expired: bool,
    /// The next (or, when nothing changed during a wait, the current) step; null when
    /// complete or expired.
    pub step: Option<LoginStepObject>,
    /// The bridge's id of the new login (`user_login_id`).
    pub login_id: Option<String>,
    /// The new login as recorded (name, profile, state).
    pub user_info: Option<BridgeLogin>,
    pub timeout: LoginTimeout,
}

impl From<LoginUpdate> for LoginProgressObject {
    fn from(u: LoginUpdate) -> Self {
        let timeout = u.timeout.into();
        match u.progress {
            LoginProgress::Step(step) => Self {
                complete: false,
                expired: false,
                step: Some(step.into()),
                login_id: None,
                user_info: None,
                timeout,
            },
            LoginProgress::Complete(c) => Self {
                complete: true,
                expired: false,
                step: None,
                login_id: Some(c.login_id),
                user_info: Some(c.user_info.into()),
                timeout,
            },
            LoginProgress::Expired => Self {
                complete: false,
                expired: true,
                step: None,
                login_id: None,
                user_info: None,
                timeout,
            },
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeLogoutRequest", rename_all = "camelCase")]
pub struct LogoutRequest {
    /// The login to log out; omitted: every login on the platform.
    pub login_id: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConnectTimeout")]
pub struct ConnectTimeout {
    /// Lifetime of the login process in seconds.
    pub seconds: i64,
    #[oai(rename = "expiresAt")]
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Object)]
#[oai(rename = "BridgeConnectResult", rename_all = "camelCase")]
pub struct ConnectResult {
    /// `qr` (show `qrCode`, then call `login/wait`), `phone` (the step asks for the phone
    /// number) or `flow` (another flow: follow `step`).
    pub method: String,
    /// The flow that was started.
    pub flow_id: String,
    /// The QR code payload to render, for `qr`.
    pub qr_code: Option<String>,
    pub login_process_id: String,
    pub step_id: String,
    /// The first step, as `login/start` returns it.
    pub step: Option<LoginStepObject>,
    pub timeout: ConnectTimeout,
}

#[derive(ApiResponse)]
enum ConnectResponse {
    /// The login was started. Deprecated: use `flows` and `login/start`.
    #[oai(status = 200)]
    Ok(Json<ConnectResult>, #[oai(header = "Deprecation")] String),
}

#[derive(ApiResponse)]
enum DisconnectResponse {
    /// Every login was logged out. Deprecated: use `logout`.
    #[oai(status = 200)]
    Ok(Json<MessageResponse>, #[oai(header = "Deprecation")] String),
}

fn platform_of(value: &str) -> Result<Platform, AppError> {
    service::parse_platform(value)
}

fn logout_message(platform: Platform, removed: &[String], one: bool) -> String {
    match (one, removed.len()) {
        (true, _) => format!(
            "logged out of {} login {}",
            platform.name(),
            removed.join(", ")
        ),
        (false, 0) => format!("no {} logins to log out", platform.name()),
        (false, n) => format!("logged out of {n} {} login(s)", platform.name()),
    }
}

pub struct BridgesApi;

#[OpenApi(prefix_path = "/api/bridges", tag = "ApiTags::Bridges")]
impl BridgesApi {
    /// List the bridges
    ///
    /// WhatsApp, Telegram and Discord with, for each: whether it is configured, whether
    /// the bridge is reachable (its whoami, read live through a cache of at most 10 s),
    /// whether a login is connected, and the caller's logins with their state. When a
    /// bridge is unreachable its logins are the last recorded ones (`reachable` false,
    /// `problem` says why); the list itself never fails because of a bridge. Allowed
    /// for personal API tokens.
    #[oai(path = "/", method = "get", operation_id = "bridges_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
    ) -> Result<Json<BridgeList>, AppError> {
        let statuses = service::all_statuses(&state, auth.user_id()).await?;
        Ok(Json(BridgeList {
            bridges: statuses.into_iter().map(Into::into).collect(),
        }))
    }

    /// The platforms and whether each is configured
    ///
    /// All three platforms; `configured` is true when the server has a provisioning URL
    /// for the platform's bridge. Allowed for personal API tokens.
    #[oai(
        path = "/configured",
        method = "get",
        operation_id = "bridges_configured"
    )]
    async fn configured(
        &self,
        state: Data<&AppState>,
        _auth: BearerAuth,
    ) -> Json<ConfiguredPlatforms> {
        Json(ConfiguredPlatforms {
            platforms: Platform::ALL
                .into_iter()
                .map(|p| ConfiguredPlatform {
                    id: p.id().to_owned(),
                    name: p.name().to_owned(),
                    configured: state.bridges.clients.is_configured(p),
                })
                .collect(),
        })
    }

    /// Bridge health and connection status
    ///
    /// Per platform: configured, reachable (a live whoami answered within its timeout,
    /// through a cache of at most 10 s), connected, the logins with their `stateEvent`,
    /// and `lastCheckedAt`. Never fails because of a bridge. Allowed for personal API
    /// tokens.
    #[oai(
        path = "/dashboard",
        method = "get",
        operation_id = "bridges_dashboard"
    )]
    async fn dashboard(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
    ) -> Result<Json<BridgeDashboard>, AppError> {
        let statuses = service::all_statuses(&state, auth.user_id()).await?;
        Ok(Json(BridgeDashboard {
            bridges: statuses.into_iter().map(Into::into).collect(),
            generated_at: Utc::now(),
        }))
    }

    /// Conversation counts per platform
    ///
    /// Per platform, the number of visible non-archived conversations: the same filter as
    /// the default room list, so the counts match what `GET /api/rooms` shows. Allowed for
    /// personal API tokens.
    #[oai(
        path = "/chat-counts",
        method = "get",
        operation_id = "bridges_chat_counts"
    )]
    async fn chat_counts(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
    ) -> Result<Json<ChatCounts>, AppError> {
        let counts = service::chat_counts(&state, auth.user_id()).await?;
        Ok(Json(ChatCounts {
            total: counts.iter().map(|(_, n)| n).sum(),
            counts: counts
                .into_iter()
                .map(|(p, count)| ChatCount {
                    platform: p.id().to_owned(),
                    name: p.name().to_owned(),
                    count,
                })
                .collect(),
        }))
    }

    /// One bridge
    ///
    /// The bridge of `platform` as in `GET /api/bridges` (200 with `configured` false for
    /// an unconfigured platform). 400 `invalid_platform` outside whatsapp, telegram,
    /// discord.
    #[oai(path = "/:platform", method = "get", operation_id = "bridges_get")]
    async fn get(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<Json<BridgeStatus>, AppError> {
        let platform = platform_of(&platform)?;
        Ok(Json(
            service::platform_status(&state, auth.user_id(), platform)
                .await?
                .into(),
        ))
    }

    /// Remove the bridge connection
    ///
    /// Logs out every login of the caller at the bridge, removes the local records and
    /// forgets pending login processes. 503 `bridge_not_configured` for an unconfigured
    /// platform, 503 `bridge_unavailable` when the bridge cannot be reached (nothing is
    /// removed then), 502 `bridge_error` when it fails.
    #[oai(
        path = "/:platform",
        method = "delete",
        operation_id = "bridges_delete"
    )]
    async fn delete(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let platform = platform_of(&platform)?;
        let removed = service::remove(&state, auth.user_id(), platform).await?;
        Ok(Json(MessageResponse::new(format!(
            "the {} bridge connection was removed ({})",
            platform.name(),
            logout_message(platform, &removed, false)
        ))))
    }

    /// Login flows of a bridge
    ///
    /// The flows the bridge offers (e.g. WhatsApp `qr` and `phone`, Telegram `phone` and
    /// `qr`, Discord `token`), read live. 503 `bridge_not_configured` /
    /// `bridge_unavailable`, 502 `bridge_error`.
    #[oai(
        path = "/:platform/flows",
        method = "get",
        operation_id = "bridges_flows"
    )]
    async fn flows(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<Json<LoginFlows>, AppError> {
        let platform = platform_of(&platform)?;
        let flows = service::flows(&state, auth.user_id(), platform).await?;
        Ok(Json(LoginFlows {
            flows: flows
                .into_iter()
                .map(|f| LoginFlow {
                    id: f.id,
                    name: f.name,
                    description: f.description,
                })
                .collect(),
        }))
    }

    /// Start a login
    ///
    /// Starts a login process with the flow `flowId` (pass `loginId` to re-authenticate
    /// an existing login) and returns its id, the first step and the process's expiry
    /// (30 minutes). Then: for `display_and_wait` steps call `login/wait`; for
    /// `user_input` and `cookies` steps call `login/step`. 400 `invalid_flow` for a flow
    /// the bridge does not offer; 404 `login_not_found` for an unknown `loginId`; 409
    /// `too_many_logins` when the bridge allows no more logins; 429 `rate_limited` after
    /// 10 starts per 10 minutes per user (all platforms); 503 `bridge_not_configured` /
    /// `bridge_unavailable`; 502 `bridge_error`.
    #[oai(
        path = "/:platform/login/start",
        method = "post",
        operation_id = "bridges_login_start"
    )]
    async fn login_start(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
        body: Json<LoginStartRequest>,
    ) -> Result<Json<LoginStarted>, AppError> {
        let platform = platform_of(&platform)?;
        let body = body.0;
        let update = service::start_login(
            &state,
            auth.user_id(),
            platform,
            &body.flow_id,
            body.login_id.as_deref(),
        )
        .await?;
        Ok(Json(started(update)))
    }

    /// Submit a login step
    ///
    /// Sends the values of a `user_input` or `cookies` step to the bridge. Answers the
    /// next step (`complete` false), or the finished login (`complete` true with
    /// `loginId` and `userInfo`). 400 `bridge_rejected` with the bridge's message when
    /// the bridge refuses the data (wrong code, malformed phone number, wrong step); the
    /// bridge ends the process then, so start again. 400 `login_expired` after the
    /// process's expiry; 404 `login_process_not_found` for an unknown process.
    #[oai(
        path = "/:platform/login/step",
        method = "post",
        operation_id = "bridges_login_step"
    )]
    async fn login_step(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
        body: Json<LoginStepRequest>,
    ) -> Result<Json<LoginProgressObject>, AppError> {
        let platform = platform_of(&platform)?;
        let body = body.0;
        let step_type = match body.step_type {
            SubmitStepType::UserInput => LoginStep::USER_INPUT,
            SubmitStepType::Cookies => LoginStep::COOKIES,
        };
        let update = service::submit_step(
            &state,
            auth.user_id(),
            platform,
            &body.login_process_id,
            &body.step_id,
            step_type,
            &body.data,
        )
        .await?;
        Ok(Json(update.into()))
    }

    /// Wait for a displayed step
    ///
    /// For a `display_and_wait` step (QR code, pairing code): waits up to
    /// `timeoutSeconds` (1–60, default 60) for the bridge to move on. Answers the
    /// finished login (`complete` true), the next step (e.g. a refreshed QR code, or a
    /// 2FA password prompt), or — when nothing happened in time — the current step again
    /// with `complete` false; call again while `timeout.remainingSeconds` > 0. `expired`
    /// is true once the process timed out (at the bridge or locally). The bridge's
    /// long-poll runs in the background, so a client that gives up does not cancel the
    /// login at the bridge. 400 `invalid_step` when `stepId` is not the current
    /// `display_and_wait` step; 404 `login_process_not_found`.
    #[oai(
        path = "/:platform/login/wait",
        method = "post",
        operation_id = "bridges_login_wait"
    )]
    async fn login_wait(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
        body: Json<LoginWaitRequest>,
    ) -> Result<Json<LoginProgressObject>, AppError> {
        let platform = platform_of(&platform)?;
        let body = body.0;
        let wait = match body.timeout_seconds {
            None => WAIT_MAX,
            Some(s) if (1..=WAIT_MAX.as_secs() as i64).contains(&s) => {
                Duration::from_secs(s as u64)
            }
            Some(_) => return Err(AppError::invalid("timeoutSeconds", "must be 1 to 60")),
        };
        let update = service::wait_step(
            &state,
            auth.user_id(),
            platform,
            &body.login_process_id,
            &body.step_id,
            wait,
        )
        .await?;
        Ok(Json(update.into()))
    }

    /// Live login status
    ///
    /// The caller's logins as the bridge reports them now (whoami, through a cache of at
    /// most 10 s), also stored in the local record; state changes are published on
    /// `GET /api/sync` as `bridge.state`. 503 `bridge_not_configured` /
    /// `bridge_unavailable`, 502 `bridge_error`.
    #[oai(
        path = "/:platform/status",
        method = "get",
        operation_id = "bridges_status"
    )]
    async fn status(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<Json<LiveStatus>, AppError> {
        let platform = platform_of(&platform)?;
        let s = service::live_status(&state, auth.user_id(), platform).await?;
        Ok(Json(LiveStatus {
            platform: platform.id().to_owned(),
            connected: s.connected,
            logins: s.logins.into_iter().map(Into::into).collect(),
            checked_at: s.last_checked_at.map(time),
        }))
    }

    /// Log out
    ///
    /// Logs out `loginId` at the bridge, or every login of the caller on the platform
    /// when the body or `loginId` is omitted, and removes the local records. 404
    /// `login_not_found` for a login neither the bridge nor the record knows; 503
    /// `bridge_not_configured` / `bridge_unavailable`; 502 `bridge_error`.
    #[oai(
        path = "/:platform/logout",
        method = "post",
        operation_id = "bridges_logout"
    )]
    async fn logout(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
        body: Json<Option<LogoutRequest>>,
    ) -> Result<Json<MessageResponse>, AppError> {
        let platform = platform_of(&platform)?;
        let login_id = body.0.and_then(|b| b.login_id);
        let removed =
            service::logout(&state, auth.user_id(), platform, login_id.as_deref()).await?;
        Ok(Json(MessageResponse::new(logout_message(
            platform,
            &removed,
            login_id.is_some(),
        ))))
    }

    /// Connect (deprecated)
    ///
    /// Picks a login flow and starts it: the QR flow on WhatsApp, the phone flow on
    /// Telegram, the bridge's first flow otherwise. Answers with a `Deprecation: true`
    /// header. Same errors and rate limit as `login/start`. Use `flows` and `login/start`.
    #[oai(
        path = "/:platform/connect",
        method = "post",
        operation_id = "bridges_connect",
        deprecated
    )]
    async fn connect(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<ConnectResponse, AppError> {
        let platform = platform_of(&platform)?;
        let connected = service::connect(&state, auth.user_id(), platform).await?;
        let update = connected.update;
        let (step, step_id, qr_code) = match update.progress {
            LoginProgress::Step(step) => {
                let qr = step
                    .display()
                    .filter(|(t, _)| *t == "qr")
                    .and_then(|(_, data)| data.map(str::to_owned));
                (Some(step.clone()), step.step_id.clone(), qr)
            }
            _ => (None, String::new(), None),
        };
        Ok(ConnectResponse::Ok(
            Json(ConnectResult {
                method: connected.method.to_owned(),
                flow_id: connected.flow_id,
                qr_code,
                login_process_id: update.process_id,
                step_id,
                step: step.map(Into::into),
                timeout: ConnectTimeout {
                    seconds: update.timeout.remaining_seconds,
                    expires_at: time(update.timeout.expires_at),
                },
            }),
            DEPRECATED.to_owned(),
        ))
    }

    /// Disconnect (deprecated)
    ///
    /// Alias of `logout` without a `loginId`: logs out every login on the platform.
    /// Answers with a `Deprecation: true` header.
    #[oai(
        path = "/:platform/disconnect",
        method = "post",
        operation_id = "bridges_disconnect",
        deprecated
    )]
    async fn disconnect(
        &self,
        state: Data<&AppState>,
        auth: BearerAuth,
        platform: Path<String>,
    ) -> Result<DisconnectResponse, AppError> {
        let platform = platform_of(&platform)?;
        let removed = service::logout(&state, auth.user_id(), platform, None).await?;
        Ok(DisconnectResponse::Ok(
            Json(MessageResponse::new(logout_message(
                platform, &removed, false,
            ))),
            DEPRECATED.to_owned(),
        ))
    }
}

fn started(update: LoginUpdate) -> LoginStarted {
    let timeout = update.timeout.into();
    let step = match update.progress {
        LoginProgress::Step(step) => step.into(),
        LoginProgress::Complete(c) => LoginStepObject {
            step_id: String::new(),
            step_type: LoginStep::COMPLETE.to_owned(),
            instructions: String::new(),
            display_and_wait: None,
            user_input: None,
            cookies: None,
            complete: Some(StepComplete {
                user_login_id: c.login_id,
            }),
        },
        LoginProgress::Expired => LoginStepObject {
            step_id: String::new(),
            step_type: "expired".to_owned(),
            instructions: "the login process expired".to_owned(),
            display_and_wait: None,
            user_input: None,
            cookies: None,
            complete: None,
        },
    };
    LoginStarted {
        login_process_id: update.process_id,
        step,
        timeout,
    }
}
