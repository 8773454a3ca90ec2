//! `GET /api/e2ee/status` and `POST /api/e2ee/recovery-key`.

use std::sync::Arc;

use super::{load, save, user_lock};
use crate::clients::matrix::e2ee::{self, CrossSigning, UserCrypto};
use crate::clients::matrix::MatrixClient;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;

/// What `GET /api/e2ee/status` reports.
#[derive(Debug, Clone)]
pub struct Status {
    pub device_id: String,
    pub cross_signing: CrossSigning,
    pub cross_signing_ours: bool,
    pub backup_enabled: bool,
    pub backup_version: Option<String>,
    pub keys_backed_up: usize,
    pub keys_total: usize,
    pub recovery_key_shown: bool,
    pub error: Option<String>,
}

async fn machine(state: &Context, user_id: &str) -> AppResult<(MatrixClient, Arc<UserCrypto>)> {
    let unavailable = || AppError::Unavailable {
        code: ErrorCode::EncryptionUnavailable,
        message: "end-to-end encryption is not available for this account (no Matrix account)"
            .into(),
        retry_after_secs: None,
    };
    let matrix = state.matrix.clone().ok_or_else(unavailable)?;
    let uid = user_id.to_owned();
    let user = crate::services::users::load(state, &uid).await?;
    let crypto = crate::services::e2ee::machine_for(state, &user)
        .await?
        .ok_or_else(unavailable)?;
    Ok((matrix, crypto))
}

pub async fn status(state: &Context, user_id: &str) -> AppResult<Status> {
    let (matrix, crypto) = machine(state, user_id).await?;
    let cross_signing = crypto
        .cross_signing(&matrix)
        .await
        .map_err(crate::services::e2ee::error)?;
    let backups = crypto.machine.backup_machine();
    let (keys_backed_up, keys_total) = crypto
        .backup_counts()
        .await
        .map_err(crate::services::e2ee::error)?;
    let t = load(state, user_id).await?;
    Ok(Status {
        device_id: crypto.device_id().to_owned(),
        cross_signing,
        cross_signing_ours: t.row.cross_signing_ours,
        backup_enabled: backups.enabled().await,
        backup_version: backups.backup_version().await,
        keys_backed_up,
        keys_total,
        recovery_key_shown: t.row.recovery_key_shown,
        error: t.row.last_error,
    })
}

/// What proves the person behind a recovery key reset: a stolen 15-minute access token
/// must not be enough to get a key that opens secret storage and to delete the backup.
#[derive(Debug, Clone, Default)]
pub struct ResetProof {
    /// The current recovery key (or the passphrase it was made from).
    pub recovery_key: Option<String>,
    /// A fresh sign-in code mailed to the user's address (`POST /api/auth/code`).
    pub code: Option<String>,
}

fn reauth(message: &str) -> AppError {
    AppError::forbidden(ErrorCode::ReauthRequired, message)
}

/// Checks a reset's proof: the recovery key against the account's secret storage (its
/// MAC), or the code as a sign-in code of the user's address (consumed; wrong codes count
/// against the address's failure budget like sign-in's). 403 `reauth_required` without a
/// proof or with a wrong one.
async fn prove(
    state: &Context,
    user_id: &str,
    matrix: &MatrixClient,
    crypto: &UserCrypto,
    proof: &ResetProof,
) -> AppResult<()> {
    if let Some(key) = proof
        .recovery_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
    {
        if key.len() > 1024 {
            return Err(AppError::invalid("recoveryKey", "at most 1024 characters"));
        }
        let opens = crypto
            .opens_secret_storage(matrix, key.trim())
            .await
            .map_err(crate::services::e2ee::error)?;
        return if opens {
            Ok(())
        } else {
            Err(reauth(
                "recoveryKey: does not open the account's secret storage",
            ))
        };
    }
    if let Some(code) = proof.code.as_deref() {
        crate::services::codes::validate_code(code)
            .map_err(|_| AppError::invalid("code", "must be exactly 6 digits"))?;
        let user = crate::services::users::load(state, user_id).await?;
        let email = crate::services::users::email_of(&state.master, &user)?;
        return match crate::services::codes::check_code(
            state,
            &email,
            code,
            crate::services::codes::CodePurpose::SignIn,
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.error_code() == ErrorCode::InvalidCode => {
                Err(reauth("code: invalid or expired sign-in code"))
            }
            Err(e) => Err(e),
        };
    }
    Err(reauth(
        "a reset needs the current recovery key (recoveryKey) or a fresh sign-in code (code, after POST /api/auth/code)",
    ))
}

/// `POST /api/e2ee/recovery-key`: the recovery key, once (409 `recovery_key_shown` after);
/// `reset` makes a new backup (the old version is deleted) and a new recovery key, once the
/// person is proven (`proof`, else 403 `reauth_required`).
pub async fn recovery_key(
    state: &Context,
    user_id: &str,
    reset: bool,
    proof: ResetProof,
) -> AppResult<String> {
    let (matrix, crypto) = machine(state, user_id).await?;
    if reset {
        prove(state, user_id, &matrix, &crypto, &proof).await?;
    }
    let _guard = user_lock(user_id).await;
    let mut t = load(state, user_id).await?;
    if t.row.recovery_key_shown && !reset {
        return Err(AppError::Conflict {
            code: ErrorCode::RecoveryKeyShown,
            message: "reset: the recovery key was shown already; send {\"reset\": true} for a new one (and a new key backup)".into(),
        });
    }
    let old_version = t.row.backup_version.clone();
    if reset || t.backup_key.is_none() {
        let (key, version) = crypto
            .create_backup(&matrix)
            .await
            .map_err(crate::services::e2ee::error)?;
        tracing::info!(%user_id, %version, reset, "key backup created for a new recovery key");
        t.set_backup(key, version);
        save(state, t.row.clone()).await?;
        if let Some(old) = old_version.filter(|o| Some(o) != t.row.backup_version.as_ref()) {
            if let Err(e) = e2ee::delete_backup(&matrix, &crypto.token(), &old).await {
                tracing::warn!(%user_id, version = %old, error = %e, "could not delete the replaced key backup");
            }
        }
    }
    let backup_key = t
        .backup_key
        .as_ref()
        .map(|k| k.to_base64())
        .ok_or_else(|| AppError::internal("backup key missing"))?;
    let seeds = if t.row.cross_signing_ours {
        crypto
            .export_cross_signing()
            .await
            .map_err(crate::services::e2ee::error)?
    } else {
        None
    };
    let recovery = crypto
        .new_secret_storage(&matrix, &backup_key, seeds.as_ref())
        .await
        .map_err(crate::services::e2ee::error)?;
    t.row.recovery_key_shown = true;
    save(state, t.row).await?;
    tracing::info!(%user_id, reset, "recovery key handed out");
    Ok(recovery)
}
