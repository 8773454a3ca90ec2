//! The trusted sync device (docs/design.md, E2EE and trust): cross-signing made and
//! kept for the account, the sync device signed, a server-side key backup kept current and
//! restored into a new crypto store, the recovery key handed out once, and the status.
//!
//! Decisions: the private cross-signing keys and the backup key are sealed in `e2ee_trust`
//! under the user's data key (like message content: a key deletion reseals the
//! cross-signing keys, which are not content, and forgets the backup). Cross-signing made
//! elsewhere is left alone; Switchboard resets cross-signing only when it made the existing
//! keys itself (`cross_signing_ours`) and lost their private part. A failure here never
//! stops the sync or decryption: it is logged and shown in `GET /api/e2ee/status`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex, OnceLock};

use super::matrix_sessions::matrix_password;
use super::users;
use crate::clients::matrix::e2ee::{
    self, BackupDecryptionKey, CrossSigning, CrossSigningSeeds, E2eeError, UserCrypto,
};
use crate::clients::matrix::MatrixClient;
use crate::clock::unix_now;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::e2ee_trust::{self as trust_store, TrustRow};

mod deletion;
mod status;

pub use deletion::{forget_backup, on_key_deletion};
pub use status::{recovery_key, status, ResetProof, Status};

const TABLE: &str = "e2ee_trust";

/// One bootstrap, reset or status at a time per user.
async fn user_lock(user_id: &str) -> tokio::sync::OwnedMutexGuard<()> {
    static LOCKS: OnceLock<StdMutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
        OnceLock::new();
    let lock = {
        let mut map = LOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(user_id.to_owned()).or_default().clone()
    };
    lock.lock_owned().await
}

/// The trust row with its sealed columns opened.
struct Opened {
    row: TrustRow,
    dek: DataKey,
    seeds: Option<CrossSigningSeeds>,
    backup_key: Option<BackupDecryptionKey>,
}

fn aad<'a>(column: &'a str, user_id: &'a str) -> Aad<'a> {
    Aad::new(TABLE, column, user_id)
}

impl Opened {
    fn seal_seeds(&mut self, seeds: &CrossSigningSeeds) {
        let json = serde_json::to_string(seeds).unwrap_or_default();
        self.row.cross_signing_enc = Some(
            self.dek
                .seal_str(&json, &aad("cross_signing", &self.row.user_id)),
        );
        self.seeds = Some(seeds.clone());
    }

    fn set_backup(&mut self, key: BackupDecryptionKey, version: String) {
        self.row.backup_key_enc = Some(
            self.dek
                .seal_str(&key.to_base64(), &aad("backup_key", &self.row.user_id)),
        );
        self.row.backup_version = Some(version);
        self.backup_key = Some(key);
    }
}

async fn load(state: &Context, user_id: &str) -> AppResult<Opened> {
    let master = state.master.clone();
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| {
            let user = crate::services::users::load_row(c, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let row = trust_store::find(c, &uid)?;
            let seeds = row
                .cross_signing_enc
                .as_ref()
                .and_then(|s| dek.open_string(s, &aad("cross_signing", &uid)).ok())
                .and_then(|j| serde_json::from_str(&j).ok());
            let backup_key = row
                .backup_key_enc
                .as_ref()
                .and_then(|s| dek.open_string(s, &aad("backup_key", &uid)).ok())
                .and_then(|b| BackupDecryptionKey::from_base64(&b).ok());
            Ok::<_, AppError>(Opened {
                row,
                dek,
                seeds,
                backup_key,
            })
        })
        .await
}

async fn save(state: &Context, row: TrustRow) -> AppResult<()> {
    state
        .store
        .run(move |c| {
            let mut row = row;
            row.updated_at = unix_now() as i64;
            trust_store::save(c, &row).map_err(AppError::from)
        })
        .await
}

async fn record_error(state: &Context, user_id: &str, error: Option<String>) {
    let uid = user_id.to_owned();
    let now = unix_now() as i64;
    let _ = state
        .store
        .run(move |c| {
            trust_store::set_error(c, &uid, error.as_deref(), now).map_err(AppError::from)
        })
        .await;
}

/// Brings the account's cross-signing, the sync device's signature and the key backup up
/// to date for `crypto` (run when the sync worker opens the machine). Returns the rooms
/// whose keys were restored from the backup. Never fails: a failure is logged and kept
/// for the status.
pub async fn ensure(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    crypto: &UserCrypto,
) -> Vec<String> {
    let _guard = user_lock(user_id).await;
    match ensure_inner(state, matrix, user_id, crypto).await {
        Ok(rooms) => {
            record_error(state, user_id, None).await;
            rooms
        }
        Err(e) => {
            tracing::warn!(%user_id, error = %e, "cross-signing or key backup failed; decryption is unaffected");
            record_error(state, user_id, Some(e.to_string())).await;
            Vec::new()
        }
    }
}

async fn ensure_inner(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    crypto: &UserCrypto,
) -> Result<Vec<String>, Failure> {
    let mut t = load(state, user_id).await?;
    if let Some(version) = t.row.backup_delete_version.clone() {
        e2ee::delete_backup(matrix, &crypto.token(), &version).await?;
        tracing::info!(%user_id, %version, "forgotten key backup deleted on the homeserver");
        t.row.backup_delete_version = None;
        save(state, t.row.clone()).await?;
    }
    // Independent: a refused cross-signing still leaves the backup (and restoring from
    // it) working, and the other way round.
    let signed = cross_sign(state, matrix, user_id, crypto, &mut t).await;
    save(state, t.row.clone()).await?;
    let rooms = backup(matrix, user_id, crypto, &mut t).await;
    save(state, t.row.clone()).await?;
    match (signed, rooms) {
        (Ok(()), Ok(rooms)) => Ok(rooms),
        (Err(e), Ok(_)) => Err(Failure(format!("cross-signing: {e}"))),
        (Ok(()), Err(e)) => Err(Failure(format!("key backup: {e}"))),
        (Err(a), Err(b)) => Err(Failure(format!("cross-signing: {a}; key backup: {b}"))),
    }
}

/// Bootstraps, imports or leaves cross-signing alone, then signs the sync device.
async fn cross_sign(
    state: &Context,
    matrix: &MatrixClient,
    user_id: &str,
    crypto: &UserCrypto,
    t: &mut Opened,
) -> Result<(), Failure> {
    // Device keys go up first: signatures and the key query need them.
    crypto.process_outgoing(matrix).await?;
    let cs = crypto.cross_signing(matrix).await?;
    match (cs.exists, cs.private_keys, t.seeds.clone()) {
        (true, true, _) => {}
        (true, false, Some(seeds)) => {
            if let Err(e) = crypto.import_cross_signing(&seeds).await {
                // The account's keys are not the ones Switchboard made: replaced by
                // another client, whose cross-signing is left alone from now on.
                tracing::info!(%user_id, error = %e, "the account's cross-signing was replaced elsewhere; left alone");
                t.row.cross_signing_enc = None;
                t.row.cross_signing_ours = false;
                t.seeds = None;
                return Ok(());
            }
        }
        (true, false, None) if !t.row.cross_signing_ours => {
            tracing::info!(%user_id, "the account's cross-signing was made elsewhere; left alone");
            return Ok(());
        }
        // None on the homeserver (new, or an earlier upload was refused: the keys in the
        // store go up), or Switchboard's own keys whose private part is lost: reset.
        (exists, _, _) => {
            let password = matrix_password(&state.master, user_id);
            crypto
                .bootstrap_cross_signing(matrix, &password, exists)
                .await?;
            t.row.cross_signing_ours = true;
            tracing::info!(%user_id, reset = exists, "cross-signing bootstrapped for the account");
        }
    }
    if let Some(seeds) = crypto.export_cross_signing().await? {
        if t.row.cross_signing_ours || t.seeds.is_some() {
            t.seal_seeds(&seeds);
        }
    }
    let cs: CrossSigning = crypto.cross_signing(matrix).await?;
    if cs.private_keys && !cs.device_signed {
        crypto.sign_own_device(matrix).await?;
        tracing::info!(%user_id, device_id = crypto.device_id(), "sync device signed with the self-signing key");
    }
    Ok(())
}

/// Enables the kept backup (restoring it into a store that lacks it), or creates one when
/// the account has none.
async fn backup(
    matrix: &MatrixClient,
    user_id: &str,
    crypto: &UserCrypto,
    t: &mut Opened,
) -> Result<Vec<String>, Failure> {
    let token = crypto.token();
    if let (Some(version), Some(key)) = (t.row.backup_version.clone(), t.backup_key.clone()) {
        if e2ee::backup_exists(matrix, &token, &version).await? {
            let stored = crypto.stored_backup().await?;
            let fresh = stored.is_none_or(|(_, v)| v != version);
            crypto.enable_backup(&key, &version).await?;
            if fresh {
                let rooms = crypto.restore_backup(matrix).await?;
                tracing::info!(%user_id, %version, rooms = rooms.len(), "crypto store restored from the key backup");
                return Ok(rooms);
            }
            return Ok(Vec::new());
        }
        tracing::warn!(%user_id, %version, "the key backup is gone from the homeserver; making a new one");
    } else if let Some(other) = e2ee::latest_backup(matrix, &token).await? {
        return Err(Failure(format!(
            "the account has a key backup (version {other}) made by another client; Switchboard does not back up into it"
        )));
    }
    let (key, version) = crypto.create_backup(matrix).await?;
    tracing::info!(%user_id, %version, "key backup created");
    t.set_backup(key, version);
    Ok(Vec::new())
}

/// Fetches from the backup the keys messages lacked; returns the rooms that got keys.
pub async fn fetch_wanted(
    matrix: &MatrixClient,
    user_id: &str,
    crypto: &UserCrypto,
) -> Vec<String> {
    match crypto.fetch_wanted(matrix).await {
        Ok(rooms) => rooms,
        Err(e) => {
            tracing::warn!(%user_id, error = %e, "fetching room keys from the key backup failed");
            Vec::new()
        }
    }
}

/// A failure of [`ensure`], as the status shows it (no secrets: homeserver answers and
/// store errors only).
#[derive(Debug)]
pub struct Failure(String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<E2eeError> for Failure {
    fn from(e: E2eeError) -> Self {
        Self(e.to_string())
    }
}

impl From<AppError> for Failure {
    fn from(e: AppError) -> Self {
        Self(e.to_string())
    }
}
