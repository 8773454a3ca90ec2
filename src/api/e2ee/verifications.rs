//! `/api/e2ee/verifications*`: SAS (emoji) verification of the sync device with the
//! user's other Matrix devices. Native sessions only (personal tokens get 403
//! `forbidden_for_api_token`).

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use crate::api::security::NativeAuth;
use crate::api::ApiTags;
use crate::clients::matrix::e2ee::{Action, VerificationInfo};
use crate::error::AppError;
use crate::services::verifications;
use crate::state::AppState;

/// One emoji of the short authentication string.
#[derive(Debug, Object)]
#[oai(rename = "VerificationEmoji")]
pub struct EmojiView {
    /// The emoji, e.g. 🐶.
    pub symbol: String,
    /// Its English name from the Matrix specification, e.g. "Dog".
    pub description: String,
}

/// A SAS verification between the sync device and another device of the user.
#[derive(Debug, Object)]
#[oai(rename = "Verification", rename_all = "camelCase")]
pub struct VerificationView {
    /// Verification id (the flow's `transaction_id`, chosen by the other device).
    pub id: String,
    /// The user's other Matrix device.
    pub other_device_id: String,
    /// `requested` (the other device asked: accept or cancel), `ready` (accepted; the
    /// other device starts the comparison), `started` (the other device started the
    /// comparison: accept it, or wait for the keys once accepted), `keys_exchanged`
    /// (compare `emoji`: confirm or cancel), `done` or `cancelled`. A device that starts
    /// without a request (the legacy flow of matrix-nio and older clients) begins at
    /// `started`.
    pub state: String,
    /// The seven emoji to compare with the other device's, in order, while the state is
    /// `keys_exchanged`; an empty array in every other state.
    pub emoji: Vec<EmojiView>,
    /// Whether this side confirmed the emoji already (the state stays `keys_exchanged`
    /// until the other device confirms too).
    pub we_confirmed: bool,
    /// Whether the sync device now trusts the other device (true after `done`; a
    /// cancelled verification gives no trust).
    pub other_device_verified: bool,
    /// The Matrix cancel code once `cancelled` (`m.user`, `m.mismatched_sas`,
    /// `m.timeout`, ...), else null.
    pub cancel_code: Option<String>,
}

impl From<VerificationInfo> for VerificationView {
    fn from(v: VerificationInfo) -> Self {
        Self {
            id: v.id,
            other_device_id: v.other_device_id,
            state: v.state.as_str().to_owned(),
            emoji: v
                .emoji
                .into_iter()
                .map(|e| EmojiView {
                    symbol: e.symbol.to_owned(),
                    description: e.description.to_owned(),
                })
                .collect(),
            we_confirmed: v.we_confirmed,
            other_device_verified: v.other_device_verified,
            cancel_code: v.cancel_code,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "VerificationList")]
pub struct VerificationListView {
    /// Oldest first; at most 32 (finished ones drop out first).
    pub verifications: Vec<VerificationView>,
}

pub struct VerificationsApi;

#[OpenApi(prefix_path = "/api/e2ee/verifications", tag = "ApiTags::E2ee")]
impl VerificationsApi {
    /// List device verifications
    ///
    /// SAS (emoji) verifications between Switchboard's sync device and the user's other
    /// Matrix devices (Element, another app), started by those devices over to-device
    /// messages; `verification.updated` on `GET /api/sync` announces a new one and each
    /// change. Only the user's own devices are listed: a verification another user starts
    /// is cancelled. Kept in memory: a restart forgets the list (trust given by a
    /// finished one stays). Empty without a Matrix account.
    #[oai(path = "/", method = "get", operation_id = "e2ee_verifications_list")]
    async fn list(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<VerificationListView>, AppError> {
        let list = verifications::list(&state, auth.user_id()).await?;
        Ok(Json(VerificationListView {
            verifications: list.into_iter().map(Into::into).collect(),
        }))
    }

    /// Accept a verification
    ///
    /// In `requested`: agrees to verify with that device (state `ready`; the emoji
    /// comparison it starts next is accepted without another call). In `started`: accepts
    /// the comparison the other device started (the keys are exchanged next). The answer
    /// is sent before this returns. 404 for an unknown id; 409 `verification_state` in
    /// any other state.
    #[oai(
        path = "/:id/accept",
        method = "post",
        operation_id = "e2ee_verifications_accept"
    )]
    async fn accept(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Verification id.
        id: Path<String>,
    ) -> Result<Json<VerificationView>, AppError> {
        let v = verifications::act(&state, auth.user_id(), &id, Action::Accept).await?;
        Ok(Json(v.into()))
    }

    /// Confirm that the emoji match
    ///
    /// Only after comparing `emoji` with the other device's: the other device is then
    /// trusted (state `done` once it confirmed too; until then `keys_exchanged` with
    /// `weConfirmed`). Its forwarded room keys are accepted from then on. 404 for an
    /// unknown id; 409 `verification_state` unless the state is `keys_exchanged` and not
    /// confirmed yet. When the emoji differ, cancel instead.
    #[oai(
        path = "/:id/confirm",
        method = "post",
        operation_id = "e2ee_verifications_confirm"
    )]
    async fn confirm(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Verification id.
        id: Path<String>,
    ) -> Result<Json<VerificationView>, AppError> {
        let v = verifications::act(&state, auth.user_id(), &id, Action::Confirm).await?;
        Ok(Json(v.into()))
    }

    /// Cancel a verification
    ///
    /// Ends it (`m.user` to the other device); nothing is trusted. 404 for an unknown
    /// id; 409 `verification_state` when it is `done` or `cancelled` already.
    #[oai(
        path = "/:id/cancel",
        method = "post",
        operation_id = "e2ee_verifications_cancel"
    )]
    async fn cancel(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        /// Verification id.
        id: Path<String>,
    ) -> Result<Json<VerificationView>, AppError> {
        let v = verifications::act(&state, auth.user_id(), &id, Action::Cancel).await?;
        Ok(Json(v.into()))
    }
}
