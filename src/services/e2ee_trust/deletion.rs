//! `DELETE /api/keys` and the key backup: the backup is forgotten and deleted on the
//! homeserver, so it cannot bring the shredded messages back.

use rusqlite::Connection;

use super::{aad, load, save};
use crate::clients::matrix::e2ee;
use crate::clock::unix_now;
use crate::crypto::DataKey;
use crate::error::AppResult;
use crate::services::{users, Context};
use crate::store::e2ee_trust as trust_store;

/// `DELETE /api/keys`, inside its transaction: the cross-signing keys (not content) are
/// resealed under the new data key; the backup key is forgotten and its version queued
/// for deletion on the homeserver ([`forget_backup`] deletes it right after the commit).
pub fn on_key_deletion(
    c: &Connection,
    user_id: &str,
    old: &DataKey,
    fresh: &DataKey,
) -> AppResult<()> {
    let mut row = trust_store::find(c, user_id)?;
    if let Some(sealed) = &row.cross_signing_enc {
        row.cross_signing_enc = old
            .open_string(sealed, &aad("cross_signing", user_id))
            .ok()
            .map(|json| fresh.seal_str(&json, &aad("cross_signing", user_id)));
    }
    if let Some(version) = row.backup_version.take() {
        row.backup_delete_version = Some(version);
    }
    row.backup_key_enc = None;
    row.recovery_key_shown = false;
    row.updated_at = unix_now() as i64;
    trust_store::save(c, &row)?;
    Ok(())
}

/// Deletes the backup version [`on_key_deletion`] forgot on the homeserver; when that
/// fails, the sync worker retries it before anything else ([`ensure`]).
pub async fn forget_backup(state: &Context, user_id: &str) {
    let Some(matrix) = &state.matrix else { return };
    let Ok(t) = load(state, user_id).await else {
        return;
    };
    let Some(version) = t.row.backup_delete_version.clone() else {
        return;
    };
    let uid = user_id.to_owned();
    let master = state.master.clone();
    let token = state
        .store
        .run(move |c| {
            let user = crate::services::users::load_row(c, &uid)?;
            users::matrix_token_of(&master, &user)
        })
        .await;
    let Ok(Some(token)) = token else { return };
    match e2ee::delete_backup(matrix, &token, &version).await {
        Ok(()) => {
            tracing::info!(%user_id, %version, "key backup deleted with the keys");
            let mut row = t.row;
            row.backup_delete_version = None;
            let _ = save(state, row).await;
        }
        Err(e) => {
            tracing::warn!(%user_id, %version, error = %e, "could not delete the key backup yet; retried by the sync")
        }
    }
}
