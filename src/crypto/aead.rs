//! Shared XChaCha20-Poly1305 framing used for column sealing and DEK wrapping.
//!
//! Format: `version (1 byte) || nonce (24 bytes) || ciphertext+tag`.
//! XChaCha's 192-bit nonce makes random nonces safe for any realistic number
//! of messages per key, so no nonce counter has to be persisted. The version
//! byte lets us change the construction later without guessing.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

use super::{random_array, CryptoError};

/// Current format version byte.
pub(crate) const VERSION: u8 = 1;
/// XChaCha20 nonce length.
pub(crate) const NONCE_LEN: usize = 24;
/// Poly1305 tag length.
pub(crate) const TAG_LEN: usize = 16;
/// Smallest valid sealed blob (empty plaintext).
pub(crate) const MIN_SEALED_LEN: usize = 1 + NONCE_LEN + TAG_LEN;

/// Encrypt `plaintext` under `key`, authenticating `aad`, with a fresh random nonce.
pub(crate) fn seal(key: &[u8; 32], aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let nonce: [u8; NONCE_LEN] = random_array();
    let ct = cipher(key)
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        // Only fails for plaintexts beyond ChaCha20's 256 GiB limit.
        .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory inputs");
    let mut out = Vec::with_capacity(1 + NONCE_LEN + ct.len());
    out.push(VERSION);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    out
}

/// Decrypt a blob produced by [`seal`]. Any failure is reported as [`CryptoError::Decrypt`]
/// except an unknown version or truncated input, which are encoding errors.
pub(crate) fn open(key: &[u8; 32], aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
    if sealed.len() < MIN_SEALED_LEN {
        return Err(CryptoError::InvalidEncoding(format!(
            "sealed value too short ({} bytes, need at least {MIN_SEALED_LEN})",
            sealed.len()
        )));
    }
    if sealed[0] != VERSION {
        return Err(CryptoError::InvalidEncoding(format!(
            "unknown sealed value version {}",
            sealed[0]
        )));
    }
    let nonce: [u8; NONCE_LEN] = sealed[1..1 + NONCE_LEN]
        .try_into()
        .expect("length checked above");
    cipher(key)
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: &sealed[1 + NONCE_LEN..],
                aad,
            },
        )
        .map_err(|_| CryptoError::Decrypt)
}

/// Build a cipher instance for a raw 32-byte key.
pub(crate) fn cipher(key: &[u8; 32]) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(&Key::from(*key))
}
