//! The one check of a user's X25519 public key, used wherever something is sealed to it
//! (keys, rooms' metadata, messages, search, AI): kept apart from the key routes' service so
//! that those users do not depend on it.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::error::{AppError, AppResult};

/// A registered public key must be standard base64 of exactly 32 bytes.
pub fn validate_public_key(key: &str) -> AppResult<[u8; 32]> {
    let bytes = STANDARD
        .decode(key.trim())
        .map_err(|_| AppError::invalid("publicKey", "must be standard base64"))?;
    bytes
        .try_into()
        .map_err(|_| AppError::invalid("publicKey", "must be a 32-byte X25519 public key"))
}
