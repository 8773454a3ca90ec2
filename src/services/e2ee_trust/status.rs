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
    let user = state
        .store
        .run(move |c| crate::store::users::find(c, &uid).map_err(AppError::from))
        .await?
        .ok_or_else(|| AppError::not_found("user"))?;
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

/// `POST /api/e2ee/recovery-key`: the recovery key, once (409 `recovery_key_shown` after);
/// `reset` makes a new backup (the old version is deleted) and a new recovery key.
pub async fn recovery_key(state: &Context, user_id: &str, reset: bool) -> AppResult<String> {
    let (matrix, crypto) = machine(state, user_id).await?;
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
