//! `/api/bridges/{platform}/flows` and `/login/*`: the interactive login flows of a
//! bridge (start, submit a step, wait for the bridge), native sessions only.

use std::time::Duration;

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::OpenApi;

use super::{
    platform_of, started, LoginFlow, LoginFlows, LoginProgressObject, LoginStartRequest,
    LoginStarted, LoginStepRequest, LoginWaitRequest, SubmitStepType,
};
use crate::api::security::NativeAuth;
use crate::api::ApiTags;
use crate::clients::provisioning::LoginStep;
use crate::error::AppError;
use crate::services::bridges::{self as service, WAIT_MAX};
use crate::state::AppState;

pub struct BridgeLoginApi;

#[OpenApi(prefix_path = "/api/bridges", tag = "ApiTags::Bridges")]
impl BridgeLoginApi {
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
        auth: NativeAuth,
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
}
