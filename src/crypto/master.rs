//! The master key and the subkeys derived from it.
//!
//! The master key itself is never used directly: HKDF-SHA256 with distinct
//! `info` labels derives one independent subkey per purpose, so compromise or
//! misuse of one purpose's key (e.g. the JWT secret, which lives in a
//! different library) says nothing about the others. The raw master key is
//! dropped right after derivation.

use std::fmt;
use std::path::{Path, PathBuf};

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::column::DataKey;
use super::{aead, keyfile, CryptoError};

const INFO_DEK_WRAP: &[u8] = b"switchboard/v1/dek-wrap";
const INFO_BLIND_INDEX: &[u8] = b"switchboard/v1/blind-index";
const INFO_JWT: &[u8] = b"switchboard/v1/jwt";
const INFO_SERVER_SECRETS: &[u8] = b"switchboard/v1/server-secrets";

/// Domain-separation prefix of the associated data of a sealed server secret.
const SECRET_AAD_PREFIX: &[u8] = b"switchboard-server-secret-v1\0";

/// Domain-separation prefix of the associated data of a wrapped DEK.
const DEK_AAD_PREFIX: &[u8] = b"switchboard-dek-v1\0";

/// Subkeys derived from the 32-byte master key file.
#[derive(Clone)]
pub struct MasterKey {
    kek: [u8; 32],
    blind_index_key: [u8; 32],
    jwt_secret: [u8; 32],
    server_secrets_key: [u8; 32],
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}

impl MasterKey {
    /// File name of the master key inside the data directory.
    pub const FILE_NAME: &'static str = "master.key";

    /// Default location: `<data_dir>/master.key`.
    pub fn default_path(data_dir: &Path) -> PathBuf {
        data_dir.join(Self::FILE_NAME)
    }

    /// Load the master key file, creating it (mode 0600) with 32 random bytes if absent.
    ///
    /// Refuses files readable/writable by group or others and files that are
    /// not exactly 32 bytes long.
    pub fn load_or_create(path: &Path) -> Result<Self, CryptoError> {
        Ok(Self::from_bytes(keyfile::load_or_create(path)?))
    }

    /// Load an existing master key file without ever creating one (for
    /// checks such as `switchboard config check`). Same permission and
    /// length checks as [`MasterKey::load_or_create`].
    pub fn load(path: &Path) -> Result<Self, CryptoError> {
        Ok(Self::from_bytes(keyfile::load(path)?))
    }

    /// Derive all subkeys from raw master key bytes (useful for tests and tooling).
    pub fn from_bytes(master: [u8; 32]) -> Self {
        let hk = Hkdf::<Sha256>::new(None, &master);
        let derive = |info: &[u8]| {
            let mut out = [0u8; 32];
            hk.expand(info, &mut out)
                .expect("32 bytes is a valid HKDF-SHA256 output length");
            out
        };
        Self {
            kek: derive(INFO_DEK_WRAP),
            blind_index_key: derive(INFO_BLIND_INDEX),
            jwt_secret: derive(INFO_JWT),
            server_secrets_key: derive(INFO_SERVER_SECRETS),
        }
    }

    /// The HS256 secret for signing access tokens.
    pub fn jwt_secret(&self) -> [u8; 32] {
        self.jwt_secret
    }

    /// Encrypt a user's data key under the key-encryption key.
    ///
    /// The user id is bound as associated data so a wrapped key copied onto
    /// another user's row fails to unwrap instead of exposing that user's data.
    pub fn wrap_dek(&self, dek: &DataKey, user_id: &str) -> Vec<u8> {
        aead::seal(&self.kek, &dek_aad(user_id), dek.as_bytes())
    }

    /// Decrypt a wrapped data key; fails if the blob or the user id do not match.
    pub fn unwrap_dek(&self, wrapped: &[u8], user_id: &str) -> Result<DataKey, CryptoError> {
        let mut raw = aead::open(&self.kek, &dek_aad(user_id), wrapped)?;
        let bytes: Result<[u8; 32], _> = raw.as_slice().try_into();
        raw.fill(0);
        bytes
            .map(DataKey::from_bytes)
            // Cannot happen for blobs we produced; treat as tampering.
            .map_err(|_| CryptoError::Decrypt)
    }

    /// Seals a server-wide secret stored in the database (e.g. the VAPID key pair) under
    /// its own subkey; `name` is bound as associated data, so a blob copied onto another
    /// secret's row does not open.
    pub fn seal_server_secret(&self, name: &str, secret: &[u8]) -> Vec<u8> {
        aead::seal(&self.server_secrets_key, &secret_aad(name), secret)
    }

    /// Opens what [`Self::seal_server_secret`] sealed under the same `name`.
    pub fn open_server_secret(&self, name: &str, sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
        aead::open(&self.server_secrets_key, &secret_aad(name), sealed)
    }

    /// Deterministic keyed hash for equality lookups on encrypted columns.
    ///
    /// HMAC-SHA256 under the blind-index key over `domain || 0x00 || value`.
    /// The domain (a constant such as `"users.email"`) keeps equal values in
    /// different columns from producing linkable indexes. Callers normalise
    /// `value` themselves (see [`normalize_email`]).
    pub fn blind_index(&self, domain: &str, value: &str) -> Vec<u8> {
        debug_assert!(
            !domain.contains('\0'),
            "blind index domains must not contain NUL"
        );
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.blind_index_key)
            .expect("HMAC accepts keys of any length");
        mac.update(domain.as_bytes());
        mac.update(b"\0");
        mac.update(value.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }
}

fn secret_aad(name: &str) -> Vec<u8> {
    [SECRET_AAD_PREFIX, name.as_bytes()].concat()
}

fn dek_aad(user_id: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(DEK_AAD_PREFIX.len() + user_id.len());
    aad.extend_from_slice(DEK_AAD_PREFIX);
    aad.extend_from_slice(user_id.as_bytes());
    aad
}

/// Canonical form of an e-mail address for blind indexing: trimmed and lowercased.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn key() -> MasterKey {
        MasterKey::from_bytes([42u8; 32])
    }

    #[test]
    fn dek_wrap_then_unwrap_returns_the_same_key() {
        let mk = key();
        let dek = DataKey::generate();
        let wrapped = mk.wrap_dek(&dek, "user-1");
        let back = mk.unwrap_dek(&wrapped, "user-1").unwrap();
        assert_eq!(back.as_bytes(), dek.as_bytes());
    }

    #[test]
    fn dek_unwrap_with_another_user_id_fails() {
        let mk = key();
        let wrapped = mk.wrap_dek(&DataKey::generate(), "user-1");
        assert!(matches!(
            mk.unwrap_dek(&wrapped, "user-2"),
            Err(CryptoError::Decrypt)
        ));
    }

    #[test]
    fn dek_unwrap_under_another_master_key_fails() {
        let wrapped = key().wrap_dek(&DataKey::generate(), "u");
        let other = MasterKey::from_bytes([43u8; 32]);
        assert!(other.unwrap_dek(&wrapped, "u").is_err());
    }

    #[test]
    fn master_key_is_created_0600_and_reloads_to_the_same_subkeys() {
        let dir = tempfile::tempdir().unwrap();
        let path = MasterKey::default_path(&dir.path().join("data"));
        let first = MasterKey::load_or_create(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 32);
        let second = MasterKey::load_or_create(&path).unwrap();
        assert_eq!(first.jwt_secret(), second.jwt_secret());
        let wrapped = first.wrap_dek(&DataKey::generate(), "u");
        assert!(second.unwrap_dek(&wrapped, "u").is_ok());
        assert_eq!(
            MasterKey::from_bytes(bytes.try_into().unwrap()).jwt_secret(),
            first.jwt_secret()
        );
    }

    #[test]
    fn load_never_creates_a_missing_master_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        assert!(matches!(
            MasterKey::load(&path),
            Err(CryptoError::Io { .. })
        ));
        assert!(!path.exists());
        let created = MasterKey::load_or_create(&path).unwrap();
        assert_eq!(
            MasterKey::load(&path).unwrap().jwt_secret(),
            created.jwt_secret()
        );
    }

    #[test]
    fn world_readable_master_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        fs::write(&path, [1u8; 32]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = MasterKey::load_or_create(&path).unwrap_err();
        assert!(matches!(err, CryptoError::InsecurePermissions { .. }));
        assert!(err.to_string().contains("chmod 600"));
    }

    #[test]
    fn a_31_byte_master_key_file_is_refused_as_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        fs::write(&path, [1u8; 31]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let err = MasterKey::load_or_create(&path).unwrap_err();
        assert!(matches!(err, CryptoError::CorruptKey { .. }));
        assert!(err.to_string().contains("corrupt"));
    }

    #[test]
    fn subkeys_are_distinct_from_each_other_and_from_the_master_key() {
        let mk = key();
        let keys = [mk.kek, mk.blind_index_key, mk.jwt_secret, [42u8; 32]];
        for i in 0..keys.len() {
            for j in i + 1..keys.len() {
                assert_ne!(keys[i], keys[j]);
            }
        }
    }

    #[test]
    fn jwt_secret_matches_hkdf_sha256_with_the_documented_label() {
        let hk = Hkdf::<Sha256>::new(None, &[42u8; 32]);
        let mut expected = [0u8; 32];
        hk.expand(b"switchboard/v1/jwt", &mut expected).unwrap();
        assert_eq!(key().jwt_secret(), expected);
    }

    #[test]
    fn blind_index_is_deterministic_and_differs_by_domain_value_and_key() {
        let mk = key();
        let a = mk.blind_index("users.email", "alice@example.com");
        assert_eq!(a.len(), 32);
        assert_eq!(a, mk.blind_index("users.email", "alice@example.com"));
        assert_ne!(a, mk.blind_index("contacts.email", "alice@example.com"));
        assert_ne!(a, mk.blind_index("users.email", "bob@example.com"));
        assert_ne!(
            a,
            MasterKey::from_bytes([1u8; 32]).blind_index("users.email", "alice@example.com")
        );
    }

    #[test]
    fn normalize_email_trims_and_lowercases() {
        assert_eq!(
            normalize_email("  Alice@Example.COM \n"),
            "alice@example.com"
        );
    }

    #[test]
    fn debug_output_does_not_reveal_key_material() {
        let s = format!("{:?}", key());
        assert!(s.contains("redacted"));
        assert!(!s.contains("42"));
    }
}
