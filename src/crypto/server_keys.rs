//! The server's long-lived identity keys.
//!
//! - X25519 (`server_x25519.key`): clients seal envelopes to its public half.
//! - Ed25519 (`server_ed25519.key`, a 32-byte seed): signs attestations of
//!   the X25519 key, so a client that pinned the signing key can detect a
//!   swapped encryption key.
//!
//! Both files live in the data directory and get the same creation,
//! permission and corruption handling as the master key.

use std::fmt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use x25519_dalek::{PublicKey, StaticSecret};

use super::{keyfile, CryptoError};

/// Server identity keys loaded from (or created in) the data directory.
pub struct ServerKeys {
    x25519_secret: StaticSecret,
    x25519_public: PublicKey,
    signing_key: SigningKey,
}

impl fmt::Debug for ServerKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerKeys")
            .field("x25519_public", &self.x25519_public_b64())
            .field("ed25519_public", &self.ed25519_public_b64())
            .field("secrets", &"[redacted]")
            .finish()
    }
}

impl ServerKeys {
    pub const X25519_FILE: &'static str = "server_x25519.key";
    pub const ED25519_FILE: &'static str = "server_ed25519.key";

    /// Load both keys from `data_dir`, creating any that are missing (mode 0600).
    pub fn load_or_create(data_dir: &Path) -> Result<Self, CryptoError> {
        let x = keyfile::load_or_create(&data_dir.join(Self::X25519_FILE))?;
        let seed = keyfile::load_or_create(&data_dir.join(Self::ED25519_FILE))?;
        Ok(Self::from_bytes(x, seed))
    }

    /// Build from raw key bytes (an X25519 secret and an Ed25519 seed).
    pub fn from_bytes(x25519_secret: [u8; 32], ed25519_seed: [u8; 32]) -> Self {
        let x25519_secret = StaticSecret::from(x25519_secret);
        let x25519_public = PublicKey::from(&x25519_secret);
        Self {
            x25519_secret,
            x25519_public,
            signing_key: SigningKey::from_bytes(&ed25519_seed),
        }
    }

    pub fn x25519_secret(&self) -> &StaticSecret {
        &self.x25519_secret
    }

    pub fn x25519_public(&self) -> [u8; 32] {
        self.x25519_public.to_bytes()
    }

    /// X25519 public key, standard padded base64.
    pub fn x25519_public_b64(&self) -> String {
        STANDARD.encode(self.x25519_public.as_bytes())
    }

    pub fn ed25519_public(&self) -> [u8; 32] {
        self.signing_key.verifying_key().to_bytes()
    }

    /// Ed25519 public (verifying) key, standard padded base64.
    pub fn ed25519_public_b64(&self) -> String {
        STANDARD.encode(self.ed25519_public())
    }

    /// Ed25519 signature (64 bytes) over `msg`.
    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        self.signing_key.sign(msg).to_bytes().to_vec()
    }

    /// [`ServerKeys::sign`], standard padded base64.
    pub fn sign_b64(&self, msg: &[u8]) -> String {
        STANDARD.encode(self.sign(msg))
    }
}

/// The exact text signed to attest the server's X25519 key:
/// `"switchboard-attestation-v1\n" + serverPublicKey + "\n" + keyVersion + "\n" + version`.
pub fn attestation_message(server_public_b64: &str, key_version: i64, version: &str) -> String {
    format!("switchboard-attestation-v1\n{server_public_b64}\n{key_version}\n{version}")
}

/// Verify a base64 Ed25519 signature by a base64 public key (strict verification).
/// Any malformed input yields `false`.
pub fn verify_signature(public_b64: &str, msg: &[u8], sig_b64: &str) -> bool {
    let Ok(public) = STANDARD.decode(public_b64.trim()) else {
        return false;
    };
    let Ok(sig) = STANDARD.decode(sig_b64.trim()) else {
        return false;
    };
    let Ok(public) = <[u8; 32]>::try_from(public.as_slice()) else {
        return false;
    };
    let Ok(sig) = <[u8; 64]>::try_from(sig.as_slice()) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&public) else {
        return false;
    };
    key.verify_strict(msg, &Signature::from_bytes(&sig)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{open_envelope, seal_to};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn server_keys_are_created_0600_and_reload_identically() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let a = ServerKeys::load_or_create(&data).unwrap();
        for name in [ServerKeys::X25519_FILE, ServerKeys::ED25519_FILE] {
            let meta = fs::metadata(data.join(name)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
            assert_eq!(meta.len(), 32);
        }
        let b = ServerKeys::load_or_create(&data).unwrap();
        assert_eq!(a.x25519_public_b64(), b.x25519_public_b64());
        assert_eq!(a.ed25519_public_b64(), b.ed25519_public_b64());
        assert_ne!(a.x25519_public(), a.ed25519_public());
    }

    #[test]
    fn insecure_or_corrupt_server_key_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ServerKeys::ED25519_FILE);
        fs::write(&path, [3u8; 32]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        assert!(matches!(
            ServerKeys::load_or_create(dir.path()),
            Err(CryptoError::InsecurePermissions { .. })
        ));
        fs::write(&path, [3u8; 31]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            ServerKeys::load_or_create(dir.path()),
            Err(CryptoError::CorruptKey { .. })
        ));
    }

    #[test]
    fn attestation_message_has_the_exact_documented_format() {
        assert_eq!(
            attestation_message("QUJD", 3, "2.0.0"),
            "switchboard-attestation-v1\nQUJD\n3\n2.0.0"
        );
    }

    #[test]
    fn attestation_signature_verifies_and_fails_after_altering_the_message() {
        let keys = ServerKeys::from_bytes([1u8; 32], [2u8; 32]);
        let msg = attestation_message(&keys.x25519_public_b64(), 1, "2.0.0");
        let sig = keys.sign(msg.as_bytes());
        assert_eq!(sig.len(), 64);
        let sig_b64 = STANDARD.encode(&sig);
        assert_eq!(sig_b64, keys.sign_b64(msg.as_bytes()));
        let public = keys.ed25519_public_b64();
        assert!(verify_signature(&public, msg.as_bytes(), &sig_b64));

        let altered = attestation_message(&keys.x25519_public_b64(), 2, "2.0.0");
        assert!(!verify_signature(&public, altered.as_bytes(), &sig_b64));
        let other = ServerKeys::from_bytes([1u8; 32], [9u8; 32]).ed25519_public_b64();
        assert!(!verify_signature(&other, msg.as_bytes(), &sig_b64));
        assert!(!verify_signature("garbage", msg.as_bytes(), &sig_b64));
        assert!(!verify_signature(&public, msg.as_bytes(), "AAAA"));
    }

    #[test]
    fn envelopes_sealed_to_the_server_public_key_open_with_its_secret() {
        let keys = ServerKeys::from_bytes([5u8; 32], [6u8; 32]);
        let env = seal_to(&keys.x25519_public(), b"to server").unwrap();
        assert_eq!(
            open_envelope(keys.x25519_secret(), &env).unwrap(),
            b"to server"
        );
    }

    #[test]
    fn server_keys_debug_hides_secrets() {
        let keys = ServerKeys::from_bytes([5u8; 32], [6u8; 32]);
        let s = format!("{keys:?}");
        assert!(s.contains("[redacted]"));
        assert!(s.contains(&keys.x25519_public_b64()));
    }
}
