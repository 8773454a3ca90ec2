//! Server-side key backup (`m.megolm_backup.v1.curve25519-aes-sha2`) of the sync device's
//! room keys (docs/design.md, E2EE and trust): creating a backup version, uploading
//! room keys as they arrive (from [`UserCrypto::process_outgoing`]), restoring every key
//! into a new crypto store, and fetching single sessions whose key a message lacked.

use std::collections::BTreeSet;

use matrix_sdk_crypto::olm::{BackedUpRoomKey, ExportedRoomKey};
use matrix_sdk_crypto::store::types::BackupDecryptionKey;
use ruma::api::client::backup::{add_backup_keys, EncryptedSessionData};
use ruma::OwnedRoomId;
use serde_json::{json, Value};

use super::{E2eeError, UserCrypto};
use crate::clients::matrix::{encode, MatrixClient, MatrixError};

/// Batches uploaded per [`UserCrypto::upload_backup`] call (each holds up to the crate's
/// batch of room keys); the rest go with the next call.
const UPLOAD_ROUNDS: usize = 20;
/// Sessions fetched one by one per [`UserCrypto::fetch_wanted`] call.
const FETCH_BATCH: usize = 50;

/// Per machine: the megolm sessions a message lacked, to be looked up in the backup.
#[derive(Default)]
pub struct TrustState {
    wanted: std::sync::Mutex<BTreeSet<(String, String)>>,
}

impl TrustState {
    pub fn want(&self, room_id: &str, session_id: &str) {
        if let Ok(mut w) = self.wanted.lock() {
            w.insert((room_id.to_owned(), session_id.to_owned()));
        }
    }

    fn take(&self, n: usize) -> Vec<(String, String)> {
        let Ok(mut w) = self.wanted.lock() else {
            return Vec::new();
        };
        let out: Vec<_> = w.iter().take(n).cloned().collect();
        for k in &out {
            w.remove(k);
        }
        out
    }
}

/// Whether `version` is still a backup version on the homeserver.
pub async fn backup_exists(
    matrix: &MatrixClient,
    token: &str,
    version: &str,
) -> Result<bool, E2eeError> {
    let path = format!("room_keys/version/{}", encode(version));
    match matrix.get_json(token, &path).await {
        Ok(v) => Ok(v["deleted"].as_bool() != Some(true)),
        Err(MatrixError::Http { status: 404, .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The account's current backup version, if any.
pub async fn latest_backup(
    matrix: &MatrixClient,
    token: &str,
) -> Result<Option<String>, E2eeError> {
    match matrix.get_json(token, "room_keys/version").await {
        Ok(v) => Ok(v["version"].as_str().map(str::to_owned)),
        Err(MatrixError::Http { status: 404, .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Deletes a backup version and every key in it (a version already gone counts as done).
pub async fn delete_backup(
    matrix: &MatrixClient,
    token: &str,
    version: &str,
) -> Result<(), E2eeError> {
    let path = format!("room_keys/version/{}", encode(version));
    match matrix
        .call_json(reqwest::Method::DELETE, token, &path, &json!({}))
        .await
    {
        Ok(_) | Err(MatrixError::Http { status: 404, .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl UserCrypto {
    /// Creates a new backup version on the homeserver (its auth data signed by the sync
    /// device and, when held, the master key, so other clients trust it) and activates it.
    pub async fn create_backup(
        &self,
        matrix: &MatrixClient,
    ) -> Result<(BackupDecryptionKey, String), E2eeError> {
        let key = BackupDecryptionKey::new();
        let mut info = key.to_backup_info();
        self.machine
            .backup_machine()
            .sign_backup(&mut info)
            .await
            .map_err(E2eeError::crypto)?;
        let body = serde_json::to_value(&info).map_err(E2eeError::crypto)?;
        let (_, bytes) = matrix
            .call_json(
                reqwest::Method::POST,
                &self.token(),
                "room_keys/version",
                &body,
            )
            .await?;
        let answer: Value = serde_json::from_slice(&bytes).map_err(E2eeError::crypto)?;
        let version = answer["version"]
            .as_str()
            .ok_or_else(|| E2eeError::Crypto("backup version missing".into()))?
            .to_owned();
        // Every key is backed up into the new version.
        self.machine
            .backup_machine()
            .disable_backup()
            .await
            .map_err(E2eeError::store)?;
        self.enable_backup(&key, &version).await?;
        Ok((key, version))
    }

    /// Keeps `key` for `version` in the crypto store and backs room keys up into it.
    pub async fn enable_backup(
        &self,
        key: &BackupDecryptionKey,
        version: &str,
    ) -> Result<(), E2eeError> {
        let backups = self.machine.backup_machine();
        backups
            .save_decryption_key(Some(key.clone()), Some(version.to_owned()))
            .await
            .map_err(E2eeError::store)?;
        let public = key.megolm_v1_public_key();
        public.set_version(version.to_owned());
        backups
            .enable_backup_v1(public)
            .await
            .map_err(E2eeError::store)
    }

    /// Stops backing up and forgets the key in the crypto store.
    pub async fn disable_backup(&self) -> Result<(), E2eeError> {
        let backups = self.machine.backup_machine();
        backups.disable_backup().await.map_err(E2eeError::store)?;
        backups
            .save_decryption_key(None, None)
            .await
            .map_err(E2eeError::store)
    }

    /// The backup key and version the crypto store holds.
    pub async fn stored_backup(&self) -> Result<Option<(BackupDecryptionKey, String)>, E2eeError> {
        let keys = self
            .machine
            .backup_machine()
            .get_backup_keys()
            .await
            .map_err(E2eeError::store)?;
        Ok(keys.decryption_key.zip(keys.backup_version))
    }

    /// (backed up, total) room keys of the active backup.
    pub async fn backup_counts(&self) -> Result<(usize, usize), E2eeError> {
        let c = self
            .machine
            .backup_machine()
            .room_key_counts()
            .await
            .map_err(E2eeError::store)?;
        Ok((c.backed_up, c.total))
    }

    /// Uploads room keys not backed up yet (called from `process_outgoing`, under its
    /// lock). A failure is logged by the caller and retried with the next call.
    pub(super) async fn upload_backup(&self, matrix: &MatrixClient) -> Result<(), E2eeError> {
        let backups = self.machine.backup_machine();
        if !backups.enabled().await {
            return Ok(());
        }
        for _ in 0..UPLOAD_ROUNDS {
            let Some((id, request)) = backups.backup().await.map_err(E2eeError::store)? else {
                return Ok(());
            };
            let path = format!("room_keys/keys?version={}", encode(&request.version));
            let body = json!({ "rooms": request.rooms });
            let resp: add_backup_keys::v3::Response = self
                .call(matrix, reqwest::Method::PUT, &path, &body)
                .await?;
            self.mark_sent(&id, &resp).await?;
        }
        Ok(())
    }

    /// Imports every key of the backup (a new or older crypto store); returns the rooms
    /// that got keys.
    pub async fn restore_backup(&self, matrix: &MatrixClient) -> Result<Vec<String>, E2eeError> {
        let Some((key, version)) = self.stored_backup().await? else {
            return Ok(Vec::new());
        };
        let path = format!("room_keys/keys?version={}", encode(&version));
        let all = matrix.get_json(&self.token(), &path).await?;
        let mut keys = Vec::new();
        if let Some(rooms) = all["rooms"].as_object() {
            for (room, sessions) in rooms {
                if let Some(sessions) = sessions["sessions"].as_object() {
                    for (session, data) in sessions {
                        keys.extend(open_key(&key, room, session, data));
                    }
                }
            }
        }
        self.import_backed_up(keys, &version).await
    }

    /// Looks up the sessions messages lacked (see [`TrustState`]) in the backup; returns
    /// the rooms that got keys.
    pub async fn fetch_wanted(&self, matrix: &MatrixClient) -> Result<Vec<String>, E2eeError> {
        let wanted = self.trust.take(FETCH_BATCH);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let Some((key, version)) = self.stored_backup().await? else {
            return Ok(Vec::new());
        };
        let mut keys = Vec::new();
        for (room, session) in wanted {
            let path = format!(
                "room_keys/keys/{}/{}?version={}",
                encode(&room),
                encode(&session),
                encode(&version)
            );
            match matrix.get_json(&self.token(), &path).await {
                Ok(data) => keys.extend(open_key(&key, &room, &session, &data)),
                Err(MatrixError::Http { status: 404, .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.import_backed_up(keys, &version).await
    }

    async fn import_backed_up(
        &self,
        keys: Vec<ExportedRoomKey>,
        version: &str,
    ) -> Result<Vec<String>, E2eeError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let result = self
            .machine
            .store()
            .import_room_keys(keys, Some(version), |_, _| {})
            .await
            .map_err(E2eeError::store)?;
        tracing::info!(user_id = %self.user_id, imported = result.imported_count, total = result.total_count, "room keys restored from the key backup");
        Ok(result.keys.keys().map(|r| r.to_string()).collect())
    }
}

/// Decrypts one backed-up session (`KeyBackupData`) with the backup key.
fn open_key(
    key: &BackupDecryptionKey,
    room: &str,
    session: &str,
    data: &Value,
) -> Option<ExportedRoomKey> {
    let room_id = OwnedRoomId::try_from(room).ok()?;
    let encrypted: EncryptedSessionData =
        serde_json::from_value(data["session_data"].clone()).ok()?;
    let backed_up: BackedUpRoomKey = key.decrypt_session_data(encrypted).ok()?;
    Some(ExportedRoomKey::from_backed_up_room_key(
        room_id,
        session.to_owned(),
        backed_up,
    ))
}
