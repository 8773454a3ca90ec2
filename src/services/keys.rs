//! The user's X25519 key record and recovery material (`/api/keys`).
//!
//! - Versions: the first key of a user is version 1; every rotation adds 1; a key registered
//!   after `DELETE /api/keys` continues after the highest version the user ever had, so a
//!   version never names two different keys of one user.
//! - Recovery material (`encryptedMasterKey`) is opaque to the server; it is stored sealed
//!   under the user's data key (DEK) with a fresh random 16-byte salt each time it is stored.
//! - Deletion crypto-shreds: the key record goes, the user's DEK is replaced by a fresh one
//!   and only the identity columns (e-mail, Matrix access token) and push tokens are
//!   re-sealed under it. Everything else sealed under the old DEK is deleted (or its sealed
//!   column cleared, see [`crate::store::shred`]) in the same transaction, the freed space
//!   is zeroed (`secure_delete`), and the WAL is checkpointed and truncated afterwards, so
//!   the old ciphertext is gone from the live files, not merely unreadable.

use crate::services::users::load_row;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rusqlite::TransactionBehavior;

use super::users;
use crate::clock::unix_now;
use crate::crypto::{self, Aad, MasterKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;
use crate::store::user_keys::{self, UserKeyRow};
use crate::store::users::UserRow;

mod deletion;

pub use super::public_key::validate_public_key;
pub use deletion::delete;

/// The exact value `X-Confirm-Key-Deletion` must carry.
pub const DELETION_CONFIRMATION: &str = "PERMANENTLY_DELETE_ALL_MY_MESSAGES";
/// At most one key deletion per user in this many seconds.
pub const DELETION_WINDOW_SECS: i64 = 3_600;
/// Largest accepted recovery material, decoded.
pub const MAX_RECOVERY_BYTES: usize = 64 * 1024;
/// Bytes of the salt generated with stored recovery material.
pub const SALT_BYTES: usize = 16;

/// Recovery material must be non-empty standard base64 of at most 64 KiB; returns it trimmed.
pub fn validate_encrypted_master_key(value: &str) -> AppResult<String> {
    let trimmed = value.trim();
    let bytes = STANDARD
        .decode(trimmed)
        .map_err(|_| AppError::invalid("encryptedMasterKey", "must be standard base64"))?;
    if bytes.is_empty() {
        return Err(AppError::invalid("encryptedMasterKey", "must not be empty"));
    }
    if bytes.len() > MAX_RECOVERY_BYTES {
        return Err(AppError::invalid(
            "encryptedMasterKey",
            format!("must be at most {MAX_RECOVERY_BYTES} bytes decoded"),
        ));
    }
    Ok(trimmed.to_owned())
}

/// A fresh key row (recovery material already sealed by the caller, if any).
pub fn new_key_row(
    user_id: &str,
    public_key: String,
    encrypted_master_key_enc: Option<Vec<u8>>,
    key_version: i64,
    now: i64,
) -> UserKeyRow {
    UserKeyRow {
        user_id: user_id.to_owned(),
        public_key: public_key.trim().to_owned(),
        encrypted_master_key_enc,
        salt: None,
        key_version,
        created_at: now,
        updated_at: now,
    }
}

fn recovery_aad(user_id: &str) -> Aad<'_> {
    Aad::new("user_keys", "encrypted_master_key", user_id)
}

/// The body of a key registration or rotation, validated before any database work.
struct NewKey {
    public_key: String,
    /// Recovery material (`encryptedMasterKey`), when sent.
    recovery: Option<String>,
}

impl NewKey {
    fn validate(public_key: String, encrypted_master_key: Option<String>) -> AppResult<Self> {
        validate_public_key(&public_key)?;
        let recovery = encrypted_master_key
            .as_deref()
            .map(validate_encrypted_master_key)
            .transpose()?;
        Ok(Self {
            public_key,
            recovery,
        })
    }

    /// Seals the recovery material (if any) into `row` under the user's DEK, with a fresh
    /// salt; without it the row keeps what it has.
    fn seal_recovery_into(
        &self,
        master: &MasterKey,
        user: &UserRow,
        row: &mut UserKeyRow,
    ) -> AppResult<()> {
        if let Some(value) = &self.recovery {
            let dek = users::data_key(master, user)?;
            row.encrypted_master_key_enc = Some(dek.seal_str(value, &recovery_aad(&user.id)));
            row.salt = Some(STANDARD.encode(crypto::random_array::<SALT_BYTES>()));
        }
        Ok(())
    }
}

fn no_keys() -> AppError {
    AppError::NotFound {
        code: ErrorCode::NotFound,
        message: "no encryption keys registered; register them with POST /api/keys/register"
            .to_owned(),
    }
}

/// Which of the two ways to store a key a request takes:
/// - `Register` (`POST /api/keys/register`): the user's first key (or first after a
///   deletion); 400 `keys_already_registered` when a key record exists.
/// - `Rotate` (`PUT /api/keys`): replaces the public key and bumps the version; new
///   recovery material replaces the stored one (with a new salt), without it the stored
///   material stays; 404 when no keys are registered.
///
/// [`KeyChange::store`] returns the key version.
#[derive(Debug, Clone, Copy)]
pub enum KeyChange {
    Register,
    Rotate,
}

impl KeyChange {
    /// Validates the key, then in one IMMEDIATE transaction: [`Self::next_row`] makes the
    /// new key row (from the user and what is stored), the recovery material is sealed into
    /// it and the row is stored. Returns the row's key version.
    pub async fn store(
        self,
        state: &Context,
        user_id: &str,
        public_key: String,
        encrypted_master_key: Option<String>,
    ) -> AppResult<i64> {
        let key = NewKey::validate(public_key, encrypted_master_key)?;
        let master = state.master.clone();
        let uid = user_id.to_owned();
        let now = unix_now() as i64;
        state
            .db(move |c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let mut user = load_row(&tx, &uid)?;
                let mut row = self.next_row(&tx, &mut user, &key, now)?;
                key.seal_recovery_into(&master, &user, &mut row)?;
                user_keys::upsert(&tx, &row)?;
                tx.commit()?;
                Ok(row.key_version)
            })
            .await
    }

    /// The new key row, from the user and what is stored (recovery material not sealed yet).
    /// A registration continues after the highest version the user ever had and clears
    /// `keys_shredded`; a rotation keeps the stored row with the new key and next version.
    fn next_row(
        self,
        tx: &rusqlite::Transaction<'_>,
        user: &mut UserRow,
        key: &NewKey,
        now: i64,
    ) -> AppResult<UserKeyRow> {
        let stored = user_keys::find(tx, &user.id)?;
        let version = user_keys::last_version(tx, &user.id)? + 1;
        match (self, stored) {
            (Self::Register, Some(_)) => Err(AppError::bad_request(
                ErrorCode::KeysAlreadyRegistered,
                "encryption keys are already registered; rotate them with PUT /api/keys",
            )),
            (Self::Register, None) => {
                if user.keys_shredded {
                    user.keys_shredded = false;
                    user.updated_at = now;
                    crate::store::users::update(tx, user)?;
                }
                Ok(new_key_row(
                    &user.id,
                    key.public_key.clone(),
                    None,
                    version,
                    now,
                ))
            }
            (Self::Rotate, None) => Err(no_keys()),
            (Self::Rotate, Some(mut row)) => {
                row.key_version = version;
                row.public_key = key.public_key.trim().to_owned();
                row.updated_at = now;
                Ok(row)
            }
        }
    }
}

/// What `GET /api/keys/info` reports; times are Unix seconds.
#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub has_keys: bool,
    pub has_recovery_key: bool,
    pub key_version: Option<i64>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
}

pub async fn info(state: &Context, user_id: &str) -> AppResult<KeyInfo> {
    let uid = user_id.to_owned();
    let row = state.store.query(move |c| user_keys::find(c, &uid)).await?;
    Ok(match row {
        Some(k) => KeyInfo {
            has_keys: true,
            has_recovery_key: k.encrypted_master_key_enc.is_some(),
            key_version: Some(k.key_version),
            created_at: Some(k.created_at),
            updated_at: Some(k.updated_at),
        },
        None => KeyInfo {
            has_keys: false,
            has_recovery_key: false,
            key_version: None,
            created_at: None,
            updated_at: None,
        },
    })
}

/// `GET /api/keys/public/{target}`: the public key of the user whose id or Matrix user id
/// is `target`; 404 when there is no such user or it has no keys.
pub async fn public_key_of(state: &Context, target: &str) -> AppResult<(String, i64)> {
    let who = target.trim().to_owned();
    if who.is_empty() || who.len() > 255 {
        return Err(AppError::not_found("user key"));
    }
    let row = state
        .store
        .query(move |c| user_keys::find_by_user_or_matrix_id(c, &who))
        .await?
        .ok_or_else(|| AppError::not_found("user key"))?;
    Ok((row.public_key, row.key_version))
}

/// `GET /api/keys/recovery`: the stored recovery material (opened) and its salt; 404 when
/// none is stored.
pub async fn recovery(state: &Context, user_id: &str) -> AppResult<(String, String)> {
    let master = state.master.clone();
    let uid = user_id.to_owned();
    state
        .store
        .run(move |c| {
            let missing = || AppError::not_found("recovery key");
            let row = user_keys::find(c, &uid)?.ok_or_else(missing)?;
            let sealed = row.encrypted_master_key_enc.ok_or_else(missing)?;
            let user = load_row(c, &uid)?;
            let dek = users::data_key(&master, &user)?;
            let value = dek.open_string(&sealed, &recovery_aad(&uid))?;
            Ok((value, row.salt.unwrap_or_default()))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_must_be_32_bytes_of_standard_base64() {
        assert!(validate_public_key(&STANDARD.encode([7u8; 32])).is_ok());
        assert!(validate_public_key(&STANDARD.encode([7u8; 31])).is_err());
        assert!(validate_public_key("not base64!").is_err());
    }

    #[test]
    fn recovery_material_must_be_non_empty_base64_up_to_64_kib() {
        assert_eq!(validate_encrypted_master_key(" QUJD ").unwrap(), "QUJD");
        assert!(validate_encrypted_master_key("").is_err());
        assert!(validate_encrypted_master_key("*").is_err());
        assert!(
            validate_encrypted_master_key(&STANDARD.encode(vec![1u8; MAX_RECOVERY_BYTES])).is_ok()
        );
        assert!(
            validate_encrypted_master_key(&STANDARD.encode(vec![1u8; MAX_RECOVERY_BYTES + 1]))
                .is_err()
        );
    }
}
