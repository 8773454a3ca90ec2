//! RFC 8291 message encryption for Web Push: the `aes128gcm` content coding of RFC 8188
//! with a single record, keyed by ECDH (P-256) between a fresh key of ours and the
//! subscription's `p256dh` key, mixed with its `auth` secret.
//!
//! The primitives come from well-kept libraries (aws-lc-rs for P-256 ECDH and AES-128-GCM,
//! RustCrypto `hkdf` for HKDF-SHA256); this module only composes them as the RFC says, and
//! its test checks the result byte for byte against the RFC's own example (§5, Appendix A).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey, ECDH_P256};
use hkdf::Hkdf;
use sha2::Sha256;

/// Length of an uncompressed P-256 point (`0x04 || x || y`).
pub const PUBLIC_KEY_LEN: usize = 65;
/// Length of the subscription's authentication secret.
pub const AUTH_SECRET_LEN: usize = 16;
/// The record size announced in the header; the whole payload is one record, so it only
/// has to exceed it (payloads are capped far below).
const RECORD_SIZE: u32 = 4096;
/// Largest plaintext one record holds: the record size minus the padding delimiter and the
/// AEAD tag.
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 1 - 16;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EceError {
    #[error("p256dh is not an uncompressed P-256 public key")]
    BadPublicKey,
    #[error("auth must be 16 bytes")]
    BadAuthSecret,
    #[error("the payload is too large for one record")]
    TooLarge,
    #[error("encryption failed")]
    Crypto,
}

/// Checks a subscription's keys the way [`encrypt`] will use them (a point on the curve,
/// a 16-byte secret), so a bad subscription is refused when it is registered.
pub fn check_keys(p256dh: &[u8], auth: &[u8]) -> Result<(), EceError> {
    if auth.len() != AUTH_SECRET_LEN {
        return Err(EceError::BadAuthSecret);
    }
    if p256dh.len() != PUBLIC_KEY_LEN || p256dh[0] != 0x04 {
        return Err(EceError::BadPublicKey);
    }
    let probe = PrivateKey::generate(&ECDH_P256).map_err(|_| EceError::Crypto)?;
    agreement::agree(
        &probe,
        UnparsedPublicKey::new(&ECDH_P256, p256dh),
        EceError::BadPublicKey,
        |_| Ok(()),
    )
}

/// Encrypts `plaintext` for the subscription keys `p256dh` (the browser's public key) and
/// `auth`, with a fresh key pair and salt: the request body of a push.
pub fn encrypt(plaintext: &[u8], p256dh: &[u8], auth: &[u8]) -> Result<Vec<u8>, EceError> {
    let ours = PrivateKey::generate(&ECDH_P256).map_err(|_| EceError::Crypto)?;
    let salt: [u8; 16] = crate::crypto::random_array();
    encrypt_with(plaintext, p256dh, auth, &ours, &salt)
}

fn hkdf_expand<const N: usize>(salt: &[u8], ikm: &[u8], info: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    Hkdf::<Sha256>::new(Some(salt), ikm)
        .expand(info, &mut out)
        .expect("N ≤ 32 is a valid HKDF-SHA256 output length");
    out
}

/// [`encrypt`] with a given key pair and salt (the RFC's example fixes both).
pub(crate) fn encrypt_with(
    plaintext: &[u8],
    ua_public: &[u8],
    auth: &[u8],
    as_private: &PrivateKey,
    salt: &[u8; 16],
) -> Result<Vec<u8>, EceError> {
    if auth.len() != AUTH_SECRET_LEN {
        return Err(EceError::BadAuthSecret);
    }
    if ua_public.len() != PUBLIC_KEY_LEN {
        return Err(EceError::BadPublicKey);
    }
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(EceError::TooLarge);
    }
    let as_public = as_private
        .compute_public_key()
        .map_err(|_| EceError::Crypto)?;
    let as_public = as_public.as_ref();
    // RFC 8291 §3.4: IKM = HKDF(auth, ECDH secret, "WebPush: info" 0 ua_public as_public, 32).
    let ikm: [u8; 32] = agreement::agree(
        as_private,
        UnparsedPublicKey::new(&ECDH_P256, ua_public),
        EceError::BadPublicKey,
        |ecdh_secret| {
            let info = [b"WebPush: info\0".as_slice(), ua_public, as_public].concat();
            Ok(hkdf_expand(auth, ecdh_secret, &info))
        },
    )?;
    // RFC 8188 §2.2–2.3: the content key and nonce from the salt and IKM.
    let cek: [u8; 16] = hkdf_expand(salt, &ikm, b"Content-Encoding: aes128gcm\0");
    let nonce: [u8; 12] = hkdf_expand(salt, &ikm, b"Content-Encoding: nonce\0");
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| EceError::Crypto)?);
    // One record, the last: the plaintext, then the delimiter 0x02 (no padding).
    let mut record = Vec::with_capacity(plaintext.len() + 1 + 16);
    record.extend_from_slice(plaintext);
    record.push(0x02);
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::empty(),
        &mut record,
    )
    .map_err(|_| EceError::Crypto)?;
    // Header: salt (16) || rs (4, big-endian) || idlen (1) || keyid (our public key).
    let mut body = Vec::with_capacity(16 + 4 + 1 + as_public.len() + record.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(as_public);
    body.extend_from_slice(&record);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    fn d(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// RFC 8291 §5 / Appendix A, every value as the RFC prints it.
    #[test]
    fn matches_the_rfc_8291_example() {
        let as_private = PrivateKey::from_private_key(
            &ECDH_P256,
            &d("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"),
        )
        .unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(as_private.compute_public_key().unwrap().as_ref()),
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        );
        let ua_public = d(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        );
        let salt: [u8; 16] = d("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = encrypt_with(
            b"When I grow up, I want to be a watermelon",
            &ua_public,
            &d("BTBZMqHH6r4Tts7J_aSIgg"),
            &as_private,
            &salt,
        )
        .unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn bad_keys_and_sizes_are_refused() {
        let ua = PrivateKey::generate(&ECDH_P256).unwrap();
        let ua_public = ua.compute_public_key().unwrap().as_ref().to_vec();
        assert_eq!(check_keys(&ua_public, &[0; 16]), Ok(()));
        assert_eq!(
            check_keys(&ua_public, &[0; 15]),
            Err(EceError::BadAuthSecret)
        );
        let mut off_curve = ua_public.clone();
        off_curve[40] ^= 1;
        assert_eq!(
            check_keys(&off_curve, &[0; 16]),
            Err(EceError::BadPublicKey)
        );
        assert_eq!(
            check_keys(&ua_public[..33], &[0; 16]),
            Err(EceError::BadPublicKey)
        );
        assert_eq!(
            encrypt(&vec![0; MAX_PLAINTEXT + 1], &ua_public, &[0; 16]),
            Err(EceError::TooLarge)
        );
        let body = encrypt(&[7; MAX_PLAINTEXT], &ua_public, &[0; 16]).unwrap();
        assert_eq!(body.len(), 86 + MAX_PLAINTEXT + 1 + 16);
    }
}
