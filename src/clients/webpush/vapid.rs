//! RFC 8292 VAPID: the server's P-256 key pair and the `Authorization: vapid t=…, k=…`
//! header, an ES256 JWT `{aud, exp, sub}` signed by jsonwebtoken (aws-lc-rs backend).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

/// A JWT is valid this long (RFC 8292 §2: at most 24 hours).
pub const JWT_LIFETIME_SECS: u64 = 12 * 3600;

/// The server's VAPID key pair.
pub struct VapidKey {
    encoding: EncodingKey,
    public: Vec<u8>,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKey")
            .field("public", &self.public_b64())
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    aud: &'a str,
    exp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub: Option<&'a str>,
}

impl VapidKey {
    /// A new key pair as PKCS#8 DER (what is stored, sealed).
    pub fn generate_pkcs8() -> Result<Vec<u8>, String> {
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map(|doc| doc.as_ref().to_vec())
            .map_err(|_| "cannot generate a P-256 key".to_owned())
    }

    pub fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|e| format!("the stored VAPID key is not a P-256 PKCS#8 key: {e}"))?;
        Ok(Self {
            encoding: EncodingKey::from_ec_der(der),
            public: pair.public_key().as_ref().to_vec(),
        })
    }

    /// The public key as browsers want it for `applicationServerKey`: the uncompressed
    /// point, base64url without padding.
    pub fn public_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.public)
    }

    /// `vapid t=<JWT>, k=<public key>` for a push to `audience` (the endpoint's origin),
    /// valid for [`JWT_LIFETIME_SECS`] from `now` (Unix seconds).
    pub fn authorization(
        &self,
        audience: &str,
        subject: Option<&str>,
        now: u64,
    ) -> Result<String, String> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("JWT".into());
        let claims = Claims {
            aud: audience,
            exp: now + JWT_LIFETIME_SECS,
            sub: subject,
        };
        let jwt = jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|e| format!("cannot sign the VAPID JWT: {e}"))?;
        Ok(format!("vapid t={jwt}, k={}", self.public_b64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    #[test]
    fn the_jwt_verifies_with_the_public_key_and_carries_the_claims() {
        let key = VapidKey::from_pkcs8(&VapidKey::generate_pkcs8().unwrap()).unwrap();
        assert_eq!(key.public.len(), 65);
        assert_eq!(key.public[0], 4);
        let now = crate::clock::unix_now();
        let auth = key
            .authorization("https://push.example", Some("mailto:ops@example.org"), now)
            .unwrap();
        let rest = auth.strip_prefix("vapid t=").unwrap();
        let (jwt, k) = rest.split_once(", k=").unwrap();
        assert_eq!(k, key.public_b64());
        let point = URL_SAFE_NO_PAD.decode(k).unwrap();
        let decoding = DecodingKey::from_ec_components(
            &URL_SAFE_NO_PAD.encode(&point[1..33]),
            &URL_SAFE_NO_PAD.encode(&point[33..]),
        )
        .unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&["https://push.example"]);
        let data = jsonwebtoken::decode::<serde_json::Value>(jwt, &decoding, &v).unwrap();
        assert_eq!(data.claims["sub"], "mailto:ops@example.org");
        let exp = data.claims["exp"].as_u64().unwrap();
        assert!(exp > now && exp <= now + 24 * 3600);
        assert!(VapidKey::from_pkcs8(b"junk").is_err());
    }
}
