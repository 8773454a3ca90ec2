//! `GET /api/e2ee/status` and `POST /api/e2ee/recovery-key`: cross-signing, the key
//! backup and the recovery key of the user's sync device (`services::e2ee_trust`).

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use crate::api::security::NativeAuth;
use crate::api::ApiTags;
use crate::error::AppError;
use crate::services::e2ee_trust;
use crate::state::AppState;

/// The account's cross-signing as the homeserver and the sync device see it.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct CrossSigningStatus {
    /// The homeserver has a cross-signing master key for the account.
    pub exists: bool,
    /// The sync device carries a valid signature by the account's self-signing key (itself
    /// signed by the master key): the user's other clients and `cross-signed-tofu` bridges
    /// trust it.
    pub device_signed: bool,
    /// Switchboard made the account's cross-signing (then it keeps the private keys sealed
    /// and signs each new sync device). False for cross-signing made by another client,
    /// which Switchboard leaves alone.
    pub made_by_switchboard: bool,
}

/// The server-side key backup (`m.megolm_backup.v1.curve25519-aes-sha2`).
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct BackupStatus {
    /// Room keys the sync device receives are backed up.
    pub enabled: bool,
    /// The homeserver's backup version in use; null when none.
    #[oai(nullable)]
    pub version: Option<String>,
    /// Room keys in the backup (of `keysTotal` the sync device holds).
    pub keys_backed_up: u64,
    /// Room keys the sync device holds.
    pub keys_total: u64,
}

/// `GET /api/e2ee/status`.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct E2eeStatus {
    /// The sync device's Matrix device id.
    pub device_id: String,
    pub cross_signing: CrossSigningStatus,
    pub backup: BackupStatus,
    /// The recovery key was handed out (`POST /api/e2ee/recovery-key` answers 409 until a
    /// reset).
    pub recovery_key_shown: bool,
    /// The last cross-signing or key backup failure (the homeserver's answer), null when
    /// the last attempt succeeded. Decryption keeps working either way; Switchboard tries
    /// again when the sync restarts.
    #[oai(nullable)]
    pub error: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RecoveryKeyRequest {
    /// Make a new recovery key (and a new key backup, the old one deleted) although the
    /// current one was shown. Default false. A reset needs `recoveryKey` or `code`.
    pub reset: Option<bool>,
    /// With `reset`: the current recovery key (base58 as shown, spaces allowed; or the
    /// passphrase the account's secret storage key was made from). Checked against the
    /// account's secret storage; at most 1024 characters.
    pub recovery_key: Option<String>,
    /// With `reset` (instead of `recoveryKey`): a fresh 6-digit sign-in code mailed to
    /// the user's address by `POST /api/auth/code`. It is used up, and wrong codes count
    /// against the address's failure budget as at sign-in.
    pub code: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct RecoveryKeyResult {
    /// The Matrix recovery key (base58 in groups of four, as Element shows and accepts
    /// it): it unlocks the account's secret storage, which holds the key backup's key and
    /// the cross-signing keys Switchboard made. Shown once; Switchboard does not keep it.
    pub recovery_key: String,
}

pub struct E2eeStatusApi;

#[OpenApi(prefix_path = "/api/e2ee", tag = "ApiTags::E2ee")]
impl E2eeStatusApi {
    /// Trust status of the sync device
    ///
    /// The sync device's id, whether the account has cross-signing and the sync device
    /// is signed by it, and the key backup's state. Asks the homeserver for the account's
    /// keys. Native sessions only (403 `forbidden_for_api_token`). 503
    /// `encryption_unavailable` without a Matrix account; 502 `homeserver_error` / 503
    /// `homeserver_unavailable` when the homeserver fails.
    #[oai(path = "/status", method = "get", operation_id = "e2ee_status")]
    async fn status(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<E2eeStatus>, AppError> {
        let s = e2ee_trust::status(&state, auth.user_id()).await?;
        Ok(Json(E2eeStatus {
            device_id: s.device_id,
            cross_signing: CrossSigningStatus {
                exists: s.cross_signing.exists,
                device_signed: s.cross_signing.device_signed,
                made_by_switchboard: s.cross_signing_ours,
            },
            backup: BackupStatus {
                enabled: s.backup_enabled,
                version: s.backup_version,
                keys_backed_up: s.keys_backed_up as u64,
                keys_total: s.keys_total as u64,
            },
            recovery_key_shown: s.recovery_key_shown,
            error: s.error,
        }))
    }

    /// Get the recovery key (once)
    ///
    /// Sets up the account's secret storage under a new recovery key (the key backup's
    /// key and, when Switchboard made them, the cross-signing keys) and returns it. Only
    /// the first call succeeds: later ones answer 409 `recovery_key_shown`; `{"reset":
    /// true}` makes a new recovery key and a new key backup (the old backup version is
    /// deleted).
    ///
    /// A reset must prove the person, since the new key opens secret storage and the old
    /// backup is deleted: a stolen access token is not enough. Send the current
    /// `recoveryKey` or a fresh sign-in `code` (request one with `POST /api/auth/code`
    /// for the user's own address); without either, or with a wrong one, 403
    /// `reauth_required` and nothing changes. 400 `invalid_request` for a `code` that is
    /// not 6 digits or a `recoveryKey` over 1024 characters; 429 `too_many_attempts` when
    /// the address's wrong-code budget is spent.
    ///
    /// Native sessions only (403 `forbidden_for_api_token`). 503
    /// `encryption_unavailable` without a Matrix account; 502 `homeserver_error` / 503
    /// `homeserver_unavailable` when the homeserver fails (nothing is marked shown then).
    #[oai(
        path = "/recovery-key",
        method = "post",
        operation_id = "e2ee_recovery_key"
    )]
    async fn recovery_key(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<Option<RecoveryKeyRequest>>,
    ) -> Result<Json<RecoveryKeyResult>, AppError> {
        let body = body.0;
        let reset = body.as_ref().and_then(|b| b.reset).unwrap_or(false);
        let proof = e2ee_trust::ResetProof {
            recovery_key: body.as_ref().and_then(|b| b.recovery_key.clone()),
            code: body.and_then(|b| b.code),
        };
        let recovery_key = e2ee_trust::recovery_key(&state, auth.user_id(), reset, proof).await?;
        Ok(Json(RecoveryKeyResult { recovery_key }))
    }
}
