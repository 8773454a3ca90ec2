//! Sealing a message to an X25519 public key (ECIES-style envelopes).
//!
//! Used for native message envelopes and scheduled-message bodies. The
//! construction is fixed because clients implement it too:
//!
//! ```text
//! shared = X25519(ephemeral_secret, recipient_public)
//! key    = HKDF-SHA256(ikm = shared, salt = none, info = "switchboard-v1")  (32 bytes)
//! ct     = XChaCha20-Poly1305(key, nonce = 24 random bytes, aad = empty, plaintext)
//! ```
//!
//! [`seal_to`] draws a fresh ephemeral key per envelope. A [`Sealer`] draws one
//! ephemeral key for several envelopes to the same recipient (one history page: every
//! envelope still has its own nonce), so the X25519 is paid once; the envelopes then share
//! the key and differ by their random 24-byte nonces, which XChaCha20 makes safe
//! to draw at random (collision odds ~2^-96 per pair). All-zero shared secrets
//! (produced by low-order points) are rejected, since the resulting key would be
//! public.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chacha20poly1305::aead::Aead;
use chacha20poly1305::XNonce;
use hkdf::Hkdf;
use sha2::Sha256;
use x25519_dalek::{EphemeralSecret, PublicKey, SharedSecret, StaticSecret};

use super::{aead, os_rng, random_array, CryptoError};

/// HKDF `info` label of the envelope construction.
pub const ENVELOPE_INFO: &[u8] = b"switchboard-v1";

/// A message sealed to a recipient's X25519 public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub ephemeral_pubkey: [u8; 32],
    pub nonce: [u8; 24],
    /// Ciphertext followed by the 16-byte Poly1305 tag.
    pub ciphertext: Vec<u8>,
}

impl Envelope {
    /// Parse the three standard-base64 (padded) fields of an envelope.
    pub fn from_base64(eph: &str, nonce: &str, ct: &str) -> Result<Self, CryptoError> {
        Ok(Self {
            ephemeral_pubkey: decode_fixed(eph, "ephemeral public key")?,
            nonce: decode_fixed(nonce, "nonce")?,
            ciphertext: decode(ct, "ciphertext")?,
        })
    }

    /// Encode as `(ephemeral_pubkey, nonce, ciphertext)` in standard padded base64.
    pub fn to_base64(&self) -> (String, String, String) {
        (
            STANDARD.encode(self.ephemeral_pubkey),
            STANDARD.encode(self.nonce),
            STANDARD.encode(&self.ciphertext),
        )
    }
}

fn decode(s: &str, what: &str) -> Result<Vec<u8>, CryptoError> {
    STANDARD
        .decode(s.trim())
        .map_err(|e| CryptoError::InvalidEncoding(format!("{what}: invalid base64: {e}")))
}

fn decode_fixed<const N: usize>(s: &str, what: &str) -> Result<[u8; N], CryptoError> {
    let v = decode(s, what)?;
    let len = v.len();
    v.try_into()
        .map_err(|_| CryptoError::InvalidEncoding(format!("{what}: expected {N} bytes, got {len}")))
}

/// Derive the envelope key from a DH output, refusing non-contributory results.
fn envelope_key(shared: &SharedSecret) -> Result<[u8; 32], CryptoError> {
    if !shared.was_contributory() {
        return Err(CryptoError::InvalidKey(
            "X25519 public key is a low-order point (all-zero shared secret)".into(),
        ));
    }
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(None, shared.as_bytes())
        .expand(ENVELOPE_INFO, &mut key)
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    Ok(key)
}

/// Seal `plaintext` so only the holder of the secret for `recipient_public` can open it,
/// with an ephemeral key of its own.
///
/// Fails only if `recipient_public` is a low-order point.
pub fn seal_to(recipient_public: &[u8; 32], plaintext: &[u8]) -> Result<Envelope, CryptoError> {
    Ok(Sealer::to(recipient_public)?.seal(plaintext))
}

/// One ephemeral key and its derived envelope key, for sealing several plaintexts to one
/// recipient: one X25519 for all of them, a fresh random nonce for each. Only the derived
/// key is kept (the ephemeral secret is consumed by the key agreement); it is wiped on drop.
pub struct Sealer {
    ephemeral_pubkey: [u8; 32],
    key: [u8; 32],
}

impl Sealer {
    /// A new ephemeral key agreed with `recipient_public`. Fails only if it is a low-order
    /// point.
    pub fn to(recipient_public: &[u8; 32]) -> Result<Self, CryptoError> {
        let ephemeral = EphemeralSecret::random_from_rng(&mut os_rng());
        let ephemeral_pubkey = PublicKey::from(&ephemeral).to_bytes();
        let shared = ephemeral.diffie_hellman(&PublicKey::from(*recipient_public));
        Ok(Self {
            ephemeral_pubkey,
            key: envelope_key(&shared)?,
        })
    }

    /// The public half of the ephemeral key every envelope of this sealer carries.
    pub fn ephemeral_pubkey(&self) -> [u8; 32] {
        self.ephemeral_pubkey
    }

    /// Seals one plaintext under the shared key with a fresh random nonce.
    pub fn seal(&self, plaintext: &[u8]) -> Envelope {
        let nonce: [u8; 24] = random_array();
        let ciphertext = aead::cipher(&self.key)
            .encrypt(&XNonce::from(nonce), plaintext)
            .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory inputs");
        Envelope {
            ephemeral_pubkey: self.ephemeral_pubkey,
            nonce,
            ciphertext,
        }
    }
}

impl Drop for Sealer {
    fn drop(&mut self) {
        self.key.fill(0);
    }
}

/// Open an envelope with the recipient's static secret.
pub fn open_envelope(
    recipient_secret: &StaticSecret,
    env: &Envelope,
) -> Result<Vec<u8>, CryptoError> {
    let shared = recipient_secret.diffie_hellman(&PublicKey::from(env.ephemeral_pubkey));
    let mut key = envelope_key(&shared)?;
    let plaintext = aead::cipher(&key)
        .decrypt(&XNonce::from(env.nonce), env.ciphertext.as_slice())
        .map_err(|_| CryptoError::Decrypt);
    key.fill(0);
    plaintext
}

#[cfg(test)]
mod tests {
    use super::*;
    use chacha20poly1305::aead::KeyInit;
    use chacha20poly1305::{Key, XChaCha20Poly1305};

    fn recipient() -> (StaticSecret, [u8; 32]) {
        let secret = StaticSecret::from(random_array::<32>());
        let public = PublicKey::from(&secret).to_bytes();
        (secret, public)
    }

    #[test]
    fn envelope_round_trips_through_base64() {
        let (secret, public) = recipient();
        let env = seal_to(&public, b"hello envelope").unwrap();
        let (e, n, c) = env.to_base64();
        assert!(e.ends_with('=') && e.len() == 44);
        assert_eq!(n.len(), 32);
        let parsed = Envelope::from_base64(&e, &n, &c).unwrap();
        assert_eq!(parsed, env);
        assert_eq!(open_envelope(&secret, &parsed).unwrap(), b"hello envelope");
    }

    #[test]
    fn one_sealer_shares_the_ephemeral_key_with_distinct_nonces_and_each_opens() {
        let (secret, public) = recipient();
        let sealer = Sealer::to(&public).unwrap();
        let a = sealer.seal(b"first");
        let b = sealer.seal(b"second");
        assert_eq!(a.ephemeral_pubkey, b.ephemeral_pubkey);
        assert_eq!(a.ephemeral_pubkey, sealer.ephemeral_pubkey());
        assert_ne!(a.nonce, b.nonce);
        assert_eq!(open_envelope(&secret, &a).unwrap(), b"first");
        assert_eq!(open_envelope(&secret, &b).unwrap(), b"second");
        let other = Sealer::to(&public).unwrap();
        assert_ne!(other.ephemeral_pubkey(), sealer.ephemeral_pubkey());
        assert!(Sealer::to(&[0u8; 32]).is_err());
    }

    #[test]
    fn envelope_decrypt_with_the_wrong_secret_fails() {
        let (_, public) = recipient();
        let (other, _) = recipient();
        let env = seal_to(&public, b"hi").unwrap();
        assert!(matches!(
            open_envelope(&other, &env),
            Err(CryptoError::Decrypt)
        ));
    }

    #[test]
    fn tampered_envelope_fails_to_open() {
        let (secret, public) = recipient();
        let env = seal_to(&public, b"hi").unwrap();
        let mut bad = env.clone();
        bad.ciphertext[0] ^= 1;
        assert!(open_envelope(&secret, &bad).is_err());
        let mut bad = env.clone();
        bad.nonce[3] ^= 1;
        assert!(open_envelope(&secret, &bad).is_err());
        let mut bad = env;
        bad.ephemeral_pubkey[5] ^= 1;
        assert!(open_envelope(&secret, &bad).is_err());
    }

    #[test]
    fn envelope_matches_an_independent_computation_of_the_documented_construction() {
        let (secret, public) = recipient();
        let plaintext = b"interop check";

        // Decrypt what seal_to produced by following the spec by hand.
        let env = seal_to(&public, plaintext).unwrap();
        let shared = x25519_dalek::x25519(secret.to_bytes(), env.ephemeral_pubkey);
        let hk = Hkdf::<Sha256>::new(None, &shared);
        let mut key = [0u8; 32];
        hk.expand(b"switchboard-v1", &mut key).unwrap();
        let cipher = XChaCha20Poly1305::new(&Key::from(key));
        let got = cipher
            .decrypt(&XNonce::from(env.nonce), env.ciphertext.as_slice())
            .unwrap();
        assert_eq!(got, plaintext);

        // And the other way round: an envelope built by hand opens.
        let eph_secret = random_array::<32>();
        let eph_public = x25519_dalek::x25519(eph_secret, x25519_dalek::X25519_BASEPOINT_BYTES);
        let shared = x25519_dalek::x25519(eph_secret, public);
        let hk = Hkdf::<Sha256>::new(Some(&[]), &shared);
        let mut key = [0u8; 32];
        hk.expand(b"switchboard-v1", &mut key).unwrap();
        let nonce = [7u8; 24];
        let ciphertext = XChaCha20Poly1305::new(&Key::from(key))
            .encrypt(&XNonce::from(nonce), &plaintext[..])
            .unwrap();
        let env = Envelope {
            ephemeral_pubkey: eph_public,
            nonce,
            ciphertext,
        };
        assert_eq!(open_envelope(&secret, &env).unwrap(), plaintext);
    }

    #[test]
    fn low_order_points_are_rejected() {
        let (secret, _) = recipient();
        // The identity (all zeros) and the point of order 2 (u = 1).
        let mut one = [0u8; 32];
        one[0] = 1;
        for point in [[0u8; 32], one] {
            assert!(matches!(
                seal_to(&point, b"x"),
                Err(CryptoError::InvalidKey(_))
            ));
            let env = Envelope {
                ephemeral_pubkey: point,
                nonce: [0u8; 24],
                ciphertext: vec![0u8; 16],
            };
            assert!(matches!(
                open_envelope(&secret, &env),
                Err(CryptoError::InvalidKey(_))
            ));
        }
    }

    #[test]
    fn malformed_base64_fields_are_rejected() {
        let ok32 = STANDARD.encode([0u8; 32]);
        let ok24 = STANDARD.encode([0u8; 24]);
        let short = STANDARD.encode([0u8; 31]);
        assert!(Envelope::from_base64("not base64!", &ok24, "AA==").is_err());
        assert!(Envelope::from_base64(&short, &ok24, "AA==").is_err());
        assert!(Envelope::from_base64(&ok32, &ok32, "AA==").is_err());
        assert!(Envelope::from_base64(&ok32, &ok24, "AA").is_err());
        assert!(Envelope::from_base64(&ok32, &ok24, "AA==").is_ok());
    }
}
