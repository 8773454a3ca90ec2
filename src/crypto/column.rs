//! Per-user data keys and column-level sealing.
//!
//! Each user's sensitive columns are encrypted with that user's [`DataKey`]
//! (itself stored wrapped by the master key, see
//! [`MasterKey::wrap_dek`](super::MasterKey::wrap_dek)). Deleting the wrapped
//! key crypto-shreds everything of that user, including copies in backups.
//!
//! Every sealed value is bound to its location through [`Aad`], so swapping
//! ciphertexts between rows or columns (e.g. by someone with write access to
//! the database file) is detected at decryption time.

use std::fmt;

use super::{aead, random_array, CryptoError};

/// Domain-separation label at the start of the encoded associated data.
const AAD_LABEL: &[u8] = b"switchboard-col-v1";

/// Location a sealed column value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aad<'a> {
    pub table: &'a str,
    pub column: &'a str,
    pub row_id: &'a str,
}

impl<'a> Aad<'a> {
    pub fn new(table: &'a str, column: &'a str, row_id: &'a str) -> Self {
        Self {
            table,
            column,
            row_id,
        }
    }

    /// Unambiguous byte encoding: the label, then each field prefixed by its
    /// length as a big-endian u32, so no choice of field contents (not even
    /// ones containing NUL) can make two different locations encode equally.
    pub fn encode(&self) -> Vec<u8> {
        let fields = [self.table, self.column, self.row_id];
        let len = AAD_LABEL.len() + fields.iter().map(|f| 4 + f.len()).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(AAD_LABEL);
        for field in fields {
            let n = u32::try_from(field.len()).expect("AAD field longer than 4 GiB");
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(field.as_bytes());
        }
        out
    }
}

/// A user's 32-byte data-encryption key (DEK).
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

impl DataKey {
    /// A fresh random key from the OS RNG.
    pub fn generate() -> Self {
        Self(random_array())
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Encrypt a column value: `0x01 || nonce(24) || ciphertext+tag`.
    pub fn seal(&self, plaintext: &[u8], aad: &Aad<'_>) -> Vec<u8> {
        aead::seal(&self.0, &aad.encode(), plaintext)
    }

    /// Decrypt a value produced by [`DataKey::seal`] for the same location.
    pub fn open(&self, sealed: &[u8], aad: &Aad<'_>) -> Result<Vec<u8>, CryptoError> {
        aead::open(&self.0, &aad.encode(), sealed)
    }

    /// [`DataKey::seal`] for text columns.
    pub fn seal_str(&self, plaintext: &str, aad: &Aad<'_>) -> Vec<u8> {
        self.seal(plaintext.as_bytes(), aad)
    }

    /// A 32-byte subkey for another purpose (HKDF-SHA256 with `label` as info), e.g. the
    /// key of the user's Matrix crypto store: replacing the data key (key deletion) makes
    /// everything under such a subkey unreadable too.
    pub fn derive(&self, label: &str) -> [u8; 32] {
        let hk = hkdf::Hkdf::<sha2::Sha256>::new(None, &self.0);
        let mut out = [0u8; 32];
        hk.expand(label.as_bytes(), &mut out)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        out
    }

    /// [`DataKey::open`] for text columns; non-UTF-8 plaintext is an encoding error.
    pub fn open_string(&self, sealed: &[u8], aad: &Aad<'_>) -> Result<String, CryptoError> {
        String::from_utf8(self.open(sealed, aad)?)
            .map_err(|_| CryptoError::InvalidEncoding("decrypted value is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn derived_subkeys_depend_on_the_key_and_the_label() {
        let (a, b) = (DataKey::from_bytes([1; 32]), DataKey::from_bytes([2; 32]));
        assert_eq!(a.derive("x"), a.derive("x"));
        assert_ne!(a.derive("x"), a.derive("y"));
        assert_ne!(a.derive("x"), b.derive("x"));
        assert_ne!(a.derive("x"), *a.as_bytes());
    }

    use super::*;

    const AAD: Aad<'static> = Aad {
        table: "users",
        column: "email",
        row_id: "42",
    };

    #[test]
    fn column_value_round_trips() {
        let dek = DataKey::generate();
        let sealed = dek.seal(b"alice@example.com", &AAD);
        assert_eq!(sealed[0], 1);
        assert_eq!(sealed.len(), 1 + 24 + 17 + 16);
        assert_eq!(dek.open(&sealed, &AAD).unwrap(), b"alice@example.com");
    }

    #[test]
    fn string_helpers_round_trip_including_empty_strings() {
        let dek = DataKey::generate();
        for s in ["", "héllo ✓"] {
            let sealed = dek.seal_str(s, &AAD);
            assert_eq!(dek.open_string(&sealed, &AAD).unwrap(), s);
        }
    }

    #[test]
    fn sealing_twice_gives_different_ciphertexts() {
        let dek = DataKey::generate();
        assert_ne!(dek.seal(b"x", &AAD), dek.seal(b"x", &AAD));
    }

    #[test]
    fn tampered_ciphertext_is_rejected() {
        let dek = DataKey::generate();
        let sealed = dek.seal(b"secret", &AAD);
        for i in 1..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            assert!(
                matches!(dek.open(&bad, &AAD), Err(CryptoError::Decrypt)),
                "flip at {i}"
            );
        }
        let mut bad_version = sealed.clone();
        bad_version[0] = 2;
        assert!(dek.open(&bad_version, &AAD).is_err());
        assert!(dek.open(&sealed[..sealed.len() - 1], &AAD).is_err());
        assert!(dek.open(&sealed[..10], &AAD).is_err());
        assert!(dek.open(&[], &AAD).is_err());
    }

    #[test]
    fn opening_with_a_different_row_id_or_column_or_table_fails() {
        let dek = DataKey::generate();
        let sealed = dek.seal(b"secret", &AAD);
        for other in [
            Aad::new("users", "email", "43"),
            Aad::new("users", "phone", "42"),
            Aad::new("contacts", "email", "42"),
        ] {
            assert!(matches!(
                dek.open(&sealed, &other),
                Err(CryptoError::Decrypt)
            ));
        }
    }

    #[test]
    fn opening_with_the_wrong_data_key_fails() {
        let sealed = DataKey::generate().seal(b"secret", &AAD);
        assert!(matches!(
            DataKey::generate().open(&sealed, &AAD),
            Err(CryptoError::Decrypt)
        ));
    }

    #[test]
    fn aad_encoding_is_unambiguous_when_fields_shift_characters() {
        let a = Aad::new("ab", "c", "d").encode();
        let b = Aad::new("a", "bc", "d").encode();
        let c = Aad::new("a\0b", "c", "d").encode();
        let d = Aad::new("a", "b\0c", "d").encode();
        assert_ne!(a, b);
        assert_ne!(c, d);
    }

    #[test]
    fn non_utf8_plaintext_is_an_encoding_error_for_open_string() {
        let dek = DataKey::generate();
        let sealed = dek.seal(&[0xff, 0xfe], &AAD);
        assert!(matches!(
            dek.open_string(&sealed, &AAD),
            Err(CryptoError::InvalidEncoding(_))
        ));
    }

    #[test]
    fn data_key_debug_is_redacted() {
        let dek = DataKey::from_bytes([0xab; 32]);
        let s = format!("{dek:?}");
        assert_eq!(s, "DataKey([redacted])");
    }
}
