//! `DELETE /api/keys`: crypto-shredding. The user's data key is replaced, what must
//! survive is re-sealed under the new one, and everything else sealed under the old one is
//! deleted in the same transaction; then the WAL is truncated so the old ciphertext is gone
//! from the live files.

use rusqlite::{Connection, TransactionBehavior};

use super::{no_keys, DELETION_CONFIRMATION, DELETION_WINDOW_SECS};
use crate::clock::unix_now;
use crate::crypto::{Aad, DataKey, MasterKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::users::{self, load_row};
use crate::services::{devices, e2ee, e2ee_trust, matrix_sessions, push, Context};
use crate::store::user_keys;
use crate::store::users::UserRow;

/// `DELETE /api/keys`: crypto-shredding in one transaction. Checks, in this order: the
/// confirmation value (400 `confirmation_required`), one deletion per hour (429 with
/// Retry-After, durable across restarts through `users.last_key_deletion_at`), and that keys
/// exist (404). Then deletes the key record, replaces the user's DEK, re-seals e-mail,
/// Matrix access token and push tokens under the new DEK, deletes the content sealed under
/// the old one, marks the user `keys_shredded`, and queues the app's Matrix devices for
/// logout (their tokens were sealed under the old DEK; Switchboard's own sync device
/// stays); after the commit the WAL is truncated.
pub async fn delete(state: &Context, user_id: &str, confirmation: Option<&str>) -> AppResult<()> {
    if confirmation.map(str::trim) != Some(DELETION_CONFIRMATION) {
        return Err(AppError::bad_request(
            ErrorCode::ConfirmationRequired,
            format!("send the header X-Confirm-Key-Deletion: {DELETION_CONFIRMATION} to delete your keys"),
        ));
    }
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let now = unix_now() as i64;
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut user = load_row(&tx, &uid)?;
            check_deletion_allowed(&tx, &user, now)?;
            shred_under_a_fresh_key(&tx, &master, &mut user, now)?;
            let shredded = crate::store::shred::content_of(&tx, &uid)?;
            tx.commit()?;
            tracing::info!(user_id = %uid, ?shredded, "keys deleted; content under the old data key removed");
            truncate_the_wal(c);
            Ok(())
        })
        .await?;
    // The crypto store's key derives from the old data key: unreadable now, and removed.
    e2ee::destroy(state, user_id).await;
    e2ee_trust::forget_backup(state, user_id).await;
    matrix_sessions::log_out_queued(state, user_id).await;
    Ok(())
}

/// Once per hour (429 with Retry-After), and only when there are keys (404).
fn check_deletion_allowed(tx: &Connection, user: &UserRow, now: i64) -> AppResult<()> {
    if let Some(last) = user.last_key_deletion_at {
        let retry = last + DELETION_WINDOW_SECS - now;
        if retry > 0 {
            return Err(AppError::TooManyRequests {
                code: ErrorCode::RateLimited,
                message: format!("keys can be deleted once per hour; retry in {retry} s"),
                retry_after_secs: Some(retry as u64),
            });
        }
    }
    if user_keys::find(tx, &user.id)?.is_none() {
        return Err(no_keys());
    }
    Ok(())
}

/// Replaces the user's data key: what must survive (e-mail, Matrix token, push tokens,
/// the key backup's record) is re-sealed under the fresh key, the key record deleted, the
/// user marked `keys_shredded` and the app's Matrix devices queued for logout (their
/// tokens were sealed under the old key).
fn shred_under_a_fresh_key(
    tx: &Connection,
    master: &MasterKey,
    user: &mut UserRow,
    now: i64,
) -> AppResult<()> {
    let uid = user.id.clone();
    let email = users::email_of(master, user)?;
    let matrix_token = users::matrix_token_of(master, user)?;
    let old = users::data_key(master, user)?;
    let fresh = DataKey::generate();
    // Push tokens are not content: they must survive the shredding.
    devices::reseal_tokens(tx, &uid, &old, &fresh)?;
    push::reseal(tx, &uid, &old, &fresh)?;
    // The key backup must not bring the shredded messages back.
    e2ee_trust::on_key_deletion(tx, &uid, &old, &fresh)?;
    user.dek_wrapped = master.wrap_dek(&fresh, &user.id);
    user.email_enc = fresh.seal_str(&email, &Aad::new("users", "email", &user.id));
    user.matrix_access_token_enc = match matrix_token {
        Some(token) => Some(users::seal_matrix_token(master, user, &token)?),
        None => None,
    };
    user.keys_shredded = true;
    user.last_key_deletion_at = Some(now);
    user.updated_at = now;
    user_keys::delete(tx, &uid)?;
    crate::store::users::update(tx, user)?;
    crate::store::matrix_logouts::queue_user_devices(tx, &uid, now)?;
    Ok(())
}

/// The deleted pages were zeroed in new WAL frames; older frames (and the file's copies
/// before the next checkpoint) still hold the ciphertext until this.
fn truncate_the_wal(c: &Connection) {
    match crate::store::checkpoint_truncate(c) {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            "WAL checkpoint after a key deletion was blocked by a reader for 5 s; \
             the WAL may hold the old ciphertext until its frames are reused or \
             the server stops"
        ),
        Err(e) => tracing::warn!(error = %e, "WAL checkpoint after a key deletion failed"),
    }
}
