//! `/api/bridges/*`: the caller's connections to WhatsApp, Telegram and Discord through
//! the mautrix bridges' provisioning API, and the interactive login flows.
//!
//! Personal API tokens may use the read-only routes `GET /api/bridges`,
//! `/api/bridges/configured`, `/api/bridges/dashboard` and `/api/bridges/chat-counts`;
//! every other route answers them 403 `forbidden_for_api_token`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use serde_json::Value;

use super::security::{NativeAuth, TokenAuth};
use super::views::{time, MessageResponse};
use super::ApiTags;
use crate::clients::provisioning::{LoginStep, Platform};
use crate::error::AppError;
use crate::services::bridges::{
    self as service, LoginInfo, LoginProgress, LoginUpdate, PlatformStatus, ProcessTimeout,
};
use crate::state::AppState;

/// Value of the `Deprecation` header on the deprecated routes.
const DEPRECATED: &str = "true";

mod login;
mod login_objects;
mod objects;
pub use login::BridgeLoginApi;
pub use login_objects::*;
pub use objects::*;

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
    /// `problem` says why); the list itself never fails because of a bridge. A platform
    /// that is not configured carries `setupDocs`: where the documentation explains how an
    /// administrator runs its bridge and configures it (`docs/operations.md#bridges`).
    /// Allowed for personal API tokens.
    #[oai(path = "/", method = "get", operation_id = "bridges_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
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
        _auth: TokenAuth,
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
    /// and `lastCheckedAt`; and `matrixSync`, the health of the user's Matrix sync. Never
    /// fails because of a bridge. Allowed for personal API tokens.
    #[oai(
        path = "/dashboard",
        method = "get",
        operation_id = "bridges_dashboard"
    )]
    async fn dashboard(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
    ) -> Result<Json<BridgeDashboard>, AppError> {
        let statuses = service::all_statuses(&state, auth.user_id()).await?;
        let sync = service::sync_health(&state, auth.user_id()).await?;
        Ok(Json(BridgeDashboard {
            bridges: statuses.into_iter().map(Into::into).collect(),
            matrix_sync: sync.into(),
            generated_at: Utc::now(),
        }))
    }

    /// Conversation counts per platform
    ///
    /// Per platform, the number of visible non-archived conversations (joined or invited):
    /// the same filter as the default room list, so the counts match what `GET /api/rooms`
    /// shows. Plain Matrix rooms (no bridge) are counted under `matrix`, and `total` is
    /// every conversation of the list. Allowed for personal API tokens.
    #[oai(
        path = "/chat-counts",
        method = "get",
        operation_id = "bridges_chat_counts"
    )]
    async fn chat_counts(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
    ) -> Result<Json<ChatCounts>, AppError> {
        let counts = service::chat_counts(&state, auth.user_id()).await?;
        Ok(Json(ChatCounts {
            total: counts.iter().map(|(_, _, n)| n).sum(),
            counts: counts
                .into_iter()
                .map(|(platform, name, count)| ChatCount {
                    platform: platform.to_owned(),
                    name: name.to_owned(),
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
