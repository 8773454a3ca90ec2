//! The single error type of the crypto module.
//!
//! Messages are written for operators (key-file problems name the path and
//! the fix) while decryption failures deliberately carry no detail, so they
//! cannot serve as an oracle telling an attacker *why* a ciphertext failed.

use std::path::PathBuf;

/// Errors produced by [`crate::crypto`].
#[derive(thiserror::Error, Debug)]
pub enum CryptoError {
    /// Reading or writing a key file failed.
    #[error("I/O error on key file {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A key file is readable or writable by group/other users.
    #[error(
        "refusing to use key file {}: its permissions {mode:04o} allow access by group or others; \
         run `chmod 600 {}` and restart",
        .path.display(),
        .path.display()
    )]
    InsecurePermissions { path: PathBuf, mode: u32 },

    /// A key file exists but does not contain a valid key.
    #[error(
        "key file {} is corrupt: {reason}; restore it from backup (deleting it makes data \
         encrypted under it unreadable)",
        .path.display()
    )]
    CorruptKey { path: PathBuf, reason: String },

    /// Authenticated decryption failed. Intentionally without details.
    #[error("decryption failed: wrong key, wrong associated data or tampered data")]
    Decrypt,

    /// Input was not in the expected format (bad base64, wrong length, bad UTF-8, …).
    #[error("invalid encoding: {0}")]
    InvalidEncoding(String),

    /// A public key was rejected (e.g. a low-order X25519 point that would
    /// yield an all-zero, publicly known shared secret).
    #[error("invalid key: {0}")]
    InvalidKey(String),
}
