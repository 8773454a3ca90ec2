//! Server attestation (`GET /api/attestation`): the server's X25519 key, signed with its
//! Ed25519 key, so an app that pinned the signing key can detect a swapped encryption key.

use std::sync::Mutex;

use crate::crypto::{attestation_message, ServerKeys};

/// Version of the server's X25519 key. The key is generated once into the data directory
/// and never rotated by the server, so this is 1; it will count up if rotation is added.
pub const SERVER_KEY_VERSION: i64 = 1;

/// Version of this binary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Build commit: packagers set `SWITCHBOARD_COMMIT` in the environment of `cargo build`;
/// `unknown` otherwise.
pub const COMMIT: &str = match option_env!("SWITCHBOARD_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// What `GET /api/attestation` returns; binary values are standard padded base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    pub server_public_key: String,
    pub key_version: i64,
    pub signing_public_key: String,
    /// Ed25519 over [`attestation_message`]`(server_public_key, key_version, version)`.
    pub signature: String,
    pub version: String,
    pub commit: String,
}

/// The attestation for `keys`. Computed once and cached; recomputed only if asked for
/// other keys (which happens in tests, never in one server process).
pub fn attestation(keys: &ServerKeys) -> Attestation {
    static CACHE: Mutex<Option<Attestation>> = Mutex::new(None);
    let server_public_key = keys.x25519_public_b64();
    let signing_public_key = keys.ed25519_public_b64();
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(cached) = cache.as_ref() {
        if cached.server_public_key == server_public_key
            && cached.signing_public_key == signing_public_key
        {
            return cached.clone();
        }
    }
    let message = attestation_message(&server_public_key, SERVER_KEY_VERSION, VERSION);
    let fresh = Attestation {
        signature: keys.sign_b64(message.as_bytes()),
        server_public_key,
        key_version: SERVER_KEY_VERSION,
        signing_public_key,
        version: VERSION.to_owned(),
        commit: COMMIT.to_owned(),
    };
    *cache = Some(fresh.clone());
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::verify_signature;

    #[test]
    fn the_attestation_signature_verifies_over_the_documented_message() {
        let keys = ServerKeys::from_bytes([1u8; 32], [2u8; 32]);
        let a = attestation(&keys);
        assert_eq!(a.server_public_key, keys.x25519_public_b64());
        assert_eq!(a.signing_public_key, keys.ed25519_public_b64());
        assert_eq!(a.key_version, 1);
        assert_eq!(a.version, env!("CARGO_PKG_VERSION"));
        let msg = format!(
            "switchboard-attestation-v1\n{}\n1\n{}",
            a.server_public_key, a.version
        );
        assert!(verify_signature(
            &a.signing_public_key,
            msg.as_bytes(),
            &a.signature
        ));
    }

    #[test]
    fn other_keys_get_their_own_attestation() {
        let a = ServerKeys::from_bytes([3u8; 32], [4u8; 32]);
        let b = ServerKeys::from_bytes([5u8; 32], [6u8; 32]);
        let (first, second, again) = (attestation(&a), attestation(&b), attestation(&a));
        assert_ne!(first.server_public_key, second.server_public_key);
        assert_eq!(first, again);
        assert_eq!(second.server_public_key, b.x25519_public_b64());
    }
}
