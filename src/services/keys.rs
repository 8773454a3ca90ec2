//! The user's X25519 key record and recovery material (`/api/keys`).

use base64::Engine as _;

use crate::error::{AppError, AppResult};
use crate::store::user_keys::UserKeyRow;

/// A registered public key must be standard base64 of exactly 32 bytes.
pub fn validate_public_key(key: &str) -> AppResult<[u8; 32]> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(key.trim())
        .map_err(|_| AppError::invalid("publicKey", "must be standard base64"))?;
    bytes
        .try_into()
        .map_err(|_| AppError::invalid("publicKey", "must be a 32-byte X25519 public key"))
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
