//! End-to-end encryption of each user's Switchboard sync device (docs/design.md): one
//! `matrix-sdk-crypto` [`OlmMachine`] per user over a persistent `matrix-sdk-sqlite` crypto
//! store in `<data_dir>/e2ee/<user id>/`, encrypted with a 32-byte key the caller derives
//! from the user's data key (which only `master.key` unwraps).
//!
//! [`E2ee`] keeps one machine per user: two machines over one store would hand out
//! conflicting one-time keys and sessions, so the sync worker and every send path share
//! it. The app sign-ins' own Matrix devices are not E2EE devices here.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use matrix_sdk_crypto::store::{CryptoStore, CryptoStoreError};
use matrix_sdk_crypto::{DecryptionSettings, OlmMachine, TrustRequirement};
use matrix_sdk_sqlite::SqliteCryptoStore;
use ruma::{OwnedDeviceId, OwnedUserId};
use tokio::sync::Mutex;

use super::{MatrixClient, MatrixError};

mod backup;
mod cross_signing;
mod recovery;
mod requests;
mod room;
mod verification;

pub use backup::{backup_exists, delete_backup, latest_backup, TrustState};
pub use cross_signing::{CrossSigning, CrossSigningSeeds};
pub use matrix_sdk_crypto::store::types::BackupDecryptionKey;
pub use matrix_sdk_crypto::EncryptionSettings;
pub use room::{room_encryption, SyncCrypto};
pub use verification::{Action, ActionError, Emoji, State as VerificationState, VerificationInfo};

/// The crypto store's database file (`matrix-sdk-sqlite`'s name for it).
const STORE_FILE: &str = "matrix-sdk-crypto.sqlite3";

#[derive(Debug, thiserror::Error)]
pub enum E2eeError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("crypto store: {0}")]
    Store(String),
    #[error("end-to-end encryption: {0}")]
    Crypto(String),
}

impl E2eeError {
    fn store(e: impl std::fmt::Display) -> Self {
        Self::Store(e.to_string())
    }

    fn crypto(e: impl std::fmt::Display) -> Self {
        Self::Crypto(e.to_string())
    }
}

/// Who a machine belongs to.
pub struct Identity<'a> {
    /// Switchboard user id (a UUID: names the store directory).
    pub user_id: &'a str,
    pub matrix_user_id: &'a str,
    /// The sync device.
    pub device_id: &'a str,
    /// The sync device's access token.
    pub token: &'a str,
    /// Encrypts the crypto store.
    pub store_key: &'a [u8; 32],
}

pub enum Opened {
    Ready(Arc<UserCrypto>),
    /// The store is new, but the homeserver already holds other keys for this device (an
    /// earlier store was destroyed): a device's keys cannot be replaced, so the caller
    /// must log in a new sync device.
    DeviceTaken,
    /// The machine of another sync device is open for the user: the caller's view of the
    /// user (read before a replacement of the sync device finished) is older than it.
    /// Opening the caller's device instead would shred the newer device's store and act
    /// with a token that was logged out; the caller reads the user again.
    Stale,
}

/// One user's machine and the locks its protocol needs.
pub struct UserCrypto {
    pub machine: OlmMachine,
    user_id: String,
    device_id: String,
    token: RwLock<String>,
    /// Serialises [`UserCrypto::process_outgoing`].
    requests_lock: Mutex<()>,
    /// Serialises session claims and room key sharing.
    share_lock: Mutex<()>,
    /// (room, megolm session) whose keys this process asked for already.
    key_requests: std::sync::Mutex<HashSet<(String, String)>>,
    /// SAS verification flows with the user's other devices (`verification.rs`).
    verifications: verification::Flows,
    /// The key counts of the last sync response fed to the machine, while the machine
    /// has nothing to do (see [`UserCrypto::receive_sync`]); `None` when the next
    /// response must be fed whatever it holds.
    at_rest: std::sync::Mutex<Option<room::KeyCounts>>,
    /// Cross-signing and key backup bookkeeping (`backup.rs`).
    trust: TrustState,
}

impl UserCrypto {
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// A machine outside any registry (benchmarks and tests); in the service, machines come
    /// from [`E2ee::open`] only.
    pub fn standalone(machine: OlmMachine, user_id: &str) -> Arc<Self> {
        Arc::new(Self {
            device_id: machine.device_id().to_string(),
            machine,
            user_id: user_id.to_owned(),
            token: RwLock::new(String::new()),
            requests_lock: Mutex::new(()),
            share_lock: Mutex::new(()),
            key_requests: Default::default(),
            verifications: Default::default(),
            at_rest: Default::default(),
            trust: TrustState::default(),
        })
    }

    pub fn token(&self) -> String {
        self.token.read().map(|t| t.clone()).unwrap_or_default()
    }

    fn decryption_settings() -> DecryptionSettings {
        // Unverified senders are read too, as Element does by default.
        DecryptionSettings {
            sender_device_trust_requirement: TrustRequirement::Untrusted,
        }
    }
}

pub struct E2ee {
    dir: PathBuf,
    users: Mutex<HashMap<String, Arc<UserCrypto>>>,
    rotation: Mutex<()>,
}

impl E2ee {
    /// Held while a sync device is being replaced (see `services::e2ee`).
    pub async fn rotation_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.rotation.lock().await
    }

    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("e2ee"),
            users: Mutex::new(HashMap::new()),
            rotation: Mutex::new(()),
        }
    }

    /// The store directory of `user_id` (only UUID characters are accepted).
    pub fn user_dir(&self, user_id: &str) -> Option<PathBuf> {
        let safe = !user_id.is_empty()
            && user_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        safe.then(|| self.dir.join(user_id))
    }

    /// The machine of `id.user_id`, opening (or creating) its store on first use. A store
    /// of another device is destroyed first: its keys belong to a device that is gone.
    /// An open machine of another device of the same account is replaced only with
    /// `replace_other` (the caller read the user after the last replacement finished);
    /// otherwise the answer is [`Opened::Stale`].
    pub async fn open(
        &self,
        matrix: &MatrixClient,
        id: &Identity<'_>,
        replace_other: bool,
    ) -> Result<Opened, E2eeError> {
        let mut users = self.users.lock().await;
        if let Some(c) = users.get(id.user_id) {
            let same_account = c.machine.user_id().as_str() == id.matrix_user_id;
            if c.device_id == id.device_id && same_account {
                if let Ok(mut t) = c.token.write() {
                    id.token.clone_into(&mut t);
                }
                return Ok(Opened::Ready(c.clone()));
            }
            if same_account && !replace_other {
                return Ok(Opened::Stale);
            }
            users.remove(id.user_id);
        }
        let dir = self
            .user_dir(id.user_id)
            .ok_or_else(|| E2eeError::Store("invalid user id".into()))?;
        let user = OwnedUserId::try_from(id.matrix_user_id).map_err(E2eeError::crypto)?;
        let device = OwnedDeviceId::from(id.device_id);
        let (machine, fresh) = match open_machine(&dir, id, &user, &device).await? {
            Some(opened) => opened,
            None => {
                tracing::info!(
                    user_id = id.user_id,
                    "crypto store belongs to an earlier sync device; starting a new one"
                );
                shred_dir(&dir).map_err(E2eeError::store)?;
                open_machine(&dir, id, &user, &device)
                    .await?
                    .ok_or_else(|| E2eeError::Store("new store holds another account".into()))?
            }
        };
        let crypto = Arc::new(UserCrypto {
            machine,
            user_id: id.user_id.to_owned(),
            device_id: id.device_id.to_owned(),
            token: RwLock::new(id.token.to_owned()),
            requests_lock: Mutex::new(()),
            share_lock: Mutex::new(()),
            key_requests: Default::default(),
            verifications: Default::default(),
            at_rest: Default::default(),
            trust: TrustState::default(),
        });
        if fresh && crypto.device_taken(matrix).await? {
            drop(crypto);
            shred_dir(&dir).map_err(E2eeError::store)?;
            return Ok(Opened::DeviceTaken);
        }
        private_files(&dir);
        users.insert(id.user_id.to_owned(), crypto.clone());
        Ok(Opened::Ready(crypto))
    }

    /// Whether `crypto` is still the user's machine (not destroyed or replaced since).
    pub async fn is_current(&self, crypto: &Arc<UserCrypto>) -> bool {
        let users = self.users.lock().await;
        users
            .get(&crypto.user_id)
            .is_some_and(|c| Arc::ptr_eq(c, crypto))
    }

    /// Forgets the user's machine and overwrites and removes its store. Returns whether a
    /// store existed.
    pub async fn destroy(&self, user_id: &str) -> std::io::Result<bool> {
        let mut users = self.users.lock().await;
        users.remove(user_id);
        match self.user_dir(user_id) {
            Some(dir) if dir.exists() => shred_dir(&dir).map(|()| true),
            _ => Ok(false),
        }
    }
}

/// Opens the store and the machine; `None` when the store holds another account. The
/// flag says whether the store was new.
async fn open_machine(
    dir: &Path,
    id: &Identity<'_>,
    user: &OwnedUserId,
    device: &OwnedDeviceId,
) -> Result<Option<(OlmMachine, bool)>, E2eeError> {
    private_store(dir).map_err(E2eeError::store)?;
    let store = SqliteCryptoStore::open_with_key(dir, Some(id.store_key))
        .await
        .map_err(E2eeError::store)?;
    let fresh = store
        .load_account()
        .await
        .map_err(E2eeError::store)?
        .is_none();
    match OlmMachine::with_store(user, device, store, None).await {
        Ok(machine) => Ok(Some((machine, fresh))),
        Err(CryptoStoreError::MismatchedAccount { .. }) => Ok(None),
        Err(e) => Err(E2eeError::store(e)),
    }
}

/// SQLite creates a database's `-wal`, `-shm` and `-journal` files with the database
/// file's own mode, so the store file is created 0600 before SQLite opens it (the umask
/// would apply otherwise), inside directories that are 0700 whatever existed before.
fn private_store(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for d in [dir, dir.parent().unwrap_or(dir)] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join(STORE_FILE))?;
    private_files(dir);
    Ok(())
}

/// Store files readable by the service user only (the directory is 0700 as well).
fn private_files(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Overwrites every file of `dir` with zeros, syncs, and removes the directory. The store
/// is encrypted under a key derived from the user's data key anyway; this keeps even the
/// ciphertext from lingering in the live data directory.
fn shred_dir(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)?.flatten() {
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let zeros = vec![0u8; 64 * 1024];
            let mut left = len;
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                if f.write_all(&zeros[..n]).is_err() {
                    break;
                }
                left -= n as u64;
            }
            let _ = f.sync_all();
        }
    }
    std::fs::remove_dir_all(dir)
}
