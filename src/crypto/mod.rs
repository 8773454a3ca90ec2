//! Cryptography for switchboard: key files, at-rest column encryption,
//! sealed envelopes, server identity keys and token helpers.
//!
//! Everything here is a thin composition of audited primitives from the
//! RustCrypto / dalek crates (XChaCha20-Poly1305, HKDF-SHA256, HMAC-SHA256,
//! X25519, Ed25519, Argon2id); no primitive is implemented by hand.
//!
//! Key hierarchy:
//! - `master.key` (32 random bytes, mode 0600) → HKDF-SHA256 subkeys:
//!   a key-encryption key (wraps per-user data keys), a blind-index key and
//!   the JWT HS256 secret. See [`MasterKey`].
//! - Per-user [`DataKey`]s encrypt individual database columns, bound to
//!   `(table, column, row_id)` through associated data ([`Aad`]), so a
//!   ciphertext cannot be moved to another row or column unnoticed.
//! - [`ServerKeys`]: a long-lived X25519 key clients seal envelopes to and an
//!   Ed25519 key that signs attestations of that X25519 key.
//!
//! Randomness always comes from the operating system RNG (`os_rng`),
//! which is fork-safe and needs no seeding.

mod aead;
mod column;
mod envelope;
mod error;
mod keyfile;
mod master;
mod server_keys;
mod tokens;

pub use column::{Aad, DataKey};
pub use envelope::{open_envelope, seal_to, Envelope, Sealer};
pub use error::CryptoError;
pub use master::{normalize_email, MasterKey};
pub use server_keys::{attestation_message, verify_signature, ServerKeys};
pub use tokens::{
    constant_time_eq, generate_code, generate_personal_token, generate_refresh_token, hash_code,
    random_base62, sha256_hex, verify_code,
};

/// The operating-system CSPRNG as an infallible `rand` RNG.
///
/// We use the OS RNG directly (rather than a userspace PRNG) for all key
/// material, nonces and tokens: it is fork-safe and its failure is not
/// recoverable anyway, so panicking on failure is the right behaviour.
pub(crate) fn os_rng() -> rand::rand_core::UnwrapErr<rand::rngs::SysRng> {
    rand::rand_core::UnwrapErr(rand::rngs::SysRng)
}

/// Fill a fixed-size array with OS randomness.
pub(crate) fn random_array<const N: usize>() -> [u8; N] {
    use rand::Rng as _;
    let mut out = [0u8; N];
    os_rng().fill_bytes(&mut out);
    out
}
